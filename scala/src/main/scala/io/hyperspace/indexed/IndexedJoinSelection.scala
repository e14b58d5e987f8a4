package io.hyperspace.indexed

import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.logical.{BROADCAST, HintInfo, LogicalPlan}
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.EstimationUtils

/**
 * Whether an equi-join with an Indexed DataFrame on one side should probe the index or be left
 * to Spark's own join selection, decided from the same sizes Spark decides with.
 *
 * The indexed join never moves the index but always moves the probe side: it shuffles it, or
 * broadcasts it and has every index partition hash every probe row to keep its own. Spark's
 * alternatives move the small side once and stream the other. Two shapes make Spark's plan the
 * cheaper one, and then the strategy steps aside (the index side is then an [[IndexedScanExec]]
 * feeding Spark's join):
 *
 *  - the index side is small enough to broadcast, Spark can build a broadcast hash join on it for
 *    this join type, and it is smaller than the probe side: Spark broadcasts the index side and
 *    scans the probe side once, instead of shuffling or broadcasting the big side;
 *  - the probe side is small enough to broadcast and Spark can build on it, but every index
 *    partition filtering every probe row (partitions × probe rows) is more work than Spark's
 *    broadcast hash join streaming the index rows once.
 *
 * The probe rows of that second shape are the probe side's after its filters. Without column
 * statistics Spark's estimate of a filtered plan is its input's size over a row's width, the same
 * whatever the filter leaves: a filter keeping 100 of 36,800 rows was estimated at 36,800 and
 * left to Spark, which then ran at 0.21–0.58× of the plain cached join while the index join ran
 * at 1.24–1.72× (issue #55). So when only a size-derived estimate puts the probe side over the
 * rows the index join can take, its rows are counted (`countProbe`, up to one past that bound:
 * the count stops being needed there) and the count decides.
 *
 * A BROADCAST hint on the probe side keeps the indexed join with the probe broadcast (the hint
 * says how to move the probe side, which the indexed join honours); a BROADCAST hint on the
 * index side asks for Spark's broadcast of it, which is then what runs.
 */
object IndexedJoinSelection {

  /** The mode that always probes the index when it can (the behaviour before sizes counted). */
  val AlwaysIndex = "index"

  /** The default: probe the index only when Spark's own plan is not cheaper by size. */
  val CostBased = "cost"

  /**
   * What the strategy does with one join.
   *
   * @param useIndex plan an [[IndexedJoinExec]]; otherwise leave the join to Spark
   * @param broadcastProbe (with useIndex) broadcast the probe side instead of shuffling it
   * @param reason why, with the sizes it was decided on (shown by explain and [[decisions]])
   * @param probeRows the probe side's rows it was decided on (counted, or estimated)
   */
  final case class Decision(useIndex: Boolean, broadcastProbe: Boolean, reason: String, probeRows: BigInt)

  /**
   * The probe side's rows as the decision knows them: `counted` when the rows were counted (then
   * `rows` is at most the bound counted to plus one), else the plan's estimate.
   */
  final case class ProbeRows(rows: BigInt, counted: Boolean, bound: Option[BigInt]) {
    def describe: String =
      if (!counted) s"~$rows rows estimated"
      else if (bound.exists(rows > _)) s"more than ${bound.get} rows counted"
      else s"$rows rows counted"
  }

  /**
   * The decision for a join of an index side (`indexPlan`, over `indexRows` rows of the whole
   * Indexed DataFrame, in `partitions` partitions) with `probePlan`. `countProbe(n)` counts the
   * probe side's rows up to `n` (the count, or `n` when there are at least `n`), None when it
   * does not count.
   */
  def decide(
      mode: String,
      joinType: JoinType,
      indexOnLeft: Boolean,
      indexPlan: LogicalPlan,
      indexRows: BigInt,
      partitions: Int,
      probePlan: LogicalPlan,
      indexHint: Option[HintInfo],
      probeHint: Option[HintInfo],
      broadcastThreshold: Long,
      probeBroadcast: ProbeBroadcast = NotBroadcastYet,
      countProbe: BigInt => Option[BigInt] = _ => None): Decision = {
    val probeBytes = probePlan.stats.sizeInBytes
    val indexBytes = indexPlan.stats.sizeInBytes
    val estimated = ProbeRows(rows(probePlan), counted = false, bound = None)
    // The most probe rows every partition may filter before Spark's join streaming the index is
    // cheaper: partitions × rows > indexRows exactly when rows > indexRows / partitions.
    val mostRows = indexRows / partitions.max(1)
    def sizes(p: ProbeRows) = s"index side $indexBytes B, probe side $probeBytes B (${p.describe}), " +
      s"index $indexRows rows in $partitions partitions"
    def decision(useIndex: Boolean, broadcastProbe: Boolean, reason: ProbeRows => String, p: ProbeRows = estimated) =
      Decision(useIndex, broadcastProbe, reason(p), p.rows)
    def hinted(h: Option[HintInfo]) = h.exists(_.strategy.contains(BROADCAST))
    val probeSmall = broadcastThreshold >= 0 && probeBytes <= broadcastThreshold
    val indexSmall = broadcastThreshold >= 0 && indexBytes <= broadcastThreshold
    // Which side Spark's broadcast hash join may build on for this join type.
    val sparkCanBuildIndex = if (indexOnLeft) canBuildLeft(joinType) else canBuildRight(joinType)
    val sparkCanBuildProbe = if (indexOnLeft) canBuildRight(joinType) else canBuildLeft(joinType)

    val sparkCanBroadcastProbe = probeSmall && sparkCanBuildProbe
    // Only a size-derived estimate over that bound is counted, and only where the rows decide:
    // an optimizer's row count (column statistics, a cached relation, a finished adaptive stage)
    // already accounts for filters.
    lazy val probe =
      if (!sparkCanBroadcastProbe || estimated.rows <= mostRows || probePlan.stats.rowCount.isDefined) estimated
      else countProbe(mostRows + 1).map(n => ProbeRows(n, counted = true, Some(mostRows))).getOrElse(estimated)

    // Adaptive re-planning after the probe side's broadcast ran: that broadcast is paid for and
    // its form fixes the join (changing the decision now would re-broadcast the rows, or leave
    // Spark a nested loop join over a broadcast it cannot hash).
    if (probeBroadcast == BroadcastForIndex) {
      decision(useIndex = true, broadcastProbe = true,
        p => s"probe side already broadcast to the index partitions; ${sizes(p)}")
    } else if (probeBroadcast == BroadcastForSpark) {
      decision(useIndex = false, broadcastProbe = false,
        p => s"probe side already broadcast for Spark's hash join; ${sizes(p)}")
    } else if (hinted(probeHint)) {
      decision(useIndex = true, broadcastProbe = true, p => s"probe side hinted BROADCAST; ${sizes(p)}")
    } else if (mode == AlwaysIndex) {
      decision(useIndex = true, probeSmall, p => s"joinSelection=$AlwaysIndex; ${sizes(p)}")
    } else if (hinted(indexHint) && sparkCanBuildIndex) {
      decision(useIndex = false, broadcastProbe = false,
        p => s"index side hinted BROADCAST: Spark broadcasts it; ${sizes(p)}")
    } else if (indexSmall && sparkCanBuildIndex && indexBytes < probeBytes) {
      decision(useIndex = false, broadcastProbe = false,
        p =>
          "the index side is below " +
            s"autoBroadcastJoinThreshold ($broadcastThreshold B) and smaller than the probe side: " +
            s"Spark broadcasts it and scans the probe side once; ${sizes(p)}")
    } else if (sparkCanBroadcastProbe && probe.rows * partitions > indexRows) {
      decision(useIndex = false, broadcastProbe = false,
        p =>
          s"filtering the broadcast probe side " +
            s"in every partition ($partitions × ${p.rows} rows) costs more than Spark's broadcast " +
            s"hash join streaming the $indexRows index rows; ${sizes(p)}", probe)
    } else if (probeSmall) {
      decision(useIndex = true, broadcastProbe = true,
        p =>
          s"probe side broadcast to the index " +
            s"partitions ($partitions × ${p.rows} ≤ $indexRows index rows); ${sizes(p)}", probe)
    } else {
      decision(useIndex = true, broadcastProbe = false,
        p =>
          "probe side shuffled to the index " +
            s"partitions (neither side is small enough for Spark to broadcast it cheaper); ${sizes(p)}")
    }
  }

  /** Whether adaptive execution already broadcast the probe side, and in which form. */
  sealed trait ProbeBroadcast
  case object NotBroadcastYet extends ProbeBroadcast
  /** Broadcast for the indexed join (rows grouped by index partition). */
  case object BroadcastForIndex extends ProbeBroadcast
  /** Broadcast in another form (Spark's hashed relation). */
  case object BroadcastForSpark extends ProbeBroadcast

  /** Rows of a plan: its row count when known, else its size over the row width. */
  private[indexed] def rows(plan: LogicalPlan): BigInt = {
    val stats = plan.stats
    stats.rowCount.getOrElse {
      val width = EstimationUtils.getSizePerRow(plan.output).max(BigInt(1))
      (stats.sizeInBytes + width - 1) / width
    }
  }

  // As Spark's JoinSelectionHelper: the join types a broadcast hash join can build on each side.
  private def canBuildLeft(joinType: JoinType): Boolean = joinType match {
    case _: InnerLike | RightOuter => true
    case _ => false
  }

  private def canBuildRight(joinType: JoinType): Boolean = joinType match {
    case _: InnerLike | LeftOuter | LeftSemi | LeftAnti | _: ExistenceJoin => true
    case _ => false
  }
}
