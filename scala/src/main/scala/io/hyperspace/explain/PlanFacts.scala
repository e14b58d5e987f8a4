package io.hyperspace.explain

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{FileSourceScanExec, SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec

import io.hyperspace.execution.DriverIndexReadExec
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.index.dataskipping.SkippedFilesIndex

/**
 * Facts about a query that has run: files and bytes its scans read, its shuffles and sorts, and
 * the indexes it used (read, or used to skip source files) — what benchmarks
 * report beside the timings.
 */
case class PlanFacts(filesRead: Long, bytesRead: Long, exchanges: Int, sorts: Int, indexes: Seq[String]) {
  /** The facts as a JSON object (for the Python benchmark harness). */
  def toJson: String =
    s"""{"filesRead": $filesRead, "bytesRead": $bytesRead, "exchanges": $exchanges, "sorts": $sorts, """ +
      s""""indexes": [${indexes.map(i => "\"" + i.replace("\"", "\\\"") + "\"").mkString(", ")}]}"""
}

object PlanFacts {

  /** The facts of `df`'s last execution (call after an action such as `collect`). */
  def of(df: DataFrame): PlanFacts = {
    val plan = unwrap(df.queryExecution.executedPlan)
    val scans = plan.collect { case s: FileSourceScanExec => s }
    // Rows collected by a driver-side read come from files its scan never opened.
    val reads = scans ++ plan.collect { case d: DriverIndexReadExec => d }
    PlanFacts(
      filesRead = reads.flatMap(_.metrics.get("numFiles")).map(_.value).sum,
      bytesRead = reads.flatMap(_.metrics.get("filesSize")).map(_.value).sum,
      exchanges = plan.collect { case e: ShuffleExchangeExec => e }.size,
      sorts = plan.collect { case s: SortExec => s }.size,
      indexes = scans.map(_.relation).flatMap {
        case r: IndexHadoopFsRelation => Seq(r.entry.name)
        case r => r.location match {
            case d: SkippedFilesIndex => d.entries.map(_.name) // pruned the source scan
            case _ => Nil
          }
      }.distinct.sorted)
  }

  /** [[of]] as JSON. */
  def json(df: DataFrame): String = of(df).toJson

  private def unwrap(plan: SparkPlan): SparkPlan = plan transform {
    case a: AdaptiveSparkPlanExec => unwrap(a.executedPlan)
    case q: QueryStageExec => unwrap(q.plan)
  }
}
