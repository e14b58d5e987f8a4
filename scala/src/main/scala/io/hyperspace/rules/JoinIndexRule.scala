package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, KnownFloatingPointNormalized}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.log.LogEntry

/**
 * Equi-join whose keys on a side are exactly an index's indexed columns (as a set), with the
 * side's other needed columns covered → that side reads the index, a relation bucketed on the
 * join keys. With both sides indexed on matching columns and equal bucket counts, the sort-merge
 * join needs no Exchange; with one side indexed, only the other side is shuffled.
 *
 * Choice of pair: both sides with equal bucket counts first (no shuffle at all), then the most
 * buckets (more parallelism), then fewest bytes read, then names.
 *
 * A join Spark will run as a broadcast hash join ([[BroadcastSides]]: a broadcast hint, or a side
 * within `spark.sql.autoBroadcastJoinThreshold` by Spark's own estimate) is left alone: streaming
 * the big side past a broadcast table beats sort-merging two bucketed index scans. The filter
 * rule may still read either side from an index that serves a filter on it.
 */
object JoinIndexRule extends IndexRewrite {

  private val supportedJoinTypes: Set[JoinType] =
    Set(Inner, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti)

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan =
    plan transformUp {
      case join @ ExtractEquiJoinKeys(joinType, leftKeys, rightKeys, _, _, left, right, _)
          if supportedJoinTypes.contains(joinType) &&
            (leftKeys ++ rightKeys).forall(keyAttribute(_).isDefined) &&
            BroadcastSides.of(join.asInstanceOf[Join], spark.sessionState.conf).isEmpty =>
        val lk = leftKeys.flatMap(keyAttribute)
        val rk = rightKeys.flatMap(keyAttribute)
        val leftOptions = sideCandidates(spark, indexes, left, lk)
        val rightOptions = sideCandidates(spark, indexes, right, rk)
        choose(spark, leftOptions, rightOptions, lk, rk) match {
          case (None, None) => join
          case (l, r) =>
            join.asInstanceOf[Join].copy(
              left = l.map(e => useIndex(spark, left, e)).getOrElse(left),
              right = r.map(e => useIndex(spark, right, e)).getOrElse(right))
        }
    }

  /**
   * The column a join key is. Floating-point keys arrive wrapped in Spark's NaN / -0.0
   * normalisation once the plan is fully optimized (as whatIf and whyNot see it).
   */
  private def keyAttribute(key: Expression): Option[Attribute] = key match {
    case a: AttributeReference => Some(a)
    case KnownFloatingPointNormalized(NormalizeNaNAndZero(a: AttributeReference)) => Some(a)
    case _ => None
  }

  /** Indexes usable on `side` whose indexed columns are exactly the side's join keys. */
  private def sideCandidates(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      side: LogicalPlan,
      keys: Seq[Attribute]): Seq[IndexCandidate] = side match {
    case ScanChain(relation, needed) if keys.forall(k => relation.outputSet.contains(k)) =>
      val resolver = spark.sessionState.conf.resolver
      CandidateIndexes.forRelation(spark, indexes, relation, needed)
        .filter(c => CandidateIndexes.keyedOn(c.entry, keys, resolver))
    case _ => Nil
  }

  /**
   * Whether the two indexes bucket on paired columns in the same order (left column i joins
   * right column i), which co-partitioning needs.
   */
  private def aligned(spark: SparkSession, l: LogEntry, r: LogEntry,
      lk: Seq[Attribute], rk: Seq[Attribute]): Boolean = {
    val resolver = spark.sessionState.conf.resolver
    l.index.indexedColumns.size == r.index.indexedColumns.size &&
      l.index.indexedColumns.zip(r.index.indexedColumns).forall { case (lc, rc) =>
        lk.zip(rk).exists { case (a, b) => resolver(a.name, lc) && resolver(b.name, rc) }
      }
  }

  private def choose(spark: SparkSession, left: Seq[IndexCandidate], right: Seq[IndexCandidate],
      lk: Seq[Attribute], rk: Seq[Attribute]): (Option[IndexCandidate], Option[IndexCandidate]) = {
    val pairs = for (l <- left; r <- right if aligned(spark, l.entry, r.entry, lk, rk)) yield (l, r)
    if (pairs.nonEmpty) {
      val (l, r) = pairs.minBy { case (l, r) =>
        val (lb, rb) = (l.entry.index.numBuckets, r.entry.index.numBuckets)
        (if (lb == rb) 0 else 1, -math.min(lb, rb), l.bytesRead + r.bytesRead, l.name, r.name)
      }
      (Some(l), Some(r))
    } else {
      // One side only: the one whose index reads fewer bytes.
      val best = (left.map(e => (e, true)) ++ right.map(e => (e, false)))
        .sortBy { case (c, isLeft) => (c.bytesRead, c.name, !isLeft) }.headOption
      best match {
        case Some((e, true)) => (Some(e), None)
        case Some((e, false)) => (None, Some(e))
        case None => (None, None)
      }
    }
  }

  private def useIndex(spark: SparkSession, side: LogicalPlan, candidate: IndexCandidate): LogicalPlan =
    side transformUp {
      case r: LogicalRelation if CandidateIndexes.sourceScan(r).isDefined =>
        HybridScan.replace(spark, candidate, r, keepBuckets = true)
    }
}
