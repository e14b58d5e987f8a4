package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, And, AttributeReference, Expression, In, Literal, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan, Project}
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
 * files or local rows. Its keys are cached by the small side's plan and its files' listing.
 */
object SplitJoinPruningRule extends IndexRewrite with Logging {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    val split = indexes.filter(SplitIndex.isSplit)
    if (split.isEmpty || !HyperspaceConf.splitJoinPruningEnabled(spark)) plan
    else plan transformDown {
      case j @ EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
        val pairs = leftKeys.zip(rightKeys)
        val newLeft = if (prunable(joinType, bigIsLeft = true)) prune(spark, split, left, right, pairs, log) else None
        val newRight = if (newLeft.isEmpty && prunable(joinType, bigIsLeft = false)) {
          prune(spark, split, right, left, pairs.map(_.swap), log)
        } else None
        if (newLeft.isEmpty && newRight.isEmpty) j
        else j.withNewChildren(Seq(newLeft.getOrElse(left), newRight.getOrElse(right)))
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
   * `big` with its scan narrowed to the row groups that can hold keys of `small`, or None.
   * `pairs` are the join's (big side, small side) key expressions.
   */
  private def prune(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      big: LogicalPlan,
      small: LogicalPlan,
      pairs: Seq[(Expression, Expression)],
      log: DecisionLog): Option[LogicalPlan] = {
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
          if relation.outputSet.contains(a) && a.dataType == s.dataType &&
            a.dataType != FloatType && a.dataType != DoubleType => (a, s)
    }
    if (keyed.isEmpty) return None
    val ours = SplitSeekRule.indexesOf(indexes, FileSource(relation, fs))
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
      val values = try keysOf(spark, small, smallKey)
      catch {
        case NonFatal(e) =>
          logWarning(s"Join pruning of ${relation.simpleString(3)} is not applied: $e")
          return None
      }
      values match {
        case None =>
          onKey.foreach(log.reject(_, Reason.TooManyJoinKeys(HyperspaceConf.splitJoinPruningMaxKeys(spark))))
          None
        case Some(vs) =>
          val inKeys = In(key, vs.map(Literal(_, key.dataType)))
          val sought = SplitSeekRule.seek(spark, onKey, (kept :+ inKeys).reduce(And), relation, log,
            s"${key.name} IN (the ${vs.size} join key(s) of the other side)" +
              (if (kept.isEmpty) "" else s" AND ${kept.map(_.sql).mkString(" AND ")}"))
          sought.map(s => big transformUp { case r: LogicalRelation if r eq relation => s })
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
   * The distinct non-NULL values of `key` over `small` (Catalyst's internal form), or None when
   * there are more than `maxKeys`. Cached by the plan and its files' listing, because the
   * optimizer applies the rule more than once per query.
   */
  private def keysOf(spark: SparkSession, small: LogicalPlan, key: Expression): Option[Seq[Any]] = {
    val max = HyperspaceConf.splitJoinPruningMaxKeys(spark)
    val cacheKey = (small.canonicalized, key.canonicalized, dataOf(small), max)
    keys.get(cacheKey).getOrElse {
      val keyOnly = SparkInternals.ofRows(spark, Project(Seq(Alias(key, "__hs_join_key")()), small))
        .where("__hs_join_key IS NOT NULL")
      def collect(df: org.apache.spark.sql.DataFrame, limit: Int): Seq[Any] =
        df.limit(limit).queryExecution.executedPlan.executeCollect().map(_.get(0, key.dataType)).toSeq
      // A few times `max` rows are deduplicated in the driver: a distinct in Spark is a shuffle,
      // measured to cost more than the seek saves on a small side; only a side with more rows
      // than that pays for it.
      val rowsCap = math.min(Int.MaxValue / 2L, max * 8L).toInt
      val rows = collect(keyOnly, rowsCap + 1)
      val collected = if (rows.size <= rowsCap) rows.distinct else collect(keyOnly.distinct(), max + 1)
      val result = if (collected.size > max) None else Some(collected)
      keys.put(cacheKey, result)
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

  private val keys = new BoundedCache[(LogicalPlan, Expression, String, Int), Option[Seq[Any]]](
    32, 1000000L, _.fold(1L)(_.size.toLong + 1))
}
