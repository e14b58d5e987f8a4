package io.hyperspace

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.hyperspace.InjectedFunctions

import io.hyperspace.execution.{HyperspaceStrategy, IndexPhysicalRules, RemoveSortsOfSortedIndexBuckets}
import io.hyperspace.expressions.BucketId
import io.hyperspace.indexed.IndexedStrategy
import io.hyperspace.rules.{AggregateSmallIndexScanInOnePartition, ApplyHyperspace, JoinRuntimePruning, PushFilterThroughBucketUnion, SumDecimalsOnLongs}
import io.hyperspace.sql.HyperspaceSqlParser

/**
 * Installs Hyperspace into every session built with
 * `spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension`: the index-rewriting
 * optimizer rule, the planner strategies for Hyperspace's own plan nodes and for Indexed
 * DataFrames (always on: they only plan `IndexedRelation`s), the `hyperspace_bucket_id` SQL
 * function and a parser for Hyperspace's SQL statements (docs/sql.md) in front of Spark's.
 * Rewriting stays off until `enableHyperspace()` (or `spark.hyperspace.apply.enabled=true`) in a
 * session. A jar built for another Spark line than the running one, or run on a patch of its line
 * it is not checked against, fails the session's creation with a `HyperspaceException` (see
 * [[SparkLine]]).
 */
class HyperspaceSparkSessionExtension extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    SparkLine.requireSupported(org.apache.spark.SPARK_VERSION)
    extensions.injectOptimizerRule(session => ApplyHyperspace(session))
    // After ApplyHyperspace in the same optimizer batch: filters of hybrid-scanned join sides
    // then reach the index and the appended files (Spark pushes them on from there).
    extensions.injectOptimizerRule(_ => PushFilterThroughBucketUnion)
    // After the rewrites, which put the index scans it looks for into the plan.
    extensions.injectOptimizerRule(_ => AggregateSmallIndexScanInOnePartition)
    // Also after the rewrites: it changes only aggregates over index scans.
    extensions.injectOptimizerRule(session => SumDecimalsOnLongs(session))
    // Join pruning reads the keys of a broadcast once adaptive execution has built it.
    extensions.injectRuntimeOptimizerRule(session => JoinRuntimePruning(session))
    extensions.injectPlannerStrategy(_ => HyperspaceStrategy)
    extensions.injectPlannerStrategy(_ => IndexedStrategy)
    extensions.injectColumnar(_ => IndexPhysicalRules)
    // Adaptive execution shows its initial plan (df.explain(), EXPLAIN, executedPlan before a run)
    // without columnar rules, which it applies only as each stage is created: removing the Sorts
    // there too makes the plan a user reads before running the one that runs.
    extensions.injectQueryStagePrepRule(_ => RemoveSortsOfSortedIndexBuckets)
    extensions.injectFunction(BucketId.registration)
    extensions.injectParser((_, sparkParser) => new HyperspaceSqlParser(sparkParser))
  }
}

object HyperspaceSparkSessionExtension {
  /** The value to put in `spark.sql.extensions`. */
  val className: String = classOf[HyperspaceSparkSessionExtension].getName

  /**
   * Installs Hyperspace into `spark`, a session created without the extension (a notebook's,
   * whose cluster settings the user cannot change): the rewriting rules go into the session's
   * `experimental` optimizations and strategies, the function into its registry. Returns whether
   * anything was installed (false: it already was, by the extension or an earlier attach).
   *
   * Only `spark` and its private copies get it: sessions created later from the configuration
   * (`newSession()`, other notebooks on the cluster) need `spark.sql.extensions`. The rules then
   * run after Spark's own optimizer batches rather than inside its operator batch, which the
   * rewrites do not depend on: they match the optimized plan either way.
   */
  def attach(spark: SparkSession): Boolean = spark.synchronized {
    if (Hyperspace.isExtensionInstalled(spark)) false
    else {
      SparkLine.requireSupported(org.apache.spark.SPARK_VERSION)
      val experimental = spark.experimental
      experimental.extraOptimizations ++=
        Seq(ApplyHyperspace(spark), PushFilterThroughBucketUnion, AggregateSmallIndexScanInOnePartition,
          SumDecimalsOnLongs(spark))
      experimental.extraStrategies ++= Seq(HyperspaceStrategy, IndexedStrategy)
      // Under the name the line's registry gives injected functions (three parts on Spark 4.2).
      val (name, info, builder) = BucketId.registration
      spark.sessionState.functionRegistry.registerFunction(InjectedFunctions.identifier(name.funcName), info, builder)
      true
    }
  }

  /**
   * `copy` (a copy of an attached session, made to plan in privately) with its rewriting rule
   * bound to the copy itself: the copy inherits the attached session's rule, which would read
   * the original's settings and decision log. Sessions built with the extension get a rule of
   * their own from it and are returned unchanged.
   */
  def rebound(copy: SparkSession): SparkSession = {
    val experimental = copy.experimental
    if (experimental.extraOptimizations.exists(_.isInstanceOf[ApplyHyperspace])) {
      experimental.extraOptimizations = experimental.extraOptimizations.map {
        case _: ApplyHyperspace => ApplyHyperspace(copy)
        case _: SumDecimalsOnLongs => SumDecimalsOnLongs(copy)
        case rule => rule
      }
    }
    copy
  }
}
