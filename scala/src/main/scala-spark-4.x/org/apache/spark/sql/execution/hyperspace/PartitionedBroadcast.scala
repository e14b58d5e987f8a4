package org.apache.spark.sql.execution.hyperspace

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Cast, Expression, GenericInternalRow}
import org.apache.spark.sql.catalyst.plans.physical.BroadcastMode
import org.apache.spark.sql.execution.joins.{HashedRelation, HashedRelationBroadcastMode}
import org.apache.spark.sql.types.LongType

/**
 * A broadcast of rows grouped by the partition each row hashes to: Spark's hash relation keyed by
 * the partition number, built once where the broadcast is built, so that a task takes its
 * partitions' rows without hashing every broadcast row (an indexed join's broadcast probe side).
 * Here because Spark's hash relations are private to its execution package.
 */
object PartitionedBroadcast {

  /** The broadcast mode keyed by `partitionId` (an `HashPartitioning.partitionIdExpression`, bound). */
  def mode(partitionId: Expression): BroadcastMode =
    HashedRelationBroadcastMode(Seq(Cast(partitionId, LongType)), isNullAware = false)

  /**
   * The rows of one partition, read from `relation` (the value of a broadcast in [[mode]]); one
   * function per task, as the relation's reads share a result row.
   */
  def reader(relation: Any): Int => Iterator[InternalRow] = {
    val rows = relation.asInstanceOf[HashedRelation].asReadOnlyCopy()
    val key = new GenericInternalRow(1)
    p => {
      key.update(0, p.toLong)
      val found = rows.get(key)
      if (found == null) Iterator.empty else found
    }
  }
}
