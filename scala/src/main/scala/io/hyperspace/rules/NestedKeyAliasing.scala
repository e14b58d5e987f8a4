package io.hyperspace.rules

import org.apache.spark.sql.catalyst.expressions.{Alias, Expression, GetStructField, NamedExpression}
import org.apache.spark.sql.catalyst.optimizer.CollapseProject
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan, Project}

/**
 * Project over Join → the same with every struct field the two read of the join's sides
 * (`nested.leaf.id` in the keys, `nested.leaf.cnt` in the output) read out under an alias in a
 * Project directly over its side, so that join keys on fields are attributes of the sides, as
 * [[JoinIndexRule]] needs. Spark's own nested column aliasing does the same, but only when a
 * query reads part of a struct's fields. A column also used whole is left as it is.
 */
private[rules] object NestedKeyAliasing {

  def apply(project: Project): LogicalPlan = project.child match {
    case join: Join =>
      val sides = join.left.outputSet ++ join.right.outputSet
      val reads = StructFields.readsOf(project.projectList ++ join.condition.toSeq, sides)
      val aliased = reads.fields.filterNot(f => reads.whole.exists(_.exprId == f.attribute.exprId))
      if (aliased.isEmpty) return project
      val aliases = aliased.map(f => f.expr.canonicalized -> Alias(f.expr, s"_extract_${f.fields.last}")())
        .toMap
      val gone = aliased.map(_.attribute.exprId).toSet
      def side(plan: LogicalPlan): LogicalPlan = {
        val mine = aliases.values.filter(_.child.references.subsetOf(plan.outputSet)).toSeq.sortBy(_.name)
        if (mine.isEmpty) plan
        else CollapseProject(Project(plan.output.filterNot(a => gone.contains(a.exprId)) ++ mine, plan))
      }
      def replace(e: Expression): Expression = e transformDown {
        case g: GetStructField if aliases.contains(g.canonicalized) => aliases(g.canonicalized).toAttribute
      }
      Project(project.projectList.map(replace(_).asInstanceOf[NamedExpression]),
        join.copy(left = side(join.left), right = side(join.right), condition = join.condition.map(replace)))
    case _ => project
  }
}
