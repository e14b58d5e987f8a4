package io.hyperspace.shims

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.planning.{ExtractEquiJoinKeys, PhysicalOperation}
import org.apache.spark.sql.catalyst.plans.JoinType
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Join, JoinHint, LogicalPlan}
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}

/** A batch or streaming scan of files: a `LogicalRelation` over a `HadoopFsRelation`. */
object FileRelation {

  /** The relation node and its file relation. */
  def unapply(plan: LogicalPlan): Option[(LogicalRelation, HadoopFsRelation)] = plan match {
    case r @ LogicalRelation(fs: HadoopFsRelation, _, _, _, _) => Some((r, fs))
    case _ => None
  }

  /** A batch scan of `relation` producing `output` (no catalog table). */
  def apply(relation: HadoopFsRelation, output: Seq[AttributeReference]): LogicalRelation =
    LogicalRelation(relation, output, None, isStreaming = false, stream = None)

  /**
   * `scan` (over `fs`) listing its files through `location` instead; everything else kept, also
   * the catalog table unless `keepTable` is false.
   */
  def withLocation(scan: LogicalRelation, fs: HadoopFsRelation, location: FileIndex,
      keepTable: Boolean = true): LogicalRelation = {
    val relocated = fs.copy(location = location)(fs.sparkSession)
    if (keepTable) scan.copy(relation = relocated) else scan.copy(relation = relocated, catalogTable = None)
  }
}

/**
 * An equi-join as Spark's `ExtractEquiJoinKeys` sees it: (join type, left keys, right keys,
 * the condition beyond the key equalities, left, right, hint).
 */
object EquiJoin {
  def unapply(plan: LogicalPlan)
      : Option[(JoinType, Seq[Expression], Seq[Expression], Option[Expression], LogicalPlan, LogicalPlan, JoinHint)] =
    plan match {
      case j: Join =>
        ExtractEquiJoinKeys.unapply(j).map { case (joinType, lk, rk, other, _, left, right, hint) =>
          (joinType, lk, rk, other, left, right, hint)
        }
      case _ => None
    }
}

/** An `Aggregate`: (the node, its grouping expressions, its aggregate expressions, its child). */
object GroupBy {
  def unapply(plan: LogicalPlan): Option[(Aggregate, Seq[Expression], Seq[NamedExpression], LogicalPlan)] =
    plan match {
      case a: Aggregate => Some((a, a.groupingExpressions, a.aggregateExpressions, a.child))
      case _ => None
    }
}

/**
 * The projections and filters over a plan that Spark's physical planning collapses (Spark's
 * `PhysicalOperation`): (project list, filter conjuncts, the plan below them).
 */
object ProjectsAndFilters {
  def unapply(plan: LogicalPlan): Option[(Seq[NamedExpression], Seq[Expression], LogicalPlan)] =
    PhysicalOperation.unapply(plan)
}
