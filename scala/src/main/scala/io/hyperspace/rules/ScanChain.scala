package io.hyperspace.rules

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.LogicalRelation

/**
 * A file scan under an optional Project and/or Filter — the shape an index can replace below a
 * join or an aggregate — with the scan's columns that the chain needs. A bare scan (or one under
 * a Filter only) passes all its columns up, so it needs all of them.
 */
object ScanChain {
  def unapply(plan: LogicalPlan): Option[(LogicalRelation, Seq[Attribute])] = plan match {
    case Project(list, Filter(condition, r: LogicalRelation)) =>
      Some((r, (AttributeSet(list.flatMap(_.references)) ++ condition.references).toSeq))
    case Project(list, r: LogicalRelation) => Some((r, AttributeSet(list.flatMap(_.references)).toSeq))
    case Filter(_, r: LogicalRelation) => Some((r, r.output))
    case r: LogicalRelation => Some((r, r.output))
    case _ => None
  }
}
