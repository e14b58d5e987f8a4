package io.hyperspace

import org.apache.spark.sql.SparkSessionExtensions

import io.hyperspace.execution.HyperspaceStrategy
import io.hyperspace.expressions.BucketId
import io.hyperspace.indexed.IndexedStrategy
import io.hyperspace.rules.{ApplyHyperspace, PushFilterThroughBucketUnion}

/**
 * Installs Hyperspace into every session built with
 * `spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension`: the index-rewriting
 * optimizer rule, the planner strategies for Hyperspace's own plan nodes and for Indexed
 * DataFrames (always on: they only plan `IndexedRelation`s) and the `hyperspace_bucket_id` SQL
 * function. Rewriting stays off until `enableHyperspace()` (or
 * `spark.hyperspace.apply.enabled=true`) in a session. A jar built for another Spark line than
 * the running one fails the session's creation with a `HyperspaceException` (see [[SparkLine]]).
 */
class HyperspaceSparkSessionExtension extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    SparkLine.requireSameLine(org.apache.spark.SPARK_VERSION)
    extensions.injectOptimizerRule(session => ApplyHyperspace(session))
    // After ApplyHyperspace in the same optimizer batch: filters of hybrid-scanned join sides
    // then reach the index and the appended files (Spark pushes them on from there).
    extensions.injectOptimizerRule(_ => PushFilterThroughBucketUnion)
    extensions.injectPlannerStrategy(_ => HyperspaceStrategy)
    extensions.injectPlannerStrategy(_ => IndexedStrategy)
    extensions.injectFunction(BucketId.registration)
  }
}

object HyperspaceSparkSessionExtension {
  /** The value to put in `spark.sql.extensions`. */
  val className: String = classOf[HyperspaceSparkSessionExtension].getName
}
