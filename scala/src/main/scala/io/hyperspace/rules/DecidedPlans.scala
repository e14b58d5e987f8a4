package io.hyperspace.rules

import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag

/**
 * The plan a pass of [[ApplyHyperspace]] returned, remembered on that plan so that a later pass
 * of the same query's optimization given it back unchanged returns it without deciding again.
 *
 * Spark runs the rule in every iteration of each fixed-point batch it is in until an iteration
 * changes nothing, so each batch gives the rule back at least once the plan it just returned
 * (a join of two tables with an index it does not use: four passes, each a full search of the
 * candidate indexes, benchmarks/results/archive/h-19-planning.notes.md). A pass decides on the plan, the
 * catalog's version and the session's settings. Reuse is confined to one query's planning —
 * Spark's own tracker of it, which the optimizer runs under — where the settings are the
 * query's; the plan (compared structurally: the same relations, file listings and expression
 * ids) and the catalog token must also be those of the pass that decided. Any other query, and
 * an optimized plan planned again, is decided anew.
 */
private[rules] object DecidedPlans {

  // The tracker is not serializable, nor need it be: tags are fields of TreeNode, which is not
  // Serializable, so a plan serialized anywhere carries none of them.
  private case class Decided(plan: LogicalPlan, planning: QueryPlanningTracker, token: Option[String])

  private val Tag = TreeNodeTag[Decided]("hyperspace.decided")

  /** Whether `plan` is what a pass of this query's planning returned under catalog `token`. */
  def decidedAlready(plan: LogicalPlan, token: => Option[String]): Boolean =
    QueryPlanningTracker.get.exists { planning =>
      plan.getTagValue(Tag).exists { d =>
        (d.planning eq planning) && ((d.plan eq plan) || d.plan == plan) && d.token == token
      }
    }

  /** `plan`, remembered as what a pass of the current query's planning returned under `token`. */
  def remember(plan: LogicalPlan, token: Option[String]): LogicalPlan = {
    QueryPlanningTracker.get.foreach(planning => plan.setTagValue(Tag, Decided(plan, planning, token)))
    plan
  }
}
