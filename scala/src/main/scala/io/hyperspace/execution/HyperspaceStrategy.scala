package io.hyperspace.execution

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

import io.hyperspace.rules.BucketUnion

/** Plans Hyperspace's logical nodes into their physical operators. */
object HyperspaceStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case union: BucketUnion =>
      BucketUnionExec(
        union.children.map(planLater),
        union.bucketColumns.map(c => union.bucketOrdinal(c).get),
        union.numBuckets) :: Nil
    case _ => Nil
  }
}
