package io.hyperspace

import org.apache.spark.sql.SparkSessionExtensions

import io.hyperspace.execution.HyperspaceStrategy
import io.hyperspace.expressions.BucketId
import io.hyperspace.indexed.IndexedStrategy
import io.hyperspace.rules.{ApplyHyperspace, PushFilterThroughBucketUnion}
import io.hyperspace.sql.HyperspaceSqlParser

/**
 * Installs Hyperspace into every session built with
 * `spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension`: the index-rewriting
 * optimizer rule, the planner strategies for Hyperspace's own plan nodes and for Indexed
 * DataFrames (always on: they only plan `IndexedRelation`s), the `hyperspace_bucket_id` SQL
 * function and a parser for Hyperspace's SQL statements (docs/sql.md) in front of Spark's.
 * Rewriting stays off until `enableHyperspace()` (or `spark.hyperspace.apply.enabled=true`) in a
 * session.
 */
class HyperspaceSparkSessionExtension extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectOptimizerRule(session => ApplyHyperspace(session))
    // After ApplyHyperspace in the same optimizer batch: filters of hybrid-scanned join sides
    // then reach the index and the appended files (Spark pushes them on from there).
    extensions.injectOptimizerRule(_ => PushFilterThroughBucketUnion)
    extensions.injectPlannerStrategy(_ => HyperspaceStrategy)
    extensions.injectPlannerStrategy(_ => IndexedStrategy)
    extensions.injectFunction(BucketId.registration)
    extensions.injectParser((_, sparkParser) => new HyperspaceSqlParser(sparkParser))
  }
}

object HyperspaceSparkSessionExtension {
  /** The value to put in `spark.sql.extensions`. */
  val className: String = classOf[HyperspaceSparkSessionExtension].getName
}
