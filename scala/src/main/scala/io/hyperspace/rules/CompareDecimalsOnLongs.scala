package io.hyperspace.rules

import scala.util.Try

import org.apache.spark.sql.catalyst.expressions.{BinaryComparison, Literal, UnscaledValue}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SparkPlan}
import org.apache.spark.sql.types.{Decimal, DecimalType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.IndexHadoopFsRelation

/**
 * In a filter over an index scan, a comparison of a DECIMAL of at most 18 digits with a literal
 * of the same type compares the two unscaled longs (`UnscaledValue(x) < 2400` for
 * `x < 24.00`): at the same scale their order is the values' order, so the result is the same.
 *
 * A decimal literal from SQL text (`l_discount BETWEEN 0.05 AND 0.07`, `l_quantity < 24`) holds a
 * java BigDecimal, and `Decimal.compare` compares two values as longs only when both are held as
 * longs, anything else through two new BigDecimals: in TPC-H Q6 over the Z-order index that was
 * 38% of the executors' CPU samples (benchmarks/results/archive/h-18-decimals-sf1.notes.md). A physical
 * rule, after the scan's filters were pushed to Parquet as Spark planned them: only the filter
 * evaluated on the rows changes.
 */
object CompareDecimalsOnLongs extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    // The session the plan was made in, not the thread's active one (they differ in a cloned session).
    if (plan.session == null || !HyperspaceConf.decimalsOnLongsEnabled(plan.session)) plan
    else
      plan.transformUp {
        case f @ FilterExec(condition, child) if readsIndex(child) =>
          val rewritten = condition.transformUp {
            case c: BinaryComparison =>
              (c.left, c.right) match {
                case (x, Literal(d: Decimal, t: DecimalType)) if x.dataType == t =>
                  unscaled(d, t).map(u => c.withNewChildren(Seq(UnscaledValue(x), Literal(u)))).getOrElse(c)
                case (Literal(d: Decimal, t: DecimalType), x) if x.dataType == t =>
                  unscaled(d, t).map(u => c.withNewChildren(Seq(Literal(u), UnscaledValue(x)))).getOrElse(c)
                case _ => c
              }
          }
          if (rewritten eq condition) f else FilterExec(rewritten, child)
      }

  private def readsIndex(plan: SparkPlan): Boolean = plan.exists {
    case s: FileSourceScanExec => s.relation.isInstanceOf[IndexHadoopFsRelation]
    case _ => false
  }

  /**
   * `d`'s unscaled value at `t`'s scale when `t` has at most 18 digits and `d` is exactly a value
   * of `t` (no rounding, no more digits): then values of `t` are held as such longs.
   */
  private def unscaled(d: Decimal, t: DecimalType): Option[Long] =
    if (t.precision > Decimal.MAX_LONG_DIGITS) None
    else
      Try(d.toJavaBigDecimal.setScale(t.scale).unscaledValue().longValueExact()).toOption
        .filter(u => u != Long.MinValue && math.abs(u) < BigInt(10).pow(t.precision))
}
