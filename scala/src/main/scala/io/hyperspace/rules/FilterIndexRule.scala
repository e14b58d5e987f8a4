package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression, IsNotNull, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.index.covering.IndexScan
import io.hyperspace.log.LogEntry

/**
 * Filter (+ Project) over a file scan → the same over a covering index, when the index's leading
 * indexed column is referenced by the filter and the index covers every column the query needs.
 * The index is a bucketed relation, so Spark prunes buckets for `=` / `IN` on a single indexed
 * column, and its sorted files let Parquet row-group statistics skip data for ranges.
 */
object FilterIndexRule extends IndexRewrite with PredicateHelper {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan =
    plan transformDown {
      case project @ Project(list, filter @ Filter(condition, relation: LogicalRelation)) =>
        val needed = AttributeSet(list.flatMap(_.references)) ++ condition.references
        bestIndex(spark, indexes, relation, needed.toSeq, condition)
          .map(e => project.copy(child = filter.copy(child = IndexScan.replace(spark, e, relation))))
          .getOrElse(project)
      case filter @ Filter(condition, relation: LogicalRelation) =>
        bestIndex(spark, indexes, relation, relation.output, condition)
          .map(e => filter.copy(child = IndexScan.replace(spark, e, relation)))
          .getOrElse(filter)
    }

  private def bestIndex(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      relation: LogicalRelation,
      needed: Seq[Attribute],
      condition: Expression): Option[LogEntry] = {
    val resolver = spark.sessionState.conf.resolver
    // The IS NOT NULL filters Spark infers for joins are no reason to read an index.
    val filtered = splitConjunctivePredicates(condition)
      .filterNot(_.isInstanceOf[IsNotNull]).flatMap(_.references).map(_.name)
    IndexRanking.best(CandidateIndexes.forRelation(spark, indexes, relation, needed)
      .filter(e => filtered.exists(resolver(_, e.index.indexedColumns.head))))
  }
}
