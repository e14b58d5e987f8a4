package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BindReferences, Expression, In, Literal, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{LocalLimit, LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.EstimationUtils
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.{DoubleType, FloatType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.BoundedCache
import io.hyperspace.index.split.SplitIndex
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.{EquiJoin, ProjectsAndFilters}
import io.hyperspace.sources.FileSource

/**
 * An equi-join of a plain Parquet scan that has a split index on its join key with a small side
 * (Spark's estimate under `spark.sql.autoBroadcastJoinThreshold`): the small side's distinct
 * join keys are collected while planning (at most `joinPruning.maxKeys`), and the big side's
 * scan reads only the row groups the index locates for `key IN (those keys)`, through the same
 * seek and fallback as a filter ([[SplitSeekRule.seek]]).
 *
 * The join stays: the seek only leaves out row groups holding no row whose key is among the
 * small side's, and such rows join with nothing. That holds only where the big side is not
 * preserved by the join (inner, left semi, the inner side of an outer join), so other join
 * types are left alone; a NULL key never equals anything and is not collected.
 *
 * This is the planning-time variant (issue #19's option (b)): the small side runs once as its own
 * query when the plan is optimized, which is why it must be small, deterministic and read only
 * files or local rows. Its rows then replace it in the plan (a local relation, which Spark
 * broadcasts without running anything), so it is not run a second time when the query runs,
 * whether the big side is pruned or not. They are cached by the small side's plan and its files'
 * listing.
 *
 * The cost check comes before the small side runs: from the index's build statistics
 * ([[io.hyperspace.index.split.SeekLayout]]), the number of keys whose seek is expected to read at most `maxReadFraction` of
 * the big side's bytes, the limit at which a filter seek stops paying. No key pays (a small big side,
 * or keys spread over most row groups): nothing runs. More keys than that: the rows replace the
 * small side, the big side is scanned whole.
 */
object SplitJoinPruningRule extends IndexRewrite with Logging {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    val split = indexes.filter(SplitIndex.isSplit)
    if (split.isEmpty || !HyperspaceConf.splitJoinPruningEnabled(spark)) plan
    else plan transformDown {
      case j @ EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
        val pairs = leftKeys.zip(rightKeys)
        val leftBig = if (prunable(joinType, bigIsLeft = true)) prune(spark, split, left, right, pairs, log) else None
        val rightBig = if (leftBig.isEmpty && prunable(joinType, bigIsLeft = false)) {
          prune(spark, split, right, left, pairs.map(_.swap), log).map(_.swap)
        } else None
        leftBig.orElse(rightBig) match {
          case Some((l, r)) if !(l.eq(left) && r.eq(right)) => j.withNewChildren(Seq(l, r))
          case _ => j
        }
    }
  }

  /** Whether the join drops every row of the big side that matches no row of the other side. */
  private def prunable(joinType: JoinType, bigIsLeft: Boolean): Boolean = joinType match {
    case Inner => true
    case LeftSemi => true
    case LeftOuter => !bigIsLeft
    case RightOuter => bigIsLeft
    case _ => false
  }

  /**
   * (`big` with its scan narrowed to the row groups that can hold keys of `small`, `small` or its
   * rows), either unchanged, or None when `small` was not run. `pairs` are the join's (big side,
   * small side) key expressions.
   */
  private def prune(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      big: LogicalPlan,
      small: LogicalPlan,
      pairs: Seq[(Expression, Expression)],
      log: DecisionLog): Option[(LogicalPlan, LogicalPlan)] = {
    val (filters, relation, fs) = big match {
      case ProjectsAndFilters(_, filters, r: LogicalRelation) =>
        CandidateIndexes.sourceScan(r) match {
          case Some(fs) => (filters, r, fs)
          case None => return None
        }
      case _ => return None
    }
    // A key of the scan itself, compared by `=` with a value of the same type. Not floating
    // point: the join equates -0.0 with 0.0, which the index's hash buckets keep apart.
    val keyed = pairs.collect {
      case (a: AttributeReference, s)
          if relation.outputSet.contains(a) && a.dataType == s.dataType && s.deterministic &&
            a.dataType != FloatType && a.dataType != DoubleType => (a, s)
    }
    if (keyed.isEmpty) return None
    val source = FileSource(relation, fs)
    val ours = SplitSeekRule.indexesOf(indexes, source)
    val threshold = spark.sessionState.conf.autoBroadcastJoinThreshold
    if (threshold <= 0 || small.stats.sizeInBytes > threshold || !runnable(small)) return None
    val kept = filters.filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
    val resolver = spark.sessionState.conf.resolver
    def keyedOn(a: AttributeReference)(e: LogEntry): Boolean = SplitIndex.keyColumns(e.index) match {
      case Seq(k) => resolver(k, a.name)
      case _ => false
    }
    // The pair whose key a split index of this scan is keyed on alone; the first such.
    keyed.find { case (a, _) => ours.exists(keyedOn(a)) }.flatMap { case (key, smallKey) =>
      val onKey = ours.filter(keyedOn(key))
      val maxKeys = HyperspaceConf.splitJoinPruningMaxKeys(spark)
      val maxRead = HyperspaceConf.splitMaxReadFraction(spark)
      // The cost check, before anything runs: how many keys the most selective index can seek for.
      val layouts = onKey.flatMap(e => SplitSeekRule.layoutOf(e, source.listedFiles).map(e -> _))
      if (layouts.size < onKey.size) {
        onKey.filterNot(e => layouts.exists(_._1 eq e)).foreach(log.reject(_, Reason.NoLocationStatistics))
      }
      val budgets = layouts.map { case (e, l) => (e, l, l.keysWithin(maxRead, maxKeys.toLong)) }
      if (budgets.isEmpty) return None
      if (budgets.forall(_._3 == 0)) {
        budgets.foreach { case (e, l, _) => log.reject(e, Reason.JoinKeyNotSelective(l.estimate(1), maxRead)) }
        return None
      }
      val (_, bestLayout, budget) = budgets.maxBy(_._3)
      val collected = try rowsOf(spark, small)
      catch {
        case NonFatal(e) =>
          logWarning(s"Join pruning of ${relation.simpleString(3)} is not applied: $e")
          return None
      }
      collected match {
        case None =>
          onKey.foreach(log.reject(_, Reason.JoinSideTooManyRows(rowsCap(spark, small))))
          None
        case Some(rows) =>
          val local = small match {
            case _: LocalRelation => small
            case _ =>
              // Its rows, broadcast without running it again; unless they would not be broadcast.
              val l = LocalRelation(small.output, rows, small.isStreaming)
              if (l.stats.sizeInBytes <= threshold) l else small
          }
          val bound = BindReferences.bindReference(smallKey, small.output)
          val values = rows.iterator.map(bound.eval).filter(_ != null).toSeq.distinct
          if (values.size > budget) {
            val why =
              if (budget >= maxKeys) Reason.TooManyJoinKeys(maxKeys)
              else Reason.JoinKeysBeyondCost(values.size, budget, bestLayout.estimate(budget + 1), maxRead)
            onKey.foreach(log.reject(_, why))
            Some(big -> local)
          } else {
            val inKeys = In(key, values.map(Literal(_, key.dataType)))
            val sought = SplitSeekRule.seek(spark, onKey, (kept :+ inKeys).reduce(And), relation, log,
              s"${key.name} IN (the ${values.size} join key(s) of the other side)" +
                (if (kept.isEmpty) "" else s" AND ${kept.map(_.sql).mkString(" AND ")}"))
            Some(sought.map(s => big transformUp { case r: LogicalRelation if r eq relation => s }).getOrElse(big) ->
              local)
          }
      }
    }
  }

  /** Whether `plan` can run on its own as a query: deterministic, reading only files or local rows. */
  private def runnable(plan: LogicalPlan): Boolean =
    plan.deterministic && !plan.exists(_.expressions.exists(SubqueryExpression.hasSubquery)) &&
      plan.collectLeaves().forall {
        case r: LogicalRelation => r.relation.isInstanceOf[HadoopFsRelation]
        case _: LocalRelation => true
        case _ => false
      }

  /**
   * The most rows of a small side collected while planning: as many as a local relation under the
   * broadcast threshold holds (by Spark's size estimate of its rows), so the rows can replace the
   * side and still be broadcast, and the driver holds no more than a broadcast of them would.
   */
  private def rowsCap(spark: SparkSession, small: LogicalPlan): Int = {
    val rowBytes = EstimationUtils.getSizePerRow(small.output).max(1)
    (BigInt(spark.sessionState.conf.autoBroadcastJoinThreshold) / rowBytes).max(1).min(Int.MaxValue / 2).toInt
  }

  /**
   * The rows of `small` (copies, in Catalyst's internal form), or None when it has more than
   * [[rowsCap]]. Cached by the plan and its files' listing, because the optimizer applies the rule
   * more than once per query; a local relation's are its own.
   */
  private def rowsOf(spark: SparkSession, small: LogicalPlan): Option[Seq[InternalRow]] = small match {
    case l: LocalRelation => Some(l.data)
    case _ =>
      val cap = rowsCap(spark, small)
      val cacheKey = (small.canonicalized, dataOf(small), cap)
      rows.get(cacheKey).getOrElse {
        // One job, each task keeping at most one row past the cap (a side with more rows is read
        // that far per task). A global limit would run a job per batch of partitions, one after
        // the other: measured to cost more than the broadcast these rows replace.
        val collected = SparkInternals.ofRows(spark, LocalLimit(Literal(cap + 1), small))
          .queryExecution.executedPlan.executeCollect().toSeq
        val result = if (collected.size > cap) None else Some(collected)
        rows.put(cacheKey, result)
        result
      }
  }

  /**
   * A digest of the data `small` reads: every file its relations list, with its size, modification
   * time and the listing's per-file metadata (where a Delta deletion vector is named). Paths alone
   * would keep serving the keys of a file rewritten in place, and a key missing from them would
   * prune big-side rows that match.
   */
  private def dataOf(small: LogicalPlan): String = {
    val sha = java.security.MessageDigest.getInstance("SHA-256")
    small.collectLeaves().foreach {
      case r: LogicalRelation =>
        r.relation.asInstanceOf[HadoopFsRelation].location.listFiles(Nil, Nil).flatMap(_.files)
          .map { f =>
            val s = f.fileStatus
            val metadata = f.metadata.toSeq.map { case (k, v) => s"$k=$v" }.sorted.mkString(",")
            s"${s.getPath}\u0000${s.getLen}\u0000${s.getModificationTime}\u0000$metadata\u0001"
          }
          .sorted
          .foreach(line => sha.update(line.getBytes(java.nio.charset.StandardCharsets.UTF_8)))
      case _ =>
    }
    sha.digest().map("%02x".format(_)).mkString
  }

  private val rows = new BoundedCache[(LogicalPlan, String, Int), Option[Seq[InternalRow]]](
    32, 1000000L, _.fold(1L)(_.size.toLong + 1))
}
