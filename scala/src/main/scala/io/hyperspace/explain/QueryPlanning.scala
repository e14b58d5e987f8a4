package io.hyperspace.explain

import scala.util.control.NonFatal

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.{Hyperspace, HyperspaceSparkSessionExtension}
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.LogEntry
import io.hyperspace.rules.{ApplyHyperspace, DecisionLog, Decisions, Reason, RecordingLog}

/**
 * One query planned with and without indexes, never by switching rewriting in the user's
 * session (other threads plan their queries with it meanwhile):
 *
 *  - without indexes: planned in a private copy of the session ([[SparkInternals.cloneSession]])
 *    with `spark.hyperspace.apply.enabled=false`; only the copy's conf is changed;
 *  - with indexes, when the session rewrites: planned by the session itself, as the query runs;
 *  - with indexes otherwise: the optimizer rule's own rewrite applied explicitly to the plan
 *    without indexes, then planned in the copy (whose rule is off, so it is not applied twice).
 */
final class QueryPlanning(df: DataFrame) {
  private val spark: SparkSession = df.sparkSession
  private def logical: LogicalPlan = df.queryExecution.logical

  /** The copy of the session that plans without rewriting, made on first use. */
  private lazy val withoutRewriting: SparkSession = {
    val copy = HyperspaceSparkSessionExtension.rebound(SparkInternals.cloneSession(spark))
    copy.conf.set(HyperspaceConf.APPLY_ENABLED.key, "false")
    copy.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "false") // a private copy's plans are not the user's
    copy
  }

  /** Whether the session itself rewrites queries: extension installed and rewriting on. */
  lazy val sessionRewrites: Boolean = installed && enabled

  private lazy val installed = Hyperspace.isExtensionInstalled(spark)
  // A malformed value: the optimizer rule treats it as off, and so does this.
  private lazy val enabled = try HyperspaceConf.applyEnabled(spark)
  catch { case NonFatal(_) => false }

  /** The optimized logical plan with no index. */
  lazy val optimizedWithout: LogicalPlan =
    SparkInternals.ofRows(withoutRewriting, logical).queryExecution.optimizedPlan

  /** The physical plan with no index. */
  lazy val physicalWithout: SparkPlan = Plans.physical(withoutRewriting, logical)

  /** The physical plan with the session's indexes (what the query runs when the session rewrites). */
  lazy val physicalWith: SparkPlan =
    if (sessionRewrites) Plans.physical(spark, logical)
    else Plans.physical(withoutRewriting, ApplyHyperspace.rewrite(spark, optimizedWithout, DecisionLog.Discard))

  /** The physical plan if `indexes` (possibly hypothetical) were the only ones. */
  def physicalWithOnly(indexes: Seq[LogEntry]): SparkPlan = physicalOf(rewrittenWithOnly(indexes))

  /** The optimized plan rewritten as if `indexes` (possibly hypothetical) were the only ones. */
  def rewrittenWithOnly(indexes: Seq[LogEntry]): LogicalPlan =
    ApplyHyperspace.rewriteWith(spark, optimizedWithout, indexes)

  /** The physical plan of `rewritten` (from [[rewrittenWithOnly]]). */
  def physicalOf(rewritten: LogicalPlan): SparkPlan = Plans.physical(withoutRewriting, rewritten)

  /**
   * What the optimizer rule decides for this query: the indexes it uses and the reasons for the
   * others, recorded while a private copy of the session, with rewriting on, optimizes it —
   * the same rule, at the same points among Spark's rules, as when the query runs. When the
   * session itself rewrites nothing, the decisions say why, beside what rewriting would do.
   */
  lazy val decisions: Decisions =
    if (df.isStreaming) Decisions(Set.empty, Map.empty, Some(Reason.StreamingQuery))
    else if (!installed) Decisions(Set.empty, Map.empty, Some(Reason.ExtensionNotInstalled))
    else if (!enabled) Decisions(Set.empty, Map.empty, Some(Reason.RewritingDisabled), Some(recordedRun))
    else recordedRun

  private def recordedRun: Decisions = {
    val copy = HyperspaceSparkSessionExtension.rebound(SparkInternals.cloneSession(spark))
    copy.conf.set(HyperspaceConf.APPLY_ENABLED.key, "true")
    copy.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "false") // a private copy's plans are not the user's
    val log = new RecordingLog
    val optimized = ApplyHyperspace.recording(copy, log) {
      SparkInternals.ofRows(copy, logical).queryExecution.optimizedPlan
    }
    ApplyHyperspace.decisions(spark, optimized, log, df.queryExecution.analyzed)
  }
}
