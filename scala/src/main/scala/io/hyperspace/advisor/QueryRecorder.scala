package io.hyperspace.advisor

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Command, LogicalPlan}
import org.apache.spark.sql.execution.QueryExecution
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.util.QueryExecutionListener

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf

/**
 * One recorded query: a label (its SQL text when Spark kept it, else `recorded query <n>` and
 * the sources it reads), how many times the session ran it, and its analyzed plan.
 */
final case class RecordedQuery(label: String, frequency: Long)(val plan: LogicalPlan)

object RecordedQuery {

  /** `queries` as a JSON array of `{"query": label, "frequency": n}`. */
  def toJson(queries: Seq[RecordedQuery]): String = {
    val mapper = new com.fasterxml.jackson.databind.ObjectMapper()
    val array = mapper.createArrayNode()
    queries.foreach { q =>
      val o = array.addObject()
      o.put("query", q.label)
      o.put("frequency", q.frequency)
    }
    mapper.writeValueAsString(array)
  }
}

/**
 * The queries one session ran, for the advisor when no workload is given. A query execution
 * listener registered on that session's listener manager: the recorded queries live in this
 * instance, so each session has its own and nothing is shared between sessions.
 *
 * Spark copies a session's listeners into its copies (`cloneSession`, in which explain, whyNot
 * and the advisor plan privately); events of a copy reach this instance too and are ignored, as
 * only queries whose execution belongs to `owner` are recorded.
 *
 * Repeats count as weight: queries with the same canonical analyzed plan (Spark's own
 * normalization: expression ids and aliases, not literals) are one entry whose frequency grows.
 * At most `spark.hyperspace.advisor.maxRecordedQueries` entries are kept, the least recently
 * run dropped first.
 */
final class QueryRecorder private (private val owner: SparkSession) extends QueryExecutionListener with Logging {

  // The plan of the most recent run: its file listing is the freshest this session has seen.
  private final class Entry(var plan: LogicalPlan, val label: String) {
    var count: Long = 0
  }

  // In access order, so the eldest is the least recently run; guarded by `this` (events arrive on
  // Spark's listener thread, reads on the caller's).
  private val entries = new java.util.LinkedHashMap[LogicalPlan, Entry](16, 0.75f, true)
  private var numbered = 0L

  override def onSuccess(funcName: String, qe: QueryExecution, durationNs: Long): Unit =
    if (qe.sparkSession eq owner) {
      // Recording must never disturb the session: a failure here loses one record, nothing else.
      try record(qe.analyzed)
      catch { case NonFatal(e) => logWarning(s"Hyperspace did not record a query for the advisor: $e") }
    }

  // A failed query is not recorded: the advisor would plan a query that does not run.
  override def onFailure(funcName: String, qe: QueryExecution, exception: Exception): Unit = ()

  private[advisor] def record(plan: LogicalPlan): Unit =
    if (HyperspaceConf.advisorRecordQueries(owner) && QueryRecorder.isUserQuery(owner, plan)) {
      val key = plan.canonicalized
      val max = HyperspaceConf.advisorMaxRecordedQueries(owner)
      synchronized {
        val entry = Option(entries.get(key)).getOrElse {
          numbered += 1
          val e = new Entry(plan, QueryRecorder.labelOf(plan, numbered))
          entries.put(key, e)
          e
        }
        entry.count += 1
        entry.plan = plan
        val eldest = entries.values.iterator()
        while (entries.size > max) { eldest.next(); eldest.remove() }
      }
    }

  /** The recorded queries, least recently run first. */
  def recorded: Seq[RecordedQuery] = synchronized {
    entries.values.asScala.toSeq.map(e => RecordedQuery(e.label, e.count)(e.plan))
  }

  /** Forgets every recorded query; returns how many distinct ones there were. */
  def clear(): Int = synchronized {
    val n = entries.size
    entries.clear()
    numbered = 0 // labels start again at 1, as in a fresh session
    n
  }
}

object QueryRecorder extends Logging {

  /** The recorder of `spark`, when one was installed. */
  def of(spark: SparkSession): Option[QueryRecorder] =
    SparkInternals.queryExecutionListeners(spark).collectFirst { case r: QueryRecorder if r.owner eq spark => r }

  /**
   * The recorder of `spark`, registered now if it has none. Called by Hyperspace's optimizer rule
   * while recording is on, so every session Hyperspace is installed in (by the extension, by
   * attach, or a Spark Connect server's) records without a call of its own.
   */
  def install(spark: SparkSession): QueryRecorder = spark.listenerManager.synchronized {
    of(spark).getOrElse {
      val recorder = new QueryRecorder(spark)
      spark.listenerManager.register(recorder)
      recorder
    }
  }

  /**
   * The queries recorded in `spark`, once the events of queries already finished were delivered
   * (listeners run asynchronously, and a query just run must count). A clear error when recording
   * is off, or nothing was recorded.
   */
  def recordedIn(spark: SparkSession): Seq[RecordedQuery] = {
    if (!HyperspaceConf.advisorRecordQueries(spark)) {
      throw new HyperspaceException(
        "No workload was given and query recording is off in this session: set " +
          s"${HyperspaceConf.ADVISOR_RECORD_QUERIES.key}=true, run the workload, then ask again; or pass the queries.")
    }
    val recorded = recordedSoFar(spark)
    if (recorded.isEmpty) {
      throw new HyperspaceException(
        "No workload was given and no query has been recorded in this session yet: queries are recorded " +
          s"while ${HyperspaceConf.ADVISOR_RECORD_QUERIES.key}=true in a session with Hyperspace installed " +
          "(the extension or attach); writes, commands and Hyperspace's own reads are not recorded.")
    }
    recorded
  }

  /** The queries recorded in `spark` so far (none when it never recorded), least recently run first. */
  def recordedSoFar(spark: SparkSession): Seq[RecordedQuery] = {
    awaitEvents(spark)
    of(spark).map(_.recorded).getOrElse(Nil)
  }

  /** Forgets the queries recorded in `spark`; returns how many distinct ones there were. */
  def clear(spark: SparkSession): Int = {
    awaitEvents(spark)
    of(spark).map(_.clear()).getOrElse(0)
  }

  /** [[recordedIn]] as workload queries, each weighted by how often it ran. */
  def workload(spark: SparkSession): Seq[WorkloadQuery] =
    recordedIn(spark).map(q => WorkloadQuery(q.label, SparkInternals.ofRows(spark, q.plan), q.frequency.toDouble))

  private def awaitEvents(spark: SparkSession): Unit =
    try SparkInternals.waitForListenerEvents(spark)
    catch {
      // A listener bus still busy after the wait gives the queries recorded so far.
      case NonFatal(e) => logWarning(s"Hyperspace read the recorded queries before all events arrived: $e")
    }

  /**
   * Whether `plan` is a query of the user's worth advising on: it reads at least one source the
   * advisor can index and nothing else from files. Not recorded: commands and writes (index
   * builds among them), streaming queries, and Hyperspace's own reads, which either read the
   * exact files an index records (a narrowed listing, not a source scan), read an index, or read
   * under the system path (logs, sketch tables).
   */
  private[advisor] def isUserQuery(spark: SparkSession, plan: LogicalPlan): Boolean =
    !plan.isStreaming && !plan.exists(_.isInstanceOf[Command]) && {
      val files = plan.collect { case r: LogicalRelation if r.relation.isInstanceOf[HadoopFsRelation] => r }
      lazy val system = qualified(spark, HyperspaceConf.systemPath(spark))
      files.nonEmpty && files.forall { r =>
        QueryShape.keyOf(r).exists(_ =>
          !r.relation.asInstanceOf[HadoopFsRelation].location.rootPaths.exists(p => isUnder(p.toString, system)))
      }
    }

  private def qualified(spark: SparkSession, path: String): String = {
    val p = new Path(path)
    p.getFileSystem(spark.sessionState.newHadoopConf()).makeQualified(p).toString.stripSuffix("/")
  }

  private def isUnder(path: String, dir: String): Boolean = path == dir || path.startsWith(dir + "/")

  private def labelOf(plan: LogicalPlan, n: Long): String =
    plan.origin.sqlText.map(_.trim).filter(_.nonEmpty).getOrElse {
      val sources = plan.collect { case r: LogicalRelation => r }.flatMap { r =>
        r.catalogTable.map(_.identifier.unquotedString).orElse(r.relation match {
          case fs: HadoopFsRelation => Some(fs.location.rootPaths.mkString(", "))
          case _ => None
        })
      }.distinct
      s"recorded query $n (reads ${sources.mkString("; ")})"
    }
}
