package io.hyperspace.shims

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.MutableProjection
import org.apache.spark.sql.execution.aggregate.{BaseAggregateExec, SortBasedAggregationIterator}
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * Spark's sort-based aggregation of `agg` over `input` (one partition's rows, sorted by its
 * grouping keys), as `SortAggregateExec` builds it in a task. The iterator's constructor differs
 * between lines: Spark 4.2's takes an aggregation-time metric besides the output-row count (4.0 and 4.1: the count only).
 */
object SortAggregation {
  def iterator(agg: BaseAggregateExec, input: Iterator[InternalRow]): SortBasedAggregationIterator =
    new SortBasedAggregationIterator(
      0,
      agg.groupingExpressions,
      agg.child.output,
      input,
      agg.aggregateExpressions,
      agg.aggregateAttributes,
      agg.initialInputBufferOffset,
      agg.resultExpressions,
      (expressions, schema) => MutableProjection.create(expressions, schema),
      new SQLMetric("sum", 0L),
      new SQLMetric("timing", 0L))
}
