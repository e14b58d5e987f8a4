package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BindReferences, BoundReference, EqualTo, Expression, In, InSet, Literal, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.adaptive.{BroadcastQueryStageExec, LogicalQueryStage}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.exchange.BroadcastExchangeLike
import org.apache.spark.sql.execution.hyperspace.BroadcastKeys
import org.apache.spark.sql.execution.joins.HashJoin
import org.apache.spark.sql.types.{DoubleType, FloatType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.split.SplitIndex
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.{EquiJoin, FileRelation, ProjectsAndFilters}
import io.hyperspace.sources.{FileSource, TableFormats, TableScanListing}

/**
 * Join pruning: an equi-join of a file scan with a side Spark broadcasts reads only the
 * parts of the scan that can hold the broadcast's keys — found by a split index keyed on the join
 * key (the row groups it locates for `key IN (the broadcast's distinct keys)`, through the same
 * seek and fallback as a filter: [[SplitSeekRule.seek]]; files for a CSV or JSON source's
 * file-level index); where there is none, by a covering index led by the key and built with
 * lineage that does not cover the query (the files its buckets name for the keys:
 * [[CoveringJoinProbe]]); else by the sketches of a data skipping index on the key (the files
 * whose min/max, bloom filter or value list can hold one of the keys:
 * [[DataSkippingRule.pruneForJoin]]).
 *
 * It happens at run time, as Spark's dynamic partition pruning does for partition columns: under
 * adaptive execution the broadcast is built first, as its own query stage, and the rest of the
 * plan is optimized again before it runs ([[JoinRuntimePruning]], a runtime optimizer rule).
 * The keys are read from the broadcast hash relation itself, at most one past the number that
 * pays, so nothing runs that Spark would not run anyway: a broadcast with more keys than pay
 * costs a walk over that many of its keys. (An earlier variant ran the small side while planning
 * and measured 0.5–0.87× against no pruning when its keys did not pay: the extra query's fixed
 * cost, and the collection of a non-selective side into the driver.)
 *
 * The join stays: the pruned scan only leaves out row groups or files holding no row whose key is
 * among the broadcast's, and such rows join with nothing. That holds only where the big side is not
 * preserved by the join (inner, left semi, the inner side of an outer join), so other join
 * types are left alone; a NULL key never equals anything and is not in a hash relation.
 *
 * While planning, [[apply]] makes the split index's cost check from its build statistics
 * ([[io.hyperspace.index.split.SeekLayout]]): the number of keys whose seek is expected to read
 * at most `maxReadFraction` of the big side's bytes (sketches cost a read of the small sketch
 * table: they take up to their `maxKeys`). Its outcome goes to the decision log (whyNot), as the
 * run-time step cannot write there.
 */
object JoinPruningRule extends IndexRewrite with PredicateHelper with Logging {

  /** Records, for whyNot, what join pruning will do at run time; the plan is not changed. */
  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    val usable = Usable(spark, indexes)
    if (usable.any) {
      plan.foreach {
        case join: Join =>
          prunedSide(spark, usable, join, log).foreach { case (big, ps) =>
            candidate(spark, usable, big, ps, DecisionLog.Discard).foreach { c =>
              val reason = c.probe match {
                case Probe.Sketches => Reason.JoinSkippedAtRunTime(c.budget, c.key.name)
                case Probe.CoveringBuckets => Reason.JoinPrunedByBucketsAtRunTime(c.budget, c.key.name)
                case Probe.SplitSeek => Reason.JoinPrunedAtRunTime(c.budget, c.key.name)
              }
              c.onKey.foreach(log.reject(_, reason))
            }
          }
        case _ =>
      }
    }
    plan
  }

  /**
   * Whether join pruning will decide at run time whether to narrow a side of `join` by a split
   * index: it is on, adaptive execution runs the query (the run-time step needs it), and a side
   * has a split index on its join key while the other is broadcastable. Other rewrites leave that
   * side's scan to it. (Sketches and a covering index's buckets leave it to them: a covering
   * index read instead of the scan reads less than the scan's files a sketch keeps, and the
   * buckets are only probed for an index that does not cover the scan.)
   */
  def decidesAtRunTime(spark: SparkSession, indexes: Seq[LogEntry], join: Join): Boolean = {
    val splitOnly = Usable(spark, indexes).copy(sketches = Nil, covering = Nil)
    splitOnly.any && spark.sessionState.conf.adaptiveExecutionEnabled &&
    prunedSide(spark, splitOnly, join, DecisionLog.Discard).isDefined
  }

  /** The indexes join pruning may use: split, data skipping and covering ones, each where turned on. */
  private case class Usable(split: Seq[LogEntry], sketches: Seq[LogEntry], covering: Seq[LogEntry] = Nil) {
    def any: Boolean = split.nonEmpty || sketches.nonEmpty || covering.nonEmpty
  }

  private object Usable {
    def apply(spark: SparkSession, indexes: Seq[LogEntry]): Usable = Usable(
      if (HyperspaceConf.splitJoinPruningEnabled(spark)) indexes.filter(SplitIndex.isSplit) else Nil,
      if (HyperspaceConf.sketchJoinPruningEnabled(spark)) indexes.filter(DataSkippingRule.concerns) else Nil,
      if (HyperspaceConf.coveringJoinPruningEnabled(spark)) indexes.filter(CoveringJoinProbe.concerns) else Nil)
  }

  /** The side of `join` join pruning would narrow, with its (big, small) key pairs, if any. */
  private def prunedSide(spark: SparkSession, usable: Usable, join: Join, log: DecisionLog)
      : Option[(LogicalPlan, Seq[(Expression, Expression)])] = join match {
    case EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
      val pairs = leftKeys.zip(rightKeys)
      val threshold = spark.sessionState.conf.autoBroadcastJoinThreshold
      def broadcastable(p: LogicalPlan) = threshold > 0 && p.stats.sizeInBytes <= threshold
      val planned = Seq((left, right, pairs, true), (right, left, pairs.map(_.swap), false))
      planned.find { case (big, small, ps, bigIsLeft) =>
        prunable(joinType, bigIsLeft) && broadcastable(small) && candidate(spark, usable, big, ps, log).nonEmpty
      }.map { case (big, _, ps, _) => (big, ps) }
    case _ => None
  }

  /**
   * `plan` (the remaining logical plan of an adaptive query, whose finished stages are
   * [[LogicalQueryStage]]s) with the big side of each prunable join over a built broadcast
   * narrowed to what can hold the broadcast's keys.
   */
  def atRunTime(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan = {
    val usable = Usable(spark, indexes)
    if (!usable.any) plan
    else plan transformDown {
      case j @ EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
        val pairs = leftKeys.zip(rightKeys)
        def pruned(big: LogicalPlan, small: LogicalPlan, smallKeys: Seq[Expression],
            ps: Seq[(Expression, Expression)], bigIsLeft: Boolean): Option[LogicalPlan] =
          if (!prunable(joinType, bigIsLeft)) None
          else builtBroadcast(small).flatMap(b => pruneAtRunTime(spark, usable, big, smallKeys, ps, b))
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

  /**
   * A scan join pruning can narrow: its relation, filters, the key, the indexes keyed on it (split
   * indexes, else covering indexes led by it, else data skipping indexes with a sketch on it: the
   * `probe`) and the most keys that pay.
   */
  private case class Candidate(
      relation: LogicalRelation,
      filters: Seq[Expression],
      key: AttributeReference,
      smallKey: Expression,
      onKey: Seq[LogEntry],
      budget: Long,
      probe: Probe)

  /** What narrows a candidate's scan to the broadcast's keys. */
  private sealed trait Probe
  private object Probe {
    /** A split index's seek: the row groups (files, over CSV or JSON) it locates. */
    case object SplitSeek extends Probe
    /** A covering index's buckets: the files its lineage names for the keys. */
    case object CoveringBuckets extends Probe
    /** A data skipping index's sketches: the files they cannot rule out. */
    case object Sketches extends Probe
  }

  /**
   * The scan under `big` (projections and filters over a file scan) with a split index keyed
   * on one of its join keys and the most keys whose seek pays, or else a covering index with
   * lineage led by one, or else a data skipping index with a sketch on one; None (with the reason
   * in `log` where there is one) when there is none or not even one key pays. `pairs` are the
   * join's (big side, other side) key expressions.
   */
  private def candidate(
      spark: SparkSession,
      usable: Usable,
      big: LogicalPlan,
      pairs: Seq[(Expression, Expression)],
      log: DecisionLog): Option[Candidate] = {
    val (filters, relation) = big match {
      case ProjectsAndFilters(_, filters, r: LogicalRelation) => (filters, r)
      case _ => return None
    }
    // A key of the scan itself, compared by `=` with a value of the same type. Not floating
    // point: the join equates -0.0 with 0.0, which the index's hash buckets (and a bloom filter's
    // hashes) keep apart.
    val keyed = pairs.collect {
      case (a: AttributeReference, s)
          if relation.outputSet.contains(a) && a.dataType == s.dataType && s.deterministic &&
            a.dataType != FloatType && a.dataType != DoubleType => (a, s)
    }
    if (keyed.isEmpty) return None
    val kept = filters.filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
    // A split index locates row groups, finer than files; a covering index's buckets name exactly
    // the files holding a key, where sketches may keep files holding none.
    val plain = CandidateIndexes.sourceScan(relation).map(fs => FileSource(relation, fs))
    plain.flatMap(splitCandidate(spark, usable.split, _, relation, keyed, kept, log))
      .orElse(plain.flatMap(coveringCandidate(spark, usable.covering, _, relation, big, keyed, kept, log)))
      .orElse(sketchCandidate(spark, usable.sketches, relation, keyed, kept))
  }

  /** The first of `keyed` a split index of `source` is keyed on alone, with the most keys that pay. */
  private def splitCandidate(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      source: FileSource,
      relation: LogicalRelation,
      keyed: Seq[(AttributeReference, Expression)],
      filters: Seq[Expression],
      log: DecisionLog): Option[Candidate] = {
    val ours = SplitSeekRule.indexesOf(indexes, source)
    if (ours.isEmpty) return None
    val resolver = spark.sessionState.conf.resolver
    def keyedOn(a: AttributeReference)(e: LogEntry): Boolean = SplitIndex.keyColumns(e.index) match {
      case Seq(k) => resolver(k, a.name)
      case _ => false
    }
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
      } else Some(Candidate(relation, filters, key, smallKey, onKey, budgets.map(_._3).max, Probe.SplitSeek))
    }
  }

  /**
   * The first of `keyed` that a covering index of `source` with lineage is led by, up to `maxKeys`
   * keys ([[CoveringJoinProbe.indexesOn]]); `big` is the plan over the scan, whose columns tell
   * whether a covering index serves it instead.
   */
  private def coveringCandidate(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      source: FileSource,
      relation: LogicalRelation,
      big: LogicalPlan,
      keyed: Seq[(AttributeReference, Expression)],
      filters: Seq[Expression],
      log: DecisionLog): Option[Candidate] = {
    if (indexes.isEmpty) return None
    val read = CoveringJoinProbe.columnsRead(big, relation)
    keyed.iterator.map { case (key, smallKey) =>
      (key, smallKey, CoveringJoinProbe.indexesOn(spark, indexes, source, relation, key, read, filters, log))
    }.collectFirst {
      case (key, smallKey, onKey) if onKey.nonEmpty => (key, smallKey, onKey)
    }.flatMap { case (key, smallKey, onKey) =>
      val files = source.listedFiles.size
      val maxRead = HyperspaceConf.coveringJoinPruningMaxReadFraction(spark)
      val budget = math.min(HyperspaceConf.coveringJoinPruningMaxKeys(spark).toLong,
        CoveringJoinProbe.keysWithin(files, maxRead))
      if (budget > 0) Some(Candidate(relation, filters, key, smallKey, onKey, budget, Probe.CoveringBuckets))
      else {
        onKey.foreach(log.reject(_, Reason.JoinKeysKeepTooManyFiles(files, maxRead)))
        None
      }
    }
  }

  /**
   * The first of `keyed` some data skipping index of `relation`'s source has a sketch on (one that
   * can rule out a file for `key = value`), up to `maxKeys` keys. A table format's scan counts as
   * the whole table it reads ([[TableFormats.wholeTable]]): the format's own optimizer rules may
   * have narrowed it after Hyperspace's planning ran (Delta's prepared scans).
   */
  private def sketchCandidate(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      relation: LogicalRelation,
      keyed: Seq[(AttributeReference, Expression)],
      filters: Seq[Expression]): Option[Candidate] = {
    val whole = relation.relation match {
      // A stand-in for a format's V2 scan (Iceberg) is that V2 scan again at run time, whose files
      // are Iceberg's to plan: only a scan data skipping pruned while planning is a file scan there.
      case fs: HadoopFsRelation if indexes.nonEmpty && !fs.location.isInstanceOf[TableScanListing] =>
        // A table format's scan only where turned on: measured slower than Spark's plan so far.
        if (!FileListings.isPlain(fs.location) && !HyperspaceConf.sketchJoinPruningTableFormats(spark)) return None
        TableFormats.wholeTable(fs, filters.flatMap(splitConjunctivePredicates))
          .fold(relation)(FileRelation.withLocation(relation, fs, _))
      case _ => return None
    }
    val source = CandidateIndexes.sourceScan(whole) match {
      case Some(fs) => FileSource(whole, fs)
      case None => return None
    }
    keyed.iterator.map { case (key, smallKey) =>
      val probe = EqualTo(key, Literal.default(key.dataType))
      (key, smallKey, indexes.filter(e => DataSkippingRule.sketchesApply(spark, e, source, probe, whole)))
    }.collectFirst {
      case (key, smallKey, onKey) if onKey.nonEmpty =>
        val maxKeys = HyperspaceConf.sketchJoinPruningMaxKeys(spark).toLong
        Candidate(relation, filters, key, smallKey, onKey, maxKeys, Probe.Sketches)
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
   * `big` with its scan narrowed to the row groups or files that can hold the keys of the
   * broadcast `built` of the other side (whose join keys, in the join's order, are `smallKeys`);
   * None when the broadcast's keys cannot be read, are more than pay, or nothing is left out.
   */
  private def pruneAtRunTime(
      spark: SparkSession,
      usable: Usable,
      big: LogicalPlan,
      smallKeys: Seq[Expression],
      pairs: Seq[(Expression, Expression)],
      built: Built): Option[LogicalPlan] =
    candidate(spark, usable, big, pairs, DecisionLog.Discard).flatMap { c =>
      broadcastValues(c, smallKeys, built).flatMap { values =>
        // Sketches are translated from an IN list value by value, a set as one lookup per file.
        val inKeys =
          if (c.probe == Probe.Sketches && values.size > InListSize) InSet(c.key, values.toSet)
          else In(c.key, values.map(Literal(_, c.key.dataType)))
        val described = s"${c.key.name} IN (the ${values.size} join key(s) of the other side)" +
          (if (c.filters.isEmpty) "" else s" AND ${c.filters.map(_.sql).mkString(" AND ")}")
        val narrowed =
          c.probe match {
            case Probe.CoveringBuckets => CoveringJoinProbe.prune(spark, c.onKey, c.key, values, c.relation, described)
            case Probe.Sketches =>
              DataSkippingRule.pruneForJoin(spark, c.onKey, inKeys, c.filters, c.relation, described)
            case Probe.SplitSeek =>
              val condition = (c.filters :+ inKeys).reduce(And)
              SplitSeekRule.seek(spark, c.onKey, condition, c.relation, DecisionLog.Discard, described)
          }
        narrowed.map(s => big transformUp { case r: LogicalRelation if r eq c.relation => s })
      }
    }

  /** Keys up to this many go to sketches as an IN list; more as a set (Spark's OptimizeIn's default). */
  private val InListSize = 10

  /**
   * The distinct non-NULL values of `c`'s key in the broadcast `built`: None when they cannot be
   * read (the hash relation's keys are not the join's as expected), are none, or more than
   * `c.budget`.
   */
  private def broadcastValues(c: Candidate, smallKeys: Seq[Expression], built: Built): Option[Seq[Any]] = {
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
      import scala.jdk.CollectionConverters._
      if (values.size > c.budget || values.isEmpty) None else Some(values.asScala.toSeq)
    }
  }
}

/**
 * Runs join pruning ([[JoinPruningRule.atRunTime]]) when adaptive execution optimizes the
 * rest of a query again after a stage finished; installed by the session extension as a runtime
 * optimizer rule. A failure keeps the plan: a missed pruning must never fail a query (except an
 * audit that found skipped rows).
 */
case class JoinRuntimePruning(spark: SparkSession) extends Rule[LogicalPlan] with Logging {
  override def apply(plan: LogicalPlan): LogicalPlan =
    try {
      // The index catalog is read only where a built broadcast could prune something: adaptive
      // execution runs this after every stage of every query.
      val broadcastBuilt = plan.exists {
        case LogicalQueryStage(_, stage: BroadcastQueryStageExec) => stage.isMaterialized
        case _ => false
      }
      val on = HyperspaceConf.splitJoinPruningEnabled(spark) || HyperspaceConf.sketchJoinPruningEnabled(spark) ||
        HyperspaceConf.coveringJoinPruningEnabled(spark)
      if (!broadcastBuilt || !HyperspaceConf.applyEnabled(spark) || !on) plan
      else JoinPruningRule.atRunTime(spark, plan, CandidateIndexes.active(spark))
    } catch {
      case e: AuditFailure => throw e
      case NonFatal(e) =>
        logWarning(s"Join pruning is not applied: $e", e)
        plan
    }
}
