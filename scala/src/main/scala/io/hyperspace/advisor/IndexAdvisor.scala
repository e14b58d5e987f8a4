package io.hyperspace.advisor

import scala.collection.mutable

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.{ByteType, DateType, IntegerType, LongType, ShortType}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.explain.{QueryPlanning, WhatIf}
import io.hyperspace.index.{FileRanges, IndexConfig, IndexKindConfig}
import io.hyperspace.index.dataskipping.{BloomFilterSketch, DataSkippingIndexConfig, MinMaxSketch, ValueListSketch}
import io.hyperspace.index.split.SplitIndexConfig
import io.hyperspace.index.zorder.ZOrderCoveringIndexConfig
import io.hyperspace.log.LogEntry
import io.hyperspace.rules.{ApplyHyperspace, CandidateIndexes}
import io.hyperspace.sources.FileSource

/**
 * A candidate index over the relation `key` names: covering (bucketed on its indexed columns),
 * Z-order covering (laid out over them), both including the columns every query it came from
 * needs besides (merged across queries), or data skipping (a MinMax, BloomFilter or ValueList
 * sketch of one column).
 */
private[advisor] final case class Candidate(
    key: String,
    relation: LogicalRelation,
    config: IndexKindConfig,
    joinKeys: Boolean = false,
    /** For a value sketch (BloomFilter or ValueList) candidate: the values the workload looks up. */
    lookups: Option[Seq[Any]] = None,
    /** For a MinMax candidate: the workload's filter conjuncts on its column alone. */
    conjuncts: Seq[org.apache.spark.sql.catalyst.expressions.Expression] = Nil) {
  def name: String = config.name
}

/**
 * The index advisor (the paper's index tuning): from a workload to the indexes worth building,
 * within a size budget and a maximum count (docs/advisor.md tells it in full).
 *
 *  1. Enumerate ([[enumerate]]): per query and scanned relation ([[QueryShape]]), covering and
 *     Z-order covering candidates on filtered columns and join key sets (including the other
 *     columns the query needs, merged across queries), and data skipping sketches on filtered
 *     columns; those that could prune nothing are dropped here, before any plan.
 *  2. Estimate: each candidate is a hypothetical index (covering: [[WhatIf.entryFor]]; the others
 *     [[Hypothetical]], from a [[RelationSample]]); a query's cost with a set of indexes is
 *     [[PlanCost]] of the plan Hyperspace's own rules make with exactly that set.
 *  3. Select greedily: each round, every remaining candidate that fits the budget and count is
 *     planned together with those already chosen (so interactions count: the second side of a
 *     join gains the shuffles the first side alone could not remove), its benefit is the
 *     weighted cost it removes from the queries whose plans use it, and the best benefit per
 *     estimated byte is taken (without a budget, the best benefit); none with a positive
 *     benefit ends the search.
 *  4. Check: the workload is planned with the chosen set, and an index no plan uses is dropped
 *     (repeated until every index left is used) — the advisor never recommends an index the
 *     optimizer would not use.
 */
object IndexAdvisor extends org.apache.spark.internal.Logging {

  def recommend(
      spark: SparkSession,
      workload: Seq[WorkloadQuery],
      budgetBytes: Option[Long],
      maxIndexes: Option[Int]): Recommendations = {
    if (workload.isEmpty) {
      throw new HyperspaceException("Cannot recommend indexes: the workload is empty (give one or more queries).")
    }
    budgetBytes.filter(_ < 0).foreach(b =>
      throw new HyperspaceException(s"Cannot recommend indexes: the budget must be at least 0 bytes; got $b."))
    maxIndexes.filter(_ < 0).foreach(k =>
      throw new HyperspaceException(s"Cannot recommend indexes: the maximum count must be at least 0; got $k."))
    workload.filter(_.df.isStreaming).foreach(q =>
      throw new HyperspaceException(
        s"Cannot recommend indexes for workload query '${q.label}': it is a streaming query."))
    val started = System.nanoTime()

    val evaluated = workload.map(new EvaluatedQuery(_))
    val samples = mutable.Map[String, RelationSample]() // per relation key, sampled once
    def sampleOf(c: Candidate): RelationSample = samples.getOrElseUpdate(c.key, RelationSample.of(spark, c.relation))
    val entries = mutable.Map[String, LogEntry]()
    def entryOf(c: Candidate, df: DataFrame): LogEntry =
      entries.getOrElseUpdate(c.name,
        c.config match {
          case covering: IndexConfig => WhatIf.entryFor(df, c.relation, covering, sampleOf(c).widths)
          case z: ZOrderCoveringIndexConfig => Hypothetical.zorderEntry(spark, sampleOf(c), z)
          case d: DataSkippingIndexConfig if c.lookups.isDefined =>
            Hypothetical.valueSketchEntry(spark, sampleOf(c), d, c.lookups.get)
          case d: DataSkippingIndexConfig => Hypothetical.skippingEntry(spark, sampleOf(c), d)
          case split: SplitIndexConfig => Hypothetical.splitEntry(spark, sampleOf(c), split)
          case other => throw new HyperspaceException(s"The advisor has no estimate for index kind ${other.kindName}.")
        })
    // A candidate whose kind refuses its columns (a type it cannot index) is no candidate.
    val planned = System.nanoTime()
    val raw = enumerate(evaluated)
    val enumerated = raw.flatMap { c =>
      c.config match {
        case _ if c.lookups.isDefined => sizeValueSketch(spark, c, sampleOf(c))
        case DataSkippingIndexConfig(_, Seq(m: MinMaxSketch)) if !minMaxMayPrune(c, m.expr, sampleOf(c)) => None
        case _ => Some(c)
      }
    }
    val candidates = enumerated.filter { c =>
      val t = System.nanoTime()
      try { entryOf(c, evaluated.head.query.df); true }
      catch { case _: HyperspaceException => false }
      finally logDebug(s"Advisor: candidate ${c.name} made in ${(System.nanoTime() - t) / 1000000} ms.")
    }
    logInfo(s"Advisor: ${workload.size} queries planned and ${enumerated.size} candidates enumerated in " +
      s"${(planned - started) / 1000000} ms; ${samples.size} relations sampled and ${candidates.size} " +
      s"hypothetical indexes made in ${(System.nanoTime() - planned) / 1000000} ms.")
    // A split index's build reads the key column and the footers, not the whole source.
    def buildRead(c: Candidate): Long = c.config match {
      case s: SplitIndexConfig =>
        val sample = sampleOf(c)
        val keyWidth = s.indexedColumns.map(k => sample.widths.getOrElse(k.toLowerCase(java.util.Locale.ROOT), 8.0)).sum
        (entryOf(c, evaluated.head.query.df).source.sizeInBytes * keyWidth / sample.rowWidth).toLong
      case _ => entryOf(c, evaluated.head.query.df).source.sizeInBytes
    }
    recommendAmong(spark, workload, evaluated, candidates, c => entryOf(c, evaluated.head.query.df), buildRead,
      budgetBytes, maxIndexes, started)
  }

  private def recommendAmong(
      spark: SparkSession,
      workload: Seq[WorkloadQuery],
      evaluated: Seq[EvaluatedQuery],
      candidates: Seq[Candidate],
      entry: Candidate => LogEntry,
      buildRead: Candidate => Long,
      budgetBytes: Option[Long],
      maxIndexes: Option[Int],
      started: Long): Recommendations = {
    def sizeOf(c: Candidate): Long = entry(c).content.sizeInBytes

    def costs(set: Seq[Candidate]): Seq[PlanCost] = evaluated.map(q => q.costWith(set, entry))

    val chosen = mutable.ArrayBuffer[(Candidate, Long)]() // with the benefit it had when chosen
    var current = evaluated.map(_.baseline)
    var remaining = candidates
    // Under a budget, bytes are what is spent: the best benefit per byte. Without one, only the
    // count limits, and a tiny index with a small benefit must not take a slot from a larger one.
    def score(c: Candidate, benefit: Double): Double =
      if (budgetBytes.isDefined) benefit / math.max(1L, sizeOf(c)) else benefit
    def rank(o: (Candidate, Double, Seq[PlanCost])): (Double, Double, Double, String) =
      (score(o._1, o._2), o._2, -sizeOf(o._1).toDouble, o._1.name)
    // The benefit each candidate had when last planned: a bound on what it can have now, except
    // on a join's keys (the other side's index can make it pay more).
    val lastBenefit = mutable.Map[String, Double]()
    // Per candidate, the queries whose plans used it the last time it had a benefit (to say, when
    // it no longer has one, which chosen indexes took them over).
    val lastServed = mutable.Map[String, Seq[Int]]()
    var searching = true
    while (searching && maxIndexes.forall(chosen.size < _)) {
      val used = chosen.map(c => sizeOf(c._1)).sum
      def plan(c: Candidate): Option[(Candidate, Double, Seq[PlanCost])] = {
        val set = chosen.map(_._1).toSeq :+ c
        val after = costs(set)
        val benefit = evaluated.indices.collect {
          case i if after(i).used.contains(c.name) => evaluated(i).query.weight * (current(i).work - after(i).work)
        }.sum
        lastBenefit(c.name) = benefit
        if (benefit > 0) lastServed(c.name) = evaluated.indices.filter(i => after(i).used.contains(c.name))
        if (benefit > 0) Some((c, benefit, after)) else None
      }
      val fitting = remaining.filter(c => budgetBytes.forall(used + sizeOf(c) <= _))
      // Lazy greedy (CELF): a filter index's benefit only shrinks as others are chosen, so those
      // planned before are planned again in the order of their last benefit, only while that
      // bound could still beat the best found this round.
      val (eager, deferred) = fitting.partition(c => c.joinKeys || !lastBenefit.contains(c.name))
      val options = mutable.ArrayBuffer[(Candidate, Double, Seq[PlanCost])]()
      options ++= eager.flatMap(plan)
      deferred.sortBy(c => -score(c, lastBenefit(c.name))).foreach { c =>
        val best = if (options.isEmpty) None else Some(options.maxBy(rank))
        if (best.forall(b => score(b._1, b._2) < score(c, lastBenefit(c.name)))) options ++= plan(c)
      }
      // An index serving a filter that no plan uses to advantage is used by none later either (a
      // filter rewrite does not depend on other indexes): dropped. One on a join's keys stays.
      remaining = remaining.filter(c => c.joinKeys || lastBenefit.get(c.name).forall(_ > 0))
      if (options.isEmpty) searching = false
      else {
        val (best, benefit, after) = options.maxBy(rank)
        chosen += best -> math.round(benefit)
        current = after
        remaining = remaining.filterNot(_.name == best.name)
      }
    }

    logInfo(s"Advisor: greedy selection of ${chosen.size} in ${(System.nanoTime() - started) / 1000000} ms " +
      s"since the start, ${evaluated.map(_.plansMade).sum} plans made.")
    // Drop what no plan uses once all are in place (a later choice can take over an earlier one's queries).
    var kept = chosen.toSeq
    var finalCosts = costs(kept.map(_._1))
    var unused = kept.filterNot(c => finalCosts.exists(_.used.contains(c._1.name)))
    while (unused.nonEmpty) {
      kept = kept.filterNot(unused.contains)
      finalCosts = costs(kept.map(_._1))
      unused = kept.filterNot(c => finalCosts.exists(_.used.contains(c._1.name)))
    }

    val recommended = kept.zipWithIndex.map { case ((c, benefit), i) =>
      val size = sizeOf(c)
      val sourceBytes = buildRead(c)
      val served = evaluated.indices.filter(q => finalCosts(q).used.contains(c.name)).map { q =>
        val (before, after) = (evaluated(q).baseline, finalCosts(q))
        QueryEvidence(evaluated(q).query.label, evaluated(q).query.weight, before.bytesRead, after.bytesRead,
          before.exchanges, after.exchanges, before.sorts, after.sorts)
      }
      RecommendedIndex(i + 1, c.config, describe(c.relation), sqlName(c.relation), size, sourceBytes + size, benefit,
        served)(
        SparkInternals.ofRows(spark, c.relation))
    }
    val keptNames = kept.map(_._1.name).toSet
    val used = kept.map(c => sizeOf(c._1)).sum
    val countReached = maxIndexes.exists(chosen.size >= _)
    def servingNow(queries: Seq[Int]): Seq[String] =
      kept.map(_._1.name).filter(n => queries.exists(q => finalCosts(q).used.contains(n)))
    // A query's label may be its whole SQL text: one line, and its start only.
    def labels(queries: Seq[Int]): String = queries.map { q =>
      val label = evaluated(q).query.label.replaceAll("\\s+", " ").trim
      s"'${if (label.length > 80) label.take(77) + "..." else label}'"
    }.mkString(", ")
    val rejected = candidates.filterNot(c => keptNames.contains(c.name)).map { c =>
      val size = sizeOf(c)
      val fits = budgetBytes.forall(used + size <= _)
      val (reason, detail) =
        if (chosen.exists(_._1.name == c.name)) {
          val queries = lastServed.getOrElse(c.name, Nil)
          (RejectedCandidate.Unused,
            s"chosen during the search, but no plan used it once all chosen indexes were in place" +
              (if (queries.nonEmpty) s" (${labels(queries)} are served by ${servingNow(queries).mkString(", ")})"
               else ""))
        } else if (lastBenefit.get(c.name).exists(_ <= 0) && lastServed.contains(c.name)) {
          val queries = lastServed(c.name)
          val by = servingNow(queries)
          (RejectedCandidate.Superseded,
            s"no remaining benefit: ${labels(queries)}, which it served, are served " +
              (if (by.nonEmpty) s"by the chosen ${by.mkString(", ")}" else "as well without it by the chosen indexes"))
        } else if (lastBenefit.get(c.name).exists(_ <= 0)) {
          (RejectedCandidate.NoBenefit,
            "no benefit: no query's plan uses it to read, shuffle or sort less (the rules turn it down, or a " +
              "plan with it costs no less)")
        } else if (countReached && fits) {
          (RejectedCandidate.MaxIndexes,
            s"max_indexes reached (${maxIndexes.get})" +
              lastBenefit.get(c.name).fold("")(b => s"; its benefit when last planned: ${math.round(b)}"))
        } else {
          (RejectedCandidate.OverBudget,
            s"over budget: ~$size bytes, with ${budgetBytes.fold(0L)(_ - used)} of the budget left" +
              lastBenefit.get(c.name).fold(" (never planned: it never fit)")(b =>
                s"; its benefit when last planned: ${math.round(b)}"))
        }
      RejectedCandidate(c.config, describe(c.relation), size, reason, detail)
    }
    Recommendations(spark, recommended, candidates.size, budgetBytes, maxIndexes,
      evaluated.map(_.baseline.work).zip(workload.map(_.weight)).map { case (w, f) => w * f }.sum.round,
      finalCosts.map(_.work).zip(workload.map(_.weight)).map { case (w, f) => w * f }.sum.round,
      (System.nanoTime() - started) / 1000000, rejected)
  }

  /**
   * The candidates of every kind, merged per relation, kind and indexed columns:
   *
   *  - covering: one per filtered column (equality or range) and per join key set, including the
   *    other columns the query needs;
   *  - Z-order covering: one per range-filtered column and one over the first two (by name) of a
   *    query's range-filtered columns, including the other columns it needs (a range reads only
   *    the files whose ranges meet it, where a hash-bucketed index reads every bucket);
   *  - data skipping: a MinMax sketch per filtered column, for sources it can serve (not
   *    partitioned or of a table format): it helps where values cluster by file, which only the
   *    per-file ranges tell — the what-if plan decides ([[minMaxMayPrune]] only drops those no
   *    range separates);
   *  - value sketches: per column equality filters look up by literals of its type, a
   *    placeholder that [[sizeValueSketch]] turns into a ValueList or BloomFilter, or drops.
   */
  private def enumerate(queries: Seq[EvaluatedQuery]): Seq[Candidate] = {
    sealed trait Kind
    case object Covering extends Kind
    case object ZOrder extends Kind
    case object Skipping extends Kind
    case object Values extends Kind
    case object Split extends Kind
    val merged =
      mutable.LinkedHashMap[(String, Kind, Seq[String]), (LogicalRelation, mutable.LinkedHashSet[String])]()
    val joined = mutable.Set[(String, Seq[String])]() // covering candidates on a join's keys
    // Per relation and column, the values equality filters look up (None: some are not literals).
    val lookups = mutable.Map[(String, String), Option[Seq[Any]]]()
    val conjunctsOn = mutable.Map[(String, String), Seq[org.apache.spark.sql.catalyst.expressions.Expression]]()
    def add(use: RelationUse, kind: Kind, indexed: Seq[String], included: Seq[String]): Unit = {
      val slot = merged.getOrElseUpdate((use.key, kind, indexed.map(_.toLowerCase(java.util.Locale.ROOT))),
        (use.relation, mutable.LinkedHashSet[String]()))
      slot._2 ++= included.filterNot(n => indexed.exists(_.equalsIgnoreCase(n)))
    }
    for (q <- queries; use <- q.uses) {
      val keySets = (use.equality ++ use.range).map(Seq(_)) ++ use.joinKeys
      keySets.distinct.foreach(add(use, Covering, _, use.needed))
      use.joinKeys.foreach(k => joined += ((use.key, k.map(_.toLowerCase(java.util.Locale.ROOT)))))
      def ranged(c: String) =
        use.relation.output.find(_.name.equalsIgnoreCase(c)).exists(a => FileRanges.supported(a.dataType))
      val ranges = use.range.filter(ranged)
      (ranges.map(Seq(_)) ++ (if (ranges.size >= 2) Seq(ranges.sorted.take(2)) else Nil))
        .foreach(add(use, ZOrder, _, use.needed))
      val fs = CandidateIndexes.sourceScan(use.relation)
      fs.filter(f => f.partitionSchema.isEmpty && FileSource(use.relation, f).versioned.isEmpty).foreach { f =>
        (use.equality ++ use.range).filter(ranged).distinct.foreach { c =>
          val slot = (use.key, c.toLowerCase(java.util.Locale.ROOT))
          conjunctsOn(slot) = conjunctsOn.getOrElse(slot, Nil) ++ use.conjunctsOn.getOrElse(c, Nil)
          add(use, Skipping, Seq(c), Nil)
        }
        def hashable(c: String) =
          use.relation.output.find(_.name.equalsIgnoreCase(c)).exists(a =>
            ValueListSketch(c).unsupportedType(a.dataType).isEmpty)
        // A split index serves `=`/`IN` on a key of any type the estimate pins by literal, and
        // ranges on an integral or date key (the only ranges its estimate covers).
        if (f.fileFormat.getClass == classOf[ParquetFileFormat]) {
          def splitRanged(c: String) = use.relation.output.find(_.name.equalsIgnoreCase(c)).exists(a =>
            Seq(ByteType, ShortType, IntegerType, LongType, DateType).contains(a.dataType))
          (use.equality.filter(c => ranged(c) && hashable(c)) ++ use.range.filter(splitRanged)).distinct
            .foreach(c => add(use, Split, Seq(c), Nil))
        }
        use.equality.filter(c => ranged(c) && hashable(c)).foreach { c =>
          val slot = (use.key, c.toLowerCase(java.util.Locale.ROOT))
          val values = use.lookups.getOrElse(c, None)
          lookups(slot) = for (seen <- lookups.getOrElse(slot, Some(Nil)); more <- values) yield (seen ++ more).distinct
          add(use, Values, Seq(c), Nil)
        }
      }
    }
    val names = mutable.Map[String, Int]()
    // A value sketch needs every looked-up value named; a column some query compares otherwise has none.
    merged.toSeq.filter { case ((key, kind, indexedLower), _) =>
      kind != Values || lookups.get((key, indexedLower.head)).exists(_.isDefined)
    }.map { case ((key, kind, indexedLower), (relation, included)) =>
      val indexed = indexedLower.map(l => relation.output.find(_.name.equalsIgnoreCase(l)).map(_.name).getOrElse(l))
      // In the relation's column order, so the same columns always make the same config.
      val includedInOrder = relation.output.map(_.name).filter(included.contains)
      val base = nameOf(relation, indexed,
        kind match {
          case Covering => "by"
          case ZOrder => "zorder"
          case Skipping => "minmax"
          case Values => "values"
          case Split => "split"
        })
      val n = names.updateWith(base.toLowerCase(java.util.Locale.ROOT))(c => Some(c.getOrElse(0) + 1)).get
      val name = if (n == 1) base else s"${base}_$n"
      Candidate(key, relation,
        kind match {
          case Covering => IndexConfig(name, indexed, includedInOrder)
          case ZOrder => ZOrderCoveringIndexConfig(name, indexed, includedInOrder)
          case Skipping => DataSkippingIndexConfig(name, indexed.map(c => MinMaxSketch(c)))
          case Values => DataSkippingIndexConfig(name, indexed.map(c => ValueListSketch(c)))
          case Split => SplitIndexConfig(name, indexed)
        }, joinKeys = kind == Covering && joined.contains((key, indexedLower)),
        lookups = if (kind == Values) lookups((key, indexedLower.head)) else None,
        conjuncts = if (kind == Skipping) conjunctsOn.getOrElse((key, indexedLower.head), Nil) else Nil)
    }
  }

  /**
   * Whether a MinMax sketch on `column` could skip a file for some query: whether one of the
   * workload's conjuncts on the column, compared with each file's range (footer or sample),
   * rules some file out — the sketch's own test, conjunct by conjunct. A conjunct of another form
   * (a function of the column, an OR, ...) might be translated too: then the plans decide. A
   * sketch that can skip nothing is no candidate (on a shuffled source, none is), and costs no
   * plan.
   */
  private def minMaxMayPrune(c: Candidate, column: String, sample: RelationSample): Boolean = {
    import org.apache.spark.sql.catalyst.expressions._
    val i = sample.indexOf(column)
    if (i.isEmpty || c.conjuncts.isEmpty) return true
    val t = sample.schema(i.get).dataType
    val ordering = TypeUtils.getInterpretedOrdering(t)
    val files = sample.fileRanges(column).values.toSeq.map { case (_, s) =>
      (s.min.map(FileRanges.decode(_, t)), s.max.map(FileRanges.decode(_, t)))
    }
    val ranges = files.collect { case (Some(lo), Some(hi)) => (lo, hi) }
    def lit(e: Expression): Option[Any] = e match {
      case l: Literal if l.dataType == t && l.value != null => Some(l.value)
      case _ => None
    }
    // Some((lo, hi) => the conjunct is false for every value in [lo, hi]), None for other forms.
    def excludes(e: Expression): Option[(Any, Any) => Boolean] = e match {
      case EqualTo(_: Attribute, v) => lit(v).map(x => (lo, hi) => ordering.lt(x, lo) || ordering.gt(x, hi))
      case EqualTo(v, a: Attribute) => excludes(EqualTo(a, v))
      case EqualNullSafe(a: Attribute, v) => excludes(EqualTo(a, v))
      case EqualNullSafe(v, a: Attribute) => excludes(EqualTo(a, v))
      case In(_: Attribute, list) =>
        val xs = list.map(lit)
        if (xs.exists(_.isEmpty)) None
        else Some((lo, hi) => xs.flatten.forall(x => ordering.lt(x, lo) || ordering.gt(x, hi)))
      case InSet(_: Attribute, set) if set.forall(_ != null) =>
        Some((lo, hi) => set.forall(x => ordering.lt(x, lo) || ordering.gt(x, hi)))
      case LessThan(_: Attribute, v) => lit(v).map(x => (lo, _) => ordering.gteq(lo, x))
      case LessThanOrEqual(_: Attribute, v) => lit(v).map(x => (lo, _) => ordering.gt(lo, x))
      case GreaterThan(_: Attribute, v) => lit(v).map(x => (_, hi) => ordering.lteq(hi, x))
      case GreaterThanOrEqual(_: Attribute, v) => lit(v).map(x => (_, hi) => ordering.lt(hi, x))
      case LessThan(v, a: Attribute) => excludes(GreaterThan(a, v))
      case LessThanOrEqual(v, a: Attribute) => excludes(GreaterThanOrEqual(a, v))
      case GreaterThan(v, a: Attribute) => excludes(LessThan(a, v))
      case GreaterThanOrEqual(v, a: Attribute) => excludes(LessThanOrEqual(a, v))
      case _ => None
    }
    c.conjuncts.exists {
      // Optimizers add `IS NOT NULL` beside comparisons: it rules out only a file of nulls alone.
      case IsNotNull(_: Attribute) => files.exists { case (lo, hi) => lo.isEmpty && hi.isEmpty }
      case e => excludes(e).forall(test => ranges.exists { case (lo, hi) => test(lo, hi) })
    }
  }

  /** Per-file distinct counts up to this make a ValueList sketch; beyond, a BloomFilter. */
  private val SmallValueList = 100

  /**
   * A value sketch candidate (enumerated as a placeholder ValueList) sized from the sampled
   * per-file distinct counts of its column: a ValueList when every sampled file is estimated to
   * hold at most [[SmallValueList]] distinct values (its `maxValues` four times the largest, so
   * an underestimate still keeps lists), else a BloomFilter at the configured false positive
   * probability, `expectedDistinct` the largest file's estimate. None — no candidate — when no
   * file was sampled, or when for every value the workload looks up, the files the sketch is
   * expected to leave ([[Hypothetical.holders]], false positives at its fpp) are no fewer than
   * those whose range (footer or sample) holds the value: a MinMax sketch, itself a candidate,
   * prunes as much for less, or nothing prunes at all. Cheap (no plan): what is left is judged
   * by the what-if plans as every candidate is.
   */
  private def sizeValueSketch(spark: SparkSession, c: Candidate, sample: RelationSample): Option[Candidate] = {
    val column = c.config.asInstanceOf[DataSkippingIndexConfig].sketches.head.expr
    val perFile = sample.fileValues(column)._1
    val i = sample.indexOf(column)
    if (perFile.isEmpty || i.isEmpty) return None
    val t = sample.schema(i.get).dataType
    val largest = perFile.values.map(_.estimated).max
    val fpp = HyperspaceConf.advisorBloomFilterFpp(spark)
    val files = sample.described.files
    val admits = Hypothetical.admits(sample, column, t)
    val pays = c.lookups.getOrElse(Nil).exists { v =>
      val held = Hypothetical.holders(sample, column, v, t)
      val expected = files.map(f => if (!perFile.contains(f) || held.contains(f.id)) 1.0 else fpp).sum
      expected < files.count(admits(_, v))
    }
    if (!pays) return None
    val tablePrefix = nameOf(c.relation, Nil, "values")
    val config =
      if (largest <= SmallValueList) {
        DataSkippingIndexConfig(c.name,
          Seq(ValueListSketch(column,
              math.min(ValueListSketch.DefaultMaxValues, math.max(16, (4 * largest).ceil.toInt)),
              fpp)))
      } else {
        DataSkippingIndexConfig(nameOf(c.relation, Nil, "bloom") + c.name.drop(tablePrefix.length),
          Seq(BloomFilterSketch(column, fpp, Some(math.min(100000000L, math.max(1L, largest.ceil.toLong))))))
      }
    Some(c.copy(config = config))
  }

  private def nameOf(relation: LogicalRelation, indexed: Seq[String], infix: String): String = {
    val table = relation.catalogTable.map(_.identifier.table).getOrElse(
      relation.relation match {
        case fs: HadoopFsRelation =>
          fs.location.rootPaths.headOption.map(_.getName).getOrElse("source")
        case _ => "source"
      })
    def clean(s: String): String = s.replaceAll("[^A-Za-z0-9]+", "_").stripPrefix("_").stripSuffix("_")
    (s"${clean(table)}_${infix}_${indexed.map(clean).mkString("_")}").take(120)
  }

  private def sqlName(relation: LogicalRelation): Option[String] = {
    def quote(s: String) = "`" + s.replace("`", "``") + "`"
    relation.catalogTable.map(t => (t.identifier.database.toSeq :+ t.identifier.table).map(quote).mkString("."))
      .orElse(relation.relation match {
        case fs: HadoopFsRelation if fs.location.rootPaths.size == 1 =>
          fs.fileFormat match {
            case d: DataSourceRegister =>
              Some(s"${d.shortName()}.${quote(fs.location.rootPaths.head.toString)}")
            case _ => None
          }
        case _ => None
      })
  }

  private def describe(relation: LogicalRelation): String =
    relation.catalogTable.map(_.identifier.unquotedString).getOrElse(
      relation.relation match {
        case fs: HadoopFsRelation =>
          s"${fs.fileFormat.toString.toLowerCase(java.util.Locale.ROOT)} ${fs.location.rootPaths.mkString(", ")}"
        case other => other.toString
      })

  /** One workload query planned once without indexes, then with candidate sets (cached by set). */
  private final class EvaluatedQuery(val query: WorkloadQuery) {
    private val planning = new QueryPlanning(query.df)
    val uses: Seq[RelationUse] = QueryShape.uses(planning.optimizedWithout)
    private val keys = uses.map(_.key).toSet
    lazy val baseline: PlanCost = PlanCost.of(planning.physicalWithout)
    private val cache = mutable.Map[Set[String], PlanCost]()
    private var physicalPlans = 0
    /** Physical plans made (each rewrite whose plan was not costed before). */
    def plansMade: Int = physicalPlans

    /**
     * Whether a rule could use `c` for this query: a covering or Z-order covering index only
     * replaces a scan whose needed columns it holds; a sketch only serves a filter on its column.
     * A necessary condition, never sufficient — the plan decides the rest — but one that spares
     * planning the query again with an index it cannot use: its plan is the one without it.
     */
    private def mayServe(c: Candidate): Boolean = uses.exists { u =>
      u.key == c.key &&
      (c.config match {
        case d: DataSkippingIndexConfig => d.sketches.exists(s => u.filtered.exists(_.equalsIgnoreCase(s.expr)))
        case s: SplitIndexConfig => s.indexedColumns.forall(k => u.filtered.exists(_.equalsIgnoreCase(k)))
        case other =>
          val (indexed, included) = RecommendedIndex.columnsOf(other)
          u.needed.forall(n => (indexed ++ included).exists(_.equalsIgnoreCase(n)))
      })
    }
    private val serves = mutable.Map[String, Boolean]()

    def costWith(set: Seq[Candidate], entryOf: Candidate => LogEntry): PlanCost = {
      val relevant = set.filter(c => keys.contains(c.key) && serves.getOrElseUpdate(c.name, mayServe(c)))
      if (relevant.isEmpty) baseline
      else cache.getOrElseUpdate(relevant.map(_.name).toSet, {
          // The rules' choice with a set is their choice with the indexes they used from it: a
          // rewrite using what another set's plan used is that plan, already costed.
          val rewritten = planning.rewrittenWithOnly(relevant.map(entryOf))
          val used = ApplyHyperspace.indexesIn(rewritten).map(_.name).toSet
          if (used.isEmpty) baseline
          else cache.getOrElseUpdate(used, { physicalPlans += 1; PlanCost.of(planning.physicalOf(rewritten)) })
        })
    }
  }
}
