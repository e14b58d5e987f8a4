package org.apache.spark.sql.execution.hyperspace

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.physical.BroadcastPartitioning
import org.apache.spark.sql.execution.exchange.BroadcastExchangeLike
import org.apache.spark.sql.execution.joins.{HashedRelation, HashedRelationBroadcastMode}

/**
 * The keys of a broadcast hash relation Spark has already built (a finished broadcast stage), for
 * join pruning; here because Spark's hash relations are private to its execution package.
 */
object BroadcastKeys {

  /**
   * (the relation's key expressions, bound to the exchange's child output, and an iterator over
   * its distinct non-NULL key rows) of `exchange`, whose relation must be built; None for a
   * broadcast that is not a hash relation, or a null-aware one (which keeps NULL keys).
   */
  def of(exchange: BroadcastExchangeLike): Option[(Seq[Expression], () => Iterator[InternalRow])] =
    exchange.outputPartitioning match {
      case BroadcastPartitioning(HashedRelationBroadcastMode(keys, false)) =>
        exchange.relationFuture.get().value match {
          case r: HashedRelation => Some((keys, () => r.keys()))
          case _ => None
        }
      case _ => None
    }
}
