package io.hyperspace.actions

import org.apache.spark.sql.SparkSession

/**
 * Names the Spark jobs an index operation runs — "Hyperspace: create index 'x' — writing index
 * data" — so that the Spark UI, the status tracker and the Python progress bar say what a minute
 * of stages is for.
 *
 * Spark takes a job's description and its stages' names from properties local to the thread
 * that submits the job; they are set for the duration of `body` and the caller's own values put
 * back afterwards, so a notebook's job description survives a `create_index`.
 */
object JobLabels {

  /** The local property the Spark UI shows as a job's description (SparkContext.setJobDescription). */
  val DescriptionProperty = "spark.job.description"

  /** The local property stage names come from (SparkContext.setCallSite). */
  val StageNameProperty = "callSite.short"

  /** The label of `operation` (a log operation name, e.g. CREATE) on index `indexName`. */
  def of(operation: String, indexName: String): String =
    s"Hyperspace: ${operation.toLowerCase} index '$indexName'"

  /** `label` refined by the step of the operation under way. */
  def step(label: String, step: String): String = s"$label — $step"

  /** Runs `body` with the jobs it submits (from this thread) labelled `label`. */
  def during[T](spark: SparkSession, label: String)(body: => T): T = {
    val sc = spark.sparkContext
    val keys = Seq(DescriptionProperty, StageNameProperty)
    val previous = keys.map(k => k -> Option(sc.getLocalProperty(k)))
    keys.foreach(sc.setLocalProperty(_, label))
    try body
    finally previous.foreach { case (k, v) => sc.setLocalProperty(k, v.orNull) }
  }
}
