package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, Join, LogicalPlan, Project, Repartition, Subquery}
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
 * stage (benchmarks/results/archive/tpch-sf1-issue18.md). A coalesce to one partition (`Repartition`
 * without shuffle, planned as `CoalesceExec`) above the Filters and Projects over the scan
 * reports a single partition, which satisfies every distribution an aggregate asks for (global
 * or grouped, with or without DISTINCT), so no Exchange is planned, with AQE on or off.
 *
 * A coalesce never changes rows; it only sets how many tasks read them. Above
 * `spark.hyperspace.index.onePartition.maxBytes` the files keep Spark's own split into tasks
 * (except for a global aggregate to be read in the driver on several threads, which needs the one
 * partition), and a grouped aggregate that Spark already plans without a shuffle (on the index's
 * buckets) or whose partitioning a join above may use is left alone.
 */
object AggregateSmallIndexScanInOnePartition extends Rule[LogicalPlan] with PredicateHelper with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan =
    try rewrite(plan)
    catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace could not plan a small index aggregate in one partition: $e", e)
        plan
    }

  /**
   * Aggregates below a join are left grouped as Spark plans them: their hash-partitioned output
   * can be what the join needs, where one partition would be shuffled again. A global
   * aggregate's output is one partition either way.
   */
  private def rewrite(plan: LogicalPlan, belowJoin: Boolean = false): LogicalPlan = plan match {
    case agg: Aggregate if eligible(agg, belowJoin) =>
      agg.withNewChildren(Seq(Repartition(1, shuffle = false, agg.child)))
    case join: Join => join.mapChildren(rewrite(_, belowJoin = true))
    // A correlated subquery's plan, which Spark optimizes on its own before decorrelating it into
    // a join with the outer query: its aggregates end up below that join. Coalescing one there
    // also makes it differ from the same aggregate in the outer query (TPC-DS q1's CTE, read by
    // both), so Spark could not reuse one's exchange for the other.
    case s: Subquery if s.correlated => s.mapChildren(rewrite(_, belowJoin = true))
    case other => other.mapChildren(rewrite(_, belowJoin))
  }

  private def eligible(agg: Aggregate, belowJoin: Boolean): Boolean = {
    val global = agg.groupingExpressions.isEmpty
    (global || !belowJoin) && reads(agg.child).exists { case (relation, filters) =>
      lazy val sizes = relation.location.listFiles(Nil, filters).flatMap(_.files).map(_.fileStatus.getLen)
      (global || !groupedOnBuckets(agg, relation)) &&
      (small(relation.sparkSession, sizes) || (global && readInDriverOnThreads(agg, relation.sparkSession, sizes)))
    }
  }

  /**
   * Whether `agg` groups on (a superset of) the index's bucket columns: Spark then reads the
   * buckets as partitions and needs no shuffle already, in as many tasks as buckets.
   */
  private def groupedOnBuckets(agg: Aggregate, relation: IndexHadoopFsRelation): Boolean =
    relation.bucketSpec.exists { spec =>
      val grouped = agg.groupingExpressions.collect { case a: Attribute => a.name.toLowerCase }.toSet
      spec.bucketColumnNames.forall(c => grouped.contains(c.toLowerCase))
    }

  /** The index relation `plan` reads through only Filters and Projects, with the filters' conjuncts. */
  private def reads(plan: LogicalPlan): Option[(IndexHadoopFsRelation, Seq[Expression])] = plan match {
    case FileRelation(_, r: IndexHadoopFsRelation) => Some((r, Nil))
    case Filter(condition, child) => reads(child).map { case (r, fs) =>
        (r, splitConjunctivePredicates(condition) ++ fs)
      }
    case Project(_, child) => reads(child)
    case _ => None
  }

  /**
   * Whether the files the scan lists for `filters` total at most the session's limit and either
   * Spark would read them as one input partition anyway (then one task reads them either way and
   * only the shuffle goes) or they total less than one file's open cost
   * (`spark.sql.files.openCostInBytes`, Spark's own estimate of what opening a file costs in bytes
   * read): spreading so few bytes over tasks saves less than the shuffle it needs costs (a week
   * of the Z-order index that fell on two 0.46 MB files had two tasks and a shuffle). Other files
   * Spark would spread over several tasks keep them (measured: a year of a Z-order index, 16
   * files, 6 MB, was no faster in one task than in two plus a shuffle).
   */
  private def small(spark: SparkSession, sizes: => Seq[Long]): Boolean = {
    val limit = HyperspaceConf.onePartitionMaxBytes(spark)
    limit > 0 && sizes.sum <= limit &&
    (sizes.sum <= spark.sessionState.conf.filesOpenCostInBytes || onePartition(spark, sizes))
  }

  /**
   * Whether a global aggregate over these files, once collected (as a global aggregate's one row
   * nearly always is: `collect`, `first`, `count`, a scalar subquery), is read in the driver on
   * several threads (`DriverIndexReadExec`; files up to `spark.hyperspace.index.driverRead.maxBytes`,
   * `driverRead.threads` above 1), which needs the plan's one partition: the threads then share
   * the files as a job's tasks would, with no job (a year of the Z-order index, 15 files, 6 MB:
   * benchmarks/results/archive/h-18-q6-threads.notes.md). Expressions the driver would not evaluate
   * (non-deterministic ones, subqueries) leave the plan to Spark's split.
   */
  private def readInDriverOnThreads(agg: Aggregate, spark: SparkSession, sizes: => Seq[Long]): Boolean = {
    val limit = HyperspaceConf.driverReadMaxBytes(spark)
    limit > 0 && HyperspaceConf.driverReadThreads(spark) > 1 &&
    !agg.exists(_.expressions.exists(e => !e.deterministic || SubqueryExpression.hasSubquery(e))) &&
    sizes.sum <= limit
  }

  /** Whether Spark's packing of files into read partitions makes one partition ([[ScanTasks]]). */
  private def onePartition(spark: SparkSession, sizes: Seq[Long]): Boolean = ScanTasks.of(spark, sizes).tasks <= 1
}
