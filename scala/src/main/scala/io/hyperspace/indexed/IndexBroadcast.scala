package io.hyperspace.indexed

import org.apache.spark.sql.catalyst.expressions.{Expression, PlanExpression}
import org.apache.spark.sql.catalyst.plans.physical.BroadcastMode
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FilterExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.exchange.BroadcastExchangeExec
import org.apache.spark.sql.execution.hyperspace.{BroadcastKeeper, KeptBroadcast, KeptBroadcastExchangeExec}

import io.hyperspace.config.HyperspaceConf

/**
 * Spark's broadcasts of rows that only a cached Indexed DataFrame version produces (its scan,
 * filtered and projected: the small index side of a join Spark broadcasts) become
 * [[KeptBroadcastExchangeExec]]s that keep the broadcast with the version, within
 * `spark.hyperspace.indexed.keptBroadcasts.maxBytes` (0: none). A cached version never changes,
 * so a later query broadcasting the same rows in the same form reuses the broadcast instead of
 * collecting and broadcasting the rows again; `df.cache()` keeps rows, not broadcasts, so a join
 * of the plainly cached table pays that every time.
 */
object KeepIndexBroadcasts extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    // The session the plan was made in, not the thread's active one (they differ in a cloned session).
    val maxBytes = if (plan.session == null) 0L else HyperspaceConf.indexedKeptBroadcastsMaxBytes(plan.session)
    if (maxBytes == 0) plan
    else plan.transformUp { case b: BroadcastExchangeExec =>
      versionRead(b.child).map(data => KeptBroadcastExchangeExec(b.mode, b.child, IndexBroadcastKeeper(data, maxBytes)))
        .getOrElse(b)
    }
  }

  /**
   * The cached Indexed DataFrame version `plan` reads and nothing else, through filters and
   * projections whose values depend on the rows alone (deterministic, no subquery): the rows a
   * broadcast of `plan` holds then stay the same for as long as the version is cached.
   */
  private[indexed] def versionRead(plan: SparkPlan): Option[IndexedData] = plan match {
    case s: IndexedScanExec if s.relation.data.isPersisted => Some(s.relation.data)
    case f: FilterExec if fixed(f.condition) => versionRead(f.child)
    case p: ProjectExec if p.projectList.forall(fixed) => versionRead(p.child)
    case _ => None
  }

  private def fixed(e: Expression): Boolean =
    e.deterministic && e.find(_.isInstanceOf[PlanExpression[_]]).isEmpty
}

/** Keeps broadcasts of `data`'s rows with it, up to `maxBytes` in all. */
private[indexed] final case class IndexBroadcastKeeper(data: IndexedData, maxBytes: Long)
  extends BroadcastKeeper {

  override def kept(mode: BroadcastMode, child: SparkPlan): Option[KeptBroadcast] =
    data.keptBroadcast(IndexBroadcastKeeper.keyOf(mode, child))

  override def keep(mode: BroadcastMode, child: SparkPlan, broadcast: KeptBroadcast): Unit =
    data.keepBroadcast(IndexBroadcastKeeper.keyOf(mode, child), broadcast, maxBytes)

  override def description: String =
    s"kept with version ${data.version} of the Indexed DataFrame on ${data.keyColumn}"
}

private[indexed] object IndexBroadcastKeeper {

  /**
   * What a broadcast of `child` in `mode` holds, whichever query planned it: the canonical plan
   * (expression ids normalized) with each index scan's relation in canonical form too, and
   * without the number of tasks the scan reads in (which changes no row).
   */
  def keyOf(mode: BroadcastMode, child: SparkPlan): AnyRef =
    (mode.canonicalized,
      child.canonicalized.transformUp {
        case s: IndexedScanExec => s.copy(relation = s.relation.copy(output = s.output), tasks = None)
      })
}
