package io.hyperspace.indexed

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.logical.{JoinHint, Limit, LogicalPlan}
import org.apache.spark.sql.catalyst.plans.physical.BroadcastPartitioning
import org.apache.spark.sql.execution.{FilterExec, ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BooleanType, DoubleType, FloatType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.BoundedCache
import io.hyperspace.shims.{EquiJoin, ProjectsAndFilters}

/**
 * Plans [[IndexedRelation]]s: key lookups (`key = literal`, `key IN (literals)`) become
 * [[IndexedLookupExec]], equi-joins with the key among the join keys become
 * [[IndexedJoinExec]] when [[IndexedJoinSelection]] finds that cheaper than Spark's own join
 * (the probe side broadcast when it is hinted or below `spark.sql.autoBroadcastJoinThreshold`,
 * else shuffled to the index's partitioning; otherwise Spark plans the join), and
 * anything else scans the rows ([[IndexedScanExec]]). Spark's adaptive
 * execution re-plans with the session's planner, so these strategies fire there too.
 */
object IndexedStrategy extends SparkStrategy {

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case rel: IndexedRelation => IndexedScanExec(rel.output, rel) :: Nil

    case ProjectsAndFilters(projects, filters, rel: IndexedRelation) =>
      lookupKeys(filters, rel.keyAttribute) match {
        case Some((keys, conjuncts)) =>
          val lookup = IndexedLookupExec(rel.output, rel, keys)
          // The optimizer adds `key IS NOT NULL` next to `key = v`; a lookup only returns rows
          // whose key equals a non-null value, so that filter would only cost a codegen stage.
          val rest = conjuncts.filterNot {
            case IsNotNull(k) => k.semanticEquals(rel.keyAttribute)
            case _ => false
          }
          val filtered = rest.reduceOption(And).map(FilterExec(_, lookup)).getOrElse(lookup)
          if (projects.map(_.toAttribute) == filtered.output) filtered :: Nil
          else ProjectExec(projects, filtered) :: Nil
        case None => Nil
      }

    case EquiJoin(joinType, leftKeys, rightKeys, otherCondition, left, right, hint)
        if supported(joinType) =>
      choose(joinType, leftKeys, rightKeys, left, right, hint).filter(_.decision.useIndex)
        .map { c =>
          val side = c.side
          val (indexKeys, probeKeys, probePlan) =
            if (c.indexOnLeft) (leftKeys, rightKeys, right) else (rightKeys, leftKeys, left)
          val otherEqualities = indexKeys.indices.filter(_ != side.keyIndex)
            .map(i => EqualTo(leftKeys(i), rightKeys(i)))
          val extra = (otherEqualities ++ otherCondition).reduceOption(And)
          IndexedJoinExec(
            planLater(probePlan),
            IndexedScanExec(side.relation.output, side.relation),
            normalized(probeKeys(side.keyIndex)),
            side.filters,
            side.projects,
            joinType,
            c.indexOnLeft,
            extra,
            c.decision.broadcastProbe,
            if (c.decision.broadcastProbe && inOneTask(c.decision.probeRows, side.relation.data)) 1
            else SparkSession.active.sparkContext.defaultParallelism,
            c.decision.reason,
            c.inPlace)
        }.toList

    case _ => Nil
  }

  /**
   * Whether a join with the probe side broadcast runs in one task: a probe side small enough
   * that joining it in parallel saves less than the exchange and stage a multi-task output needs
   * above it (an aggregate's), and an index one executor caches whole.
   */
  private def inOneTask(probeRows: BigInt, data: IndexedData): Boolean = {
    val limit = HyperspaceConf.indexedJoinOneTaskProbeRows(SparkSession.active)
    limit > 0 && probeRows <= limit && data.cachedOnOneExecutor
  }

  /**
   * Whether a join with a small probe side can leave it where it is ([[ProbeInPlaceRDD]]): in
   * local mode (the driver's JVM caches every index partition and runs every task), with every
   * partition of the version cached, and a join type whose output each probe row decides alone
   * (no index row kept unmatched, no index-side semi or anti join).
   */
  private def probeInPlace(joinType: JoinType, indexOnLeft: Boolean, data: IndexedData): Boolean = {
    val byProbeRowAlone = joinType match {
      case _: InnerLike => true
      case LeftOuter => !indexOnLeft
      case RightOuter => indexOnLeft
      case LeftSemi | LeftAnti => !indexOnLeft
      case _ => false
    }
    // Every partition cached (in local mode, in this JVM): a task must not rebuild partitions.
    byProbeRowAlone && data.rdd.sparkContext.isLocal && HyperspaceConf.indexedJoinProbeInPlace(SparkSession.active) &&
    data.cachedOnOneExecutor
  }

  /** The index side an equi-join would probe, and whether it should (see [[IndexedJoinSelection]]). */
  private case class Choice(side: IndexSide, indexOnLeft: Boolean,
      decision: IndexedJoinSelection.Decision, inPlace: Boolean)

  private def choose(
      joinType: JoinType,
      leftKeys: Seq[Expression],
      rightKeys: Seq[Expression],
      left: LogicalPlan,
      right: LogicalPlan,
      hint: JoinHint): Option[Choice] = {
    val onRight = indexSide(right, rightKeys, leftKeys)
    val onLeft = indexSide(left, leftKeys, rightKeys)
    val picked = (onLeft, onRight) match {
      // Both sides indexed: the larger one stays in place, the smaller one moves.
      case (Some(l), Some(r)) =>
        if (l.relation.stats.sizeInBytes > r.relation.stats.sizeInBytes) Some(l -> true)
        else Some(r -> false)
      case (Some(l), None) => Some(l -> true)
      case (None, Some(r)) => Some(r -> false)
      case _ => None
    }
    picked.map { case (side, indexOnLeft) =>
      val (indexPlan, probePlan) = if (indexOnLeft) (left, right) else (right, left)
      val (indexHint, probeHint) =
        if (indexOnLeft) (hint.leftHint, hint.rightHint) else (hint.rightHint, hint.leftHint)
      val probeKey = normalized((if (indexOnLeft) rightKeys else leftKeys) (side.keyIndex))
      val broadcastSoFar = probeBroadcast(probePlan, probeKey, side.relation.data.numPartitions)
      val decision = IndexedJoinSelection.decide(
        HyperspaceConf.indexedJoinSelection(SparkSession.active),
        joinType, indexOnLeft, indexPlan, IndexedJoinSelection.rows(side.relation),
        side.relation.data.numPartitions, probePlan, indexHint, probeHint,
        SQLConf.get.autoBroadcastJoinThreshold, broadcastSoFar, countRows(probePlan, _))
      // A probe side adaptive execution already broadcast is a broadcast stage: it has no rows
      // to read in place.
      if (decision.broadcastProbe && broadcastSoFar == IndexedJoinSelection.NotBroadcastYet &&
        probeInPlace(joinType, indexOnLeft, side.relation.data)) {
        Choice(side, indexOnLeft,
          decision.copy(reason = "probe side read in place (local mode, every index " +
            s"partition cached) instead of broadcast: ${decision.reason}"), inPlace = true)
      } else Choice(side, indexOnLeft, decision, inPlace = false)
    }
  }

  /**
   * The rows of `plan` (an optimized plan), counted up to `upTo`: a job reading the plan under a
   * limit of `upTo` rows, so a probe side that keeps many rows stops early. None when counting is
   * off or the plan holds a finished adaptive stage (that stage is this query's; a count would
   * plan it anew). Adaptive execution plans a query again after every stage, and explain plans
   * it too: a deterministic plan's count is kept by its canonical form, so one query counts once.
   */
  private def countRows(plan: LogicalPlan, upTo: BigInt): Option[BigInt] = {
    val spark = SparkSession.active
    if (!HyperspaceConf.indexedJoinCountProbeRows(spark) || plan.exists(_.isInstanceOf[LogicalQueryStage])) {
      return None
    }
    val limit = upTo.min(BigInt(Int.MaxValue)).toInt
    // Dataset.count builds the aggregate (an `Aggregate` built here would be a shim: its shape
    // differs between Spark lines).
    def count: BigInt = BigInt(SparkInternals.ofRows(spark, Limit(Literal(limit), plan)).count())
    if (!plan.deterministic) Some(count)
    else Some(counts.getOrElseUpdate((plan.canonicalized, limit), count))
  }

  // A few plans' counts: each key holds its plan, so only the last few queries' probe sides.
  private val counts = new BoundedCache[(LogicalPlan, Int), BigInt](32)

  /**
   * Whether the probe side is a broadcast adaptive execution has already run, and its form: the
   * index's own only when keyed exactly as this join needs (a user's join key can have the same
   * shape as a partition number, e.g. `CAST(pmod(x, 16) AS BIGINT)`, and then it is Spark's).
   */
  private[indexed] def probeBroadcast(probePlan: LogicalPlan, probeKey: Expression, partitions: Int)
      : IndexedJoinSelection.ProbeBroadcast =
    probePlan match {
      case stage: LogicalQueryStage => stage.physicalPlan.outputPartitioning match {
          case BroadcastPartitioning(mode) =>
            val forIndex = IndexedJoinExec.probeBroadcastMode(probeKey, partitions, stage.physicalPlan.output)
            if (mode.canonicalized == forIndex.canonicalized) IndexedJoinSelection.BroadcastForIndex
            else IndexedJoinSelection.BroadcastForSpark
          case _ => IndexedJoinSelection.NotBroadcastYet
        }
      case _ => IndexedJoinSelection.NotBroadcastYet
    }

  /**
   * For every equi-join on an Indexed DataFrame's key in `plan` (an optimized logical plan), the
   * planner's decision: whether it probes the index, and why (with the sizes it decided on).
   * With adaptive execution, re-planning decides again with the sizes of finished stages.
   */
  def decisions(plan: LogicalPlan): Seq[IndexedJoinSelection.Decision] = plan.collect {
    case EquiJoin(joinType, leftKeys, rightKeys, _, left, right, hint) if supported(joinType) =>
      choose(joinType, leftKeys, rightKeys, left, right, hint).map(_.decision)
  }.flatten

  private def supported(joinType: JoinType): Boolean = joinType match {
    case _: InnerLike | LeftOuter | RightOuter | FullOuter | LeftSemi | LeftAnti => true
    case _ => false // ExistenceJoin (and null-aware anti joins, which have no equi-join keys)
  }

  /** One side of a join that is a filtered and projected Indexed DataFrame joined on its key. */
  private case class IndexSide(
      relation: IndexedRelation,
      filters: Seq[Expression],
      projects: Seq[NamedExpression],
      keyIndex: Int)

  private def indexSide(
      plan: LogicalPlan, keys: Seq[Expression], otherKeys: Seq[Expression]): Option[IndexSide] =
    plan match {
      case ProjectsAndFilters(projects, filters, rel: IndexedRelation) =>
        val key = rel.keyAttribute
        // The join side's own attributes that are the relation's key (possibly renamed).
        val keyIds = projects.collect {
          case a: Attribute if a.exprId == key.exprId => a.exprId
          case al @ Alias(a: Attribute, _) if a.exprId == key.exprId => al.exprId
        }.toSet
        val keyIndex = keys.indices.indexWhere { i =>
          stripNormalization(keys(i)) match {
            case a: Attribute => keyIds(a.exprId) && otherKeys(i).dataType == key.dataType
            case _ => false
          }
        }
        if (keyIndex < 0) None else Some(IndexSide(rel, filters, projects, keyIndex))
      case _ => None
    }

  private def stripNormalization(e: Expression): Expression = e match {
    case KnownFloatingPointNormalized(inner) => stripNormalization(inner)
    case org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero(inner) => inner
    case other => other
  }

  // The optimizer normalises floating point join keys already; this covers plans that bypass it.
  private def normalized(probeKey: Expression): Expression = probeKey.dataType match {
    case FloatType | DoubleType if !probeKey.isInstanceOf[KnownFloatingPointNormalized] =>
      KnownFloatingPointNormalized(
        org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero(probeKey))
    case _ => probeKey
  }

  /**
   * The key values of the first conjunct that is a key lookup, with the other conjuncts; None
   * when no conjunct is (then the rows are scanned).
   */
  private def lookupKeys(
      filters: Seq[Expression], key: Attribute): Option[(Seq[Any], Seq[Expression])] = {
    def isKey(e: Expression): Boolean = e match {
      case a: Attribute => a.semanticEquals(key)
      case _ => false
    }
    def values(e: Expression): Option[Seq[Any]] = e match {
      case EqualTo(k, l: Literal) if isKey(k) && l.dataType == key.dataType => Some(Seq(l.value))
      case EqualTo(l: Literal, k) if isKey(k) && l.dataType == key.dataType => Some(Seq(l.value))
      case EqualNullSafe(k, l: Literal)
          if isKey(k) && l.value != null &&
            l.dataType == key.dataType => Some(Seq(l.value))
      case EqualNullSafe(l: Literal, k)
          if isKey(k) && l.value != null &&
            l.dataType == key.dataType => Some(Seq(l.value))
      case In(k, list) if isKey(k) && list.forall {
            case l: Literal => l.dataType == key.dataType
            case _ => false
          } => Some(list.map(_.asInstanceOf[Literal].value))
      case InSet(k, set) if isKey(k) => Some(set.toSeq)
      // The optimizer rewrites `b = true` to `b` and `b = false` to `NOT b`.
      case k if isKey(k) && key.dataType == BooleanType => Some(Seq(true))
      case Not(k) if isKey(k) && key.dataType == BooleanType => Some(Seq(false))
      case _ => None
    }
    filters.iterator.zipWithIndex
      .map { case (f, i) => values(f).map(v => v -> filters.patch(i, Nil, 1)) }
      .collectFirst { case Some(found) => found }
  }
}
