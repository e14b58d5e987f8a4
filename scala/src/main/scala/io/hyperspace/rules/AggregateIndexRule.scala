package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.log.LogEntry
import io.hyperspace.shims.GroupBy

/**
 * Aggregate grouped by exactly an index's indexed columns (as a set) over a (Project of a)
 * (Filter of a) file scan whose needed columns the index covers → the scan reads the index.
 * The index is bucketed on the grouping columns, so the aggregation needs no Exchange, and its
 * output stays partitioned on them — a join above on the same key (TPC-H Q17's correlated
 * subquery) needs none either. Fewest bytes wins, then the name.
 */
object AggregateIndexRule extends IndexRewrite {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan =
    plan transformUp {
      case GroupBy(agg, grouping, _, child)
          if grouping.nonEmpty && grouping.forall(_.isInstanceOf[AttributeReference]) =>
        child match {
          case ScanChain(relation, needed) =>
            val keys = grouping.map(_.asInstanceOf[Attribute])
            val resolver = spark.sessionState.conf.resolver
            val candidates =
              if (!keys.forall(relation.outputSet.contains)) Nil
              else CandidateIndexes.forRelation(spark, indexes, relation, needed, log).filter { c =>
                val keyed = CandidateIndexes.keyedOn(c.entry, keys, resolver)
                if (!keyed) {
                  log.reject(c.entry, Reason.GroupingNotIndexed(keys.map(_.name), c.entry.index.indexedColumns))
                }
                keyed
              }
            val best = IndexRanking.best(candidates)
            best.foreach(b =>
              candidates.filterNot(_ eq b).foreach(c =>
                log.reject(c.entry, Reason.RankedLower(b.name, "fewer bytes to read"))))
            best.map { c =>
              agg.copy(child = child transformUp {
                case r: LogicalRelation if r eq relation => HybridScan.replace(spark, c, r, keepBuckets = true)
              })
            }.getOrElse(agg)
          case _ => agg
        }
    }
}
