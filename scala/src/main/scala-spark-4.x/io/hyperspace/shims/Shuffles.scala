package io.hyperspace.shims

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{ShuffledRowRDD, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.{SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}

/** Shuffles built directly, without a `ShuffleExchangeExec` in a plan. */
object Shuffles {

  /**
   * The unsafe rows of `rows` (with schema `attributes`) shuffled as `partitioning` places them,
   * as Spark's own exchange would (same partitioner, serializer and shuffle metrics).
   */
  def exchange(rows: RDD[InternalRow], attributes: Seq[Attribute], partitioning: Partitioning): RDD[InternalRow] = {
    val sc = rows.sparkContext
    val dependency = ShuffleExchangeExec.prepareShuffleDependency(rows, attributes, partitioning,
      new UnsafeRowSerializer(attributes.length), SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sc))
    new ShuffledRowRDD(dependency, SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sc))
  }
}
