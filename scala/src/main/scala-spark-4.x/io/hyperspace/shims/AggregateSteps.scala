package io.hyperspace.shims

import org.apache.spark.sql.catalyst.expressions.aggregate.Complete
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.{AggUtils, HashAggregateExec}

/**
 * A global aggregate's partial and final steps, apart, as Spark plans them. Spark 4.3 combines a
 * partial step and the final step right above it (no Exchange between them: the input is one
 * partition already, as a coalesce to one partition makes it) into one step of `Complete` mode
 * (its `CombineAdjacentAggregation`, `spark.sql.execution.combineAdjacentAggregation`), before the
 * columnar rules see the plan; Spark 4.0-4.2 keep the two steps, and there this changes nothing.
 * A driver-side read needs the partial step on its own: each run of files on its own thread
 * aggregates partially, and the partial step is compiled with the Filters and Projects below it
 * (`DriverIndexReadExec`). Split with Spark's own planning of an aggregate without DISTINCT
 * (`AggUtils.planAggregateWithoutDistinct`, of one signature on every Spark 4 line): the same
 * functions, result ids and output.
 */
object AggregateSteps {
  def separated(plan: SparkPlan): SparkPlan = plan.transformUp {
    case agg: HashAggregateExec if combinedGlobal(agg) =>
      AggUtils.planAggregateWithoutDistinct(agg.groupingExpressions, agg.aggregateExpressions, agg.resultExpressions,
        agg.child) match {
        case Seq(finalStep) if finalStep.output == agg.output => finalStep
        case _ => agg
      }
  }

  /** A global aggregate (no grouping keys, no DISTINCT) whose partial and final steps Spark combined. */
  private def combinedGlobal(agg: HashAggregateExec): Boolean =
    !agg.isStreaming && agg.groupingExpressions.isEmpty && agg.aggregateExpressions.nonEmpty &&
      agg.aggregateExpressions.forall(e => e.mode == Complete && !e.isDistinct)
}
