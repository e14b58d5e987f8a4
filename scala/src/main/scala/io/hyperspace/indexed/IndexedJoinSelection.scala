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
   */
  final case class Decision(useIndex: Boolean, broadcastProbe: Boolean, reason: String)

  /**
   * The decision for a join of an index side (`indexPlan`, over `indexRows` rows of the whole
   * Indexed DataFrame, in `partitions` partitions) with `probePlan`.
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
      probeBroadcast: ProbeBroadcast = NotBroadcastYet): Decision = {
    val probeBytes = probePlan.stats.sizeInBytes
    val indexBytes = indexPlan.stats.sizeInBytes
    val probeRows = rows(probePlan)
    val sizes = s"index side $indexBytes B, probe side $probeBytes B (~$probeRows rows), " +
      s"index $indexRows rows in $partitions partitions"
    def hinted(h: Option[HintInfo]) = h.exists(_.strategy.contains(BROADCAST))
    val probeSmall = broadcastThreshold >= 0 && probeBytes <= broadcastThreshold
    val indexSmall = broadcastThreshold >= 0 && indexBytes <= broadcastThreshold
    // Which side Spark's broadcast hash join may build on for this join type.
    val sparkCanBuildIndex = if (indexOnLeft) canBuildLeft(joinType) else canBuildRight(joinType)
    val sparkCanBuildProbe = if (indexOnLeft) canBuildRight(joinType) else canBuildLeft(joinType)

    // Adaptive re-planning after the probe side's broadcast ran: that broadcast is paid for and
    // its form fixes the join (changing the decision now would re-broadcast the rows, or leave
    // Spark a nested loop join over a broadcast it cannot hash).
    if (probeBroadcast == BroadcastForIndex) {
      Decision(useIndex = true, broadcastProbe = true,
        s"probe side already broadcast to the index partitions; $sizes")
    } else if (probeBroadcast == BroadcastForSpark) {
      Decision(useIndex = false, broadcastProbe = false,
        s"probe side already broadcast for Spark's hash join; $sizes")
    } else if (hinted(probeHint)) {
      Decision(useIndex = true, broadcastProbe = true, s"probe side hinted BROADCAST; $sizes")
    } else if (mode == AlwaysIndex) {
      Decision(useIndex = true, probeSmall, s"joinSelection=$AlwaysIndex; $sizes")
    } else if (hinted(indexHint) && sparkCanBuildIndex) {
      Decision(useIndex = false, broadcastProbe = false,
        s"index side hinted BROADCAST: Spark broadcasts it; $sizes")
    } else if (indexSmall && sparkCanBuildIndex && indexBytes < probeBytes) {
      Decision(useIndex = false, broadcastProbe = false,
        "the index side is below " +
          s"autoBroadcastJoinThreshold ($broadcastThreshold B) and smaller than the probe side: " +
          s"Spark broadcasts it and scans the probe side once; $sizes")
    } else if (probeSmall && sparkCanBuildProbe && probeRows * partitions > indexRows) {
      Decision(useIndex = false, broadcastProbe = false,
        s"filtering the broadcast probe side " +
          s"in every partition ($partitions × $probeRows rows) costs more than Spark's broadcast " +
          s"hash join streaming the $indexRows index rows; $sizes")
    } else if (probeSmall) {
      Decision(useIndex = true, broadcastProbe = true,
        s"probe side broadcast to the index " +
          s"partitions ($partitions × $probeRows ≤ $indexRows index rows); $sizes")
    } else {
      Decision(useIndex = true, broadcastProbe = false,
        "probe side shuffled to the index " +
          s"partitions (neither side is small enough for Spark to broadcast it cheaper); $sizes")
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
