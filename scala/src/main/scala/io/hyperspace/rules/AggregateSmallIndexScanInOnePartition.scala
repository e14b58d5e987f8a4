package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, LogicalPlan, Project, Repartition}
import org.apache.spark.sql.catalyst.rules.Rule

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.shims.FileRelation

/**
 * An aggregate over an index scan that reads few enough bytes (after bucket and range pruning)
 * reads them in one partition, so the aggregate needs no shuffle.
 *
 * Spark plans an aggregate as a partial and a final step with an Exchange between them, because
 * a file scan reports an unknown partitioning even when its files are one input partition: a
 * one-week range of a Z-order index read one 0.5 MB file, then paid a shuffle and a second AQE
 * stage (benchmarks/results/tpch-sf1-issue18.md). A coalesce to one partition (`Repartition`
 * without shuffle, planned as `CoalesceExec`) above the Filters and Projects over the scan
 * reports a single partition, which satisfies every distribution an aggregate asks for (global
 * or grouped, with or without DISTINCT), so no Exchange is planned, with AQE on or off.
 *
 * A coalesce never changes rows; it only sets how many tasks read them. Above
 * `spark.hyperspace.index.onePartition.maxBytes` the files keep Spark's own split into tasks.
 */
object AggregateSmallIndexScanInOnePartition extends Rule[LogicalPlan] with PredicateHelper with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan =
    try rewrite(plan)
    catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace could not plan a small index aggregate in one partition: $e", e)
        plan
    }

  private def rewrite(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case agg: Aggregate if reads(agg.child).exists { case (r, filters) => small(r, filters) } =>
      agg.withNewChildren(Seq(Repartition(1, shuffle = false, agg.child)))
  }

  /** The index relation `plan` reads through only Filters and Projects, with the filters' conjuncts. */
  private def reads(plan: LogicalPlan): Option[(IndexHadoopFsRelation, Seq[Expression])] = plan match {
    case FileRelation(_, r: IndexHadoopFsRelation) => Some((r, Nil))
    case Filter(condition, child) => reads(child).map { case (r, fs) => (r, splitConjunctivePredicates(condition) ++ fs) }
    case Project(_, child) => reads(child)
    case _ => None
  }

  /** Whether the files the scan lists for `filters` total at most the session's limit. */
  private def small(relation: IndexHadoopFsRelation, filters: Seq[Expression]): Boolean = {
    val limit = HyperspaceConf.onePartitionMaxBytes(relation.sparkSession)
    limit > 0 && relation.location.listFiles(Nil, filters).flatMap(_.files).map(_.fileStatus.getLen).sum <= limit
  }
}
