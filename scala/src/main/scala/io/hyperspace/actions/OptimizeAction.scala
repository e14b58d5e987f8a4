package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.HyperspaceException
import io.hyperspace.actions.MaintenanceModes.Quick
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.log.{ContentFile, IndexLogManager, LogEntry, States}

/**
 * Compacts an ACTIVE index's data files within each bucket into a new data version (the
 * untouched files stay where they are; the replaced ones stay until vacuum, so readers of the
 * previous version are not disturbed). `quick` merges, per bucket, the files smaller than
 * `spark.hyperspace.index.optimize.fileSizeThreshold` when there are at least two; `full`
 * leaves one file per bucket. Rows, and so query results, never change.
 */
class OptimizeAction(
    spark: SparkSession,
    indexLog: IndexLogManager,
    indexName: String,
    val mode: String) extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.OPTIMIZE
  override protected def transientState: String = States.OPTIMIZING
  override protected def finalState: String = States.ACTIVE
  override protected def alreadyDone(base: Option[LogEntry]): Boolean = false

  private var selected: Seq[ContentFile] = Nil

  /** The files the run merges (empty when there was nothing to do). */
  def merged: Seq[ContentFile] = selected

  override protected def validate(base: Option[LogEntry]): Unit = {
    Action.requireState(indexName, operation, base, Set(States.ACTIVE),
      if (base.exists(_.state == States.DELETED)) s"Restore it first with restoreIndex('$indexName')." else "")
    val entry = base.get
    if (entry.index.kind != CoveringIndex.Kind) {
      throw new HyperspaceException(
        s"Cannot optimize index '$indexName': optimize does not support indexes of kind ${entry.index.kind}.")
    }
    val threshold = HyperspaceConf.optimizeFileSizeThreshold(spark)
    selected = entry.content.files.groupBy(CoveringIndex.bucketOf).toSeq.flatMap {
      case (None, _) => Nil // not a bucket file: leave it alone
      case (Some(_), files) =>
        val candidates = if (mode == Quick) files.filter(_.size < threshold) else files
        if (candidates.size >= 2) candidates else Nil
    }.sortBy(_.path)
  }

  override protected def upToDate(base: Option[LogEntry]): Boolean = selected.isEmpty

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry = {
    val entry = base.get
    entry.copy(id = id, content = entry.content.copy(dataVersion = DataVersions.next(spark, indexLog)))
  }

  override protected def op(begin: LogEntry): LogEntry = {
    val dataPath = new Path(begin.content.dataPath)
    CoveringIndex.rewrite(spark, begin, selected, dataPath, dropIds = Set.empty, oneFilePerBucket = true)
    val replaced = selected.map(_.path).toSet
    begin.copy(content = begin.content.copy(files =
      (begin.content.files.filterNot(f => replaced.contains(f.path)) ++
        CoveringIndex.listDataFiles(spark, dataPath)).sortBy(_.path)))
  }

  override protected def cleanup(begin: LogEntry): Unit =
    DataVersions.delete(spark, new Path(begin.content.dataPath))
}
