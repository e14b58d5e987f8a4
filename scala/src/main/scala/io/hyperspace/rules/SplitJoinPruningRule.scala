package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BindReferences, BoundReference, Expression, In, Literal, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.adaptive.{BroadcastQueryStageExec, LogicalQueryStage}
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.execution.exchange.BroadcastExchangeLike
import org.apache.spark.sql.execution.hyperspace.BroadcastKeys
import org.apache.spark.sql.execution.joins.HashJoin
import org.apache.spark.sql.types.{DoubleType, FloatType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.split.SplitIndex
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.{EquiJoin, ProjectsAndFilters}
import io.hyperspace.sources.FileSource

/**
 * Join pruning: an equi-join of a plain Parquet scan (or a CSV or JSON one, whose file-level index
 * locates files) that has a split index on its join key with
 * a side Spark broadcasts reads only the row groups of the scan that the index locates for
 * `key IN (the broadcast's distinct keys)`, through the same seek and fallback as a filter
 * ([[SplitSeekRule.seek]]).
 *
 * It happens at run time, as Spark's dynamic partition pruning does for partition columns: under
 * adaptive execution the broadcast is built first, as its own query stage, and the rest of the
 * plan is optimized again before it runs ([[SplitJoinRuntimePruning]], a runtime optimizer rule).
 * The keys are read from the broadcast hash relation itself, at most one past the number that
 * pays, so nothing runs that Spark would not run anyway: a broadcast with more keys than pay
 * costs a walk over that many of its keys. (An earlier variant ran the small side while planning
 * and measured 0.5–0.87× against no pruning when its keys did not pay: the extra query's fixed
 * cost, and the collection of a non-selective side into the driver.)
 *
 * The join stays: the seek only leaves out row groups holding no row whose key is among the
 * broadcast's, and such rows join with nothing. That holds only where the big side is not
 * preserved by the join (inner, left semi, the inner side of an outer join), so other join
 * types are left alone; a NULL key never equals anything and is not in a hash relation.
 *
 * While planning, [[apply]] makes the cost check from the index's build statistics
 * ([[io.hyperspace.index.split.SeekLayout]]): the number of keys whose seek is expected to read
 * at most `maxReadFraction` of the big side's bytes. Its outcome goes to the decision log
 * (whyNot), as the run-time step cannot write there.
 */
object SplitJoinPruningRule extends IndexRewrite with Logging {

  /** Records, for whyNot, what join pruning will do at run time; the plan is not changed. */
  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    val split = indexes.filter(SplitIndex.isSplit)
    if (split.nonEmpty && HyperspaceConf.splitJoinPruningEnabled(spark)) {
      plan.foreach {
        case join: Join =>
          prunedSide(spark, split, join, log).foreach { case (big, ps) =>
            candidate(spark, split, big, ps, DecisionLog.Discard).foreach { c =>
              c.onKey.foreach(log.reject(_, Reason.JoinPrunedAtRunTime(c.budget, c.key.name)))
            }
          }
        case _ =>
      }
    }
    plan
  }

  /**
   * Whether join pruning will decide at run time whether to narrow a side of `join`: it is on,
   * adaptive execution runs the query (the run-time step needs it), and a side has a split index
   * on its join key while the other is broadcastable. Other rewrites leave that side's scan to it.
   */
  def decidesAtRunTime(spark: SparkSession, indexes: Seq[LogEntry], join: Join): Boolean = {
    val split = indexes.filter(SplitIndex.isSplit)
    split.nonEmpty && HyperspaceConf.splitJoinPruningEnabled(spark) &&
    spark.sessionState.conf.adaptiveExecutionEnabled &&
    prunedSide(spark, split, join, DecisionLog.Discard).isDefined
  }

  /** The side of `join` join pruning would narrow, with its (big, small) key pairs, if any. */
  private def prunedSide(spark: SparkSession, split: Seq[LogEntry], join: Join, log: DecisionLog)
      : Option[(LogicalPlan, Seq[(Expression, Expression)])] = join match {
    case EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
      val pairs = leftKeys.zip(rightKeys)
      val threshold = spark.sessionState.conf.autoBroadcastJoinThreshold
      def broadcastable(p: LogicalPlan) = threshold > 0 && p.stats.sizeInBytes <= threshold
      val planned = Seq((left, right, pairs, true), (right, left, pairs.map(_.swap), false))
      planned.find { case (big, small, ps, bigIsLeft) =>
        prunable(joinType, bigIsLeft) && broadcastable(small) && candidate(spark, split, big, ps, log).nonEmpty
      }.map { case (big, _, ps, _) => (big, ps) }
    case _ => None
  }

  /**
   * `plan` (the remaining logical plan of an adaptive query, whose finished stages are
   * [[LogicalQueryStage]]s) with the big side of each prunable join over a built broadcast
   * narrowed by a seek for the broadcast's keys.
   */
  def atRunTime(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan = {
    val split = indexes.filter(SplitIndex.isSplit)
    if (split.isEmpty) plan
    else plan transformDown {
      case j @ EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
        val pairs = leftKeys.zip(rightKeys)
        def pruned(big: LogicalPlan, small: LogicalPlan, smallKeys: Seq[Expression],
            ps: Seq[(Expression, Expression)], bigIsLeft: Boolean): Option[LogicalPlan] =
          if (!prunable(joinType, bigIsLeft)) None
          else builtBroadcast(small).flatMap(b => pruneAtRunTime(spark, split, big, smallKeys, ps, b))
        pruned(left, right, rightKeys, pairs, bigIsLeft = true).map(l => j.withNewChildren(Seq(l, right)))
          .orElse(pruned(right, left, leftKeys, pairs.map(_.swap), bigIsLeft = false)
              .map(r => j.withNewChildren(Seq(left, r))))
          .getOrElse(j)
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

  /** A scan join pruning can narrow: its relation, filters, the key and the indexes keyed on it. */
  private case class Candidate(
      relation: LogicalRelation,
      filters: Seq[Expression],
      key: AttributeReference,
      smallKey: Expression,
      onKey: Seq[LogEntry],
      budget: Long)

  /**
   * The scan under `big` (projections and filters over a plain file scan) with a split index keyed
   * on one of its join keys, and the most keys whose seek pays; None (with the reason in `log`
   * where there is one) when there is none or not even one key pays. `pairs` are the join's
   * (big side, other side) key expressions.
   */
  private def candidate(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      big: LogicalPlan,
      pairs: Seq[(Expression, Expression)],
      log: DecisionLog): Option[Candidate] = {
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
      val layouts = onKey.flatMap(e => SplitSeekRule.layoutOf(e, source.listedFiles).map(e -> _))
      onKey.filterNot(e => layouts.exists(_._1 eq e)).foreach(log.reject(_, Reason.NoLocationStatistics))
      val budgets = layouts.map { case (e, l) => (e, l, l.keysWithin(maxRead, maxKeys.toLong)) }
      if (budgets.isEmpty) None
      else if (budgets.forall(_._3 == 0)) {
        budgets.foreach { case (e, l, _) => log.reject(e, Reason.JoinKeyNotSelective(l.estimate(1), maxRead)) }
        None
      } else {
        val kept = filters.filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
        Some(Candidate(relation, kept, key, smallKey, onKey, budgets.map(_._3).max))
      }
    }
  }

  /**
   * A broadcast hash relation already built for `small`, a finished adaptive query stage: its
   * exchange, its key expressions and its distinct keys.
   */
  private case class Built(exchange: BroadcastExchangeLike, keys: Seq[Expression], rows: () => Iterator[InternalRow])

  private def builtBroadcast(small: LogicalPlan): Option[Built] = small match {
    case LogicalQueryStage(_, stage: BroadcastQueryStageExec) if stage.isMaterialized =>
      BroadcastKeys.of(stage.broadcast).map { case (keys, rows) => Built(stage.broadcast, keys, rows) }
    case _ => None
  }

  /**
   * `big` with its scan narrowed to the row groups that can hold the keys of the broadcast
   * `built` of the other side (whose join keys, in the join's order, are `smallKeys`); None when the
   * broadcast's keys cannot be read, are more than pay, or the seek falls back.
   */
  private def pruneAtRunTime(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      big: LogicalPlan,
      smallKeys: Seq[Expression],
      pairs: Seq[(Expression, Expression)],
      built: Built): Option[LogicalPlan] =
    candidate(spark, indexes, big, pairs, DecisionLog.Discard).flatMap { c =>
      val position = smallKeys.indexWhere(_.semanticEquals(c.smallKey))
      val buildOutput = built.exchange.child.output
      val bound = smallKeys.map(k => BindReferences.bindReference(k, buildOutput, allowFailures = true))
      val rewritten = HashJoin.rewriteKeyExpr(bound)
      // The hash relation's keys are the join's keys as the join was planned (packed into one long
      // where they fit); anything else means a reading of its keys could be wrong: no pruning.
      val sameKeys = position >= 0 && bound.forall(!_.exists(_.isInstanceOf[AttributeReference])) &&
        rewritten.size == built.keys.size &&
        rewritten.zip(built.keys).forall { case (a, b) => a.semanticEquals(b) }
      if (!sameKeys) None
      else {
        val value =
          if (rewritten.size == 1 && rewritten != bound) HashJoin.extractKeyExprAt(bound, position)
          else BoundReference(position, bound(position).dataType, bound(position).nullable)
        val values = new java.util.LinkedHashSet[Any]()
        val keys = built.rows()
        while (keys.hasNext && values.size <= c.budget) {
          val v = value.eval(keys.next())
          if (v != null) values.add(v)
        }
        if (values.size > c.budget || values.isEmpty) None
        else {
          import scala.jdk.CollectionConverters._
          val inKeys = In(c.key, values.asScala.toSeq.map(Literal(_, c.key.dataType)))
          SplitSeekRule.seek(spark, c.onKey, (c.filters :+ inKeys).reduce(And), c.relation, DecisionLog.Discard,
            s"${c.key.name} IN (the ${values.size} join key(s) of the other side)" +
              (if (c.filters.isEmpty) "" else s" AND ${c.filters.map(_.sql).mkString(" AND ")}"))
            .map(s => big transformUp { case r: LogicalRelation if r eq c.relation => s })
        }
      }
    }
}

/**
 * Runs join pruning ([[SplitJoinPruningRule.atRunTime]]) when adaptive execution optimizes the
 * rest of a query again after a stage finished; installed by the session extension as a runtime
 * optimizer rule. A failure keeps the plan: a missed pruning must never fail a query (except an
 * audit that found skipped rows).
 */
case class SplitJoinRuntimePruning(spark: SparkSession) extends Rule[LogicalPlan] with Logging {
  override def apply(plan: LogicalPlan): LogicalPlan =
    try {
      // The index catalog is read only where a built broadcast could prune something: adaptive
      // execution runs this after every stage of every query.
      val broadcastBuilt = plan.exists {
        case LogicalQueryStage(_, stage: BroadcastQueryStageExec) => stage.isMaterialized
        case _ => false
      }
      if (!broadcastBuilt || !HyperspaceConf.applyEnabled(spark) || !HyperspaceConf.splitJoinPruningEnabled(spark)) {
        plan
      } else SplitJoinPruningRule.atRunTime(spark, plan, CandidateIndexes.active(spark))
    } catch {
      case e: SplitSeekAudit.AuditFailure => throw e
      case NonFatal(e) =>
        logWarning(s"Join pruning is not applied: $e", e)
        plan
    }
}
