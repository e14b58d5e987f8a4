package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Sum}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.expressions.LongDecimalSum
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.shims.FileRelation

/**
 * In an aggregate over an index scan, `sum` of a DECIMAL of 9 to 18 digits (or of an exact product
 * of two) runs on the values' unscaled longs while they fit ([[LongDecimalSum]]: same result, nulls
 * and overflow as Spark's).
 * Spark keeps such a sum's DECIMAL(p + 10) buffer as bytes that a hash aggregate decodes and
 * encodes for every row; the TPC-H join's grouped `sum(l_extendedprice)` spent most of its CPU
 * there.
 *
 * Only aggregates that read an index are changed (other plans stay Spark's), and none with a
 * DISTINCT aggregate, which Spark rewrites into an Expand of its own.
 */
case class SumDecimalsOnLongs(spark: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!HyperspaceConf.decimalsOnLongsEnabled(spark)) plan
    else
      plan.transformUp {
        case agg: Aggregate if eligible(agg) =>
          agg.transformExpressions {
            case ae @ AggregateExpression(s: Sum, _, false, _, _) if LongDecimalSum.applies(s) =>
              ae.copy(aggregateFunction = LongDecimalSum(s))
          }
      }

  private def eligible(agg: Aggregate): Boolean = {
    val functions = agg.aggregateExpressions.flatMap(_.collect { case ae: AggregateExpression => ae })
    functions.exists(_.aggregateFunction.isInstanceOf[Sum]) && !functions.exists(_.isDistinct) &&
    agg.child.exists {
      case FileRelation(_, _: IndexHadoopFsRelation) => true
      case _ => false
    }
  }
}
