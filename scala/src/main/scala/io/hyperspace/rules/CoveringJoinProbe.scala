package io.hyperspace.rules

import scala.collection.mutable

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression, In, InSet, IsNotNull, Literal}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.BoundedCache
import io.hyperspace.index.covering.{CoveringIndex, CoveringIndexKind, CoveringJoinFileIndex, IndexFileIndex}
import io.hyperspace.index.dataskipping.{DataSkippingStats, IndexSkips, RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.index.split.SplitIndexLookup
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.{FileKey, FileSource}

/**
 * Join pruning by a covering index's buckets ([[JoinPruningRule]]): the big side of an equi-join
 * with a broadcast, a plain file scan, reads only the source files that hold one of the
 * broadcast's keys, as a covering index led by the join key and built with lineage tells, plus
 * every listed file the index does not cover (appended or rewritten since the build). The index
 * is read in the driver ([[SplitIndexLookup.foreachMatch]]): only the files of the keys' buckets
 * whose logged key ranges can hold one ([[IndexFileIndex.filesToRead]]), only the key and lineage
 * columns, the keys pushed down. Its rows say exactly which files hold a key: no false positives,
 * unlike sketches, and no listing of the index.
 *
 * An index that covers the columns a scan of its whole relation reads is not probed: the covering
 * rules read it in place of the scan, in key order ([[BroadcastProbeIndexRule]]).
 */
object CoveringJoinProbe extends Logging {

  /** Whether `entry` is of the covering kind (bucketed and sorted on its indexed columns). */
  def concerns(entry: LogEntry): Boolean = entry.index.kind == CoveringIndexKind.name

  /**
   * The covering indexes among `indexes` that can prune a scan of `source` (reading the columns
   * `read` of it, under `filters`) for join key `key`: led by `key` (same type), of the same data
   * read the same way, with lineage. Indexes led by the key without lineage get the reason in `log`.
   *
   * Nil when the covering rules read one of them in place of the scan: one that covers `read` and
   * can serve it (fresh, or within hybrid scan's bounds), for a scan that reads its whole relation
   * (no filter but the key's inferred `IS NOT NULL`), as [[BroadcastProbeIndexRule]] takes it; it
   * runs after this rule while planning. (A filtered scan an index serves was replaced before.)
   */
  def indexesOn(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      source: FileSource,
      relation: LogicalRelation,
      key: AttributeReference,
      read: Seq[Attribute],
      filters: Seq[Expression],
      log: DecisionLog): Seq[LogEntry] = {
    // A table format's scan is its own file index at run time, which this does not narrow.
    if (indexes.isEmpty || source.versioned.isDefined) return Nil
    val resolver = spark.sessionState.conf.resolver
    val onKey = SplitSeekRule.indexesOf(indexes, source).filter { e =>
      val leading = CoveringIndex.columnsOf(e.index)._1.head
      !leading.isNested && resolver(leading.path.head, key.name) &&
      CoveringIndex.storedSchema(e.index).fields.headOption.exists(_.dataType == key.dataType)
    }
    val readsWhole = filters.forall(_.isInstanceOf[IsNotNull])
    val probedInKeyOrder = readsWhole && HyperspaceConf.broadcastProbeEnabled(spark) &&
      CandidateIndexes.forRelation(spark, onKey, relation, read).nonEmpty
    if (probedInKeyOrder) return Nil
    val (withLineage, without) = onKey.partition(_.index.lineage)
    without.foreach(log.reject(_, Reason.JoinPruningNeedsLineage(key.name)))
    withLineage
  }

  /**
   * The most keys whose pruning is expected to leave a scan of `files` files at most `fraction` of
   * them: keys placed at random, each in one file (the fewest it can be in), `n` of them hit
   * `1 - (1 - 1/files)^n` of the files. Beyond that the probe's read of the index mostly buys
   * nothing: on 200 files in key order (benchmarks/results/join-pruning-ab.md) 100 keys kept 78
   * files and the join was barely faster (1.07x), 1,000 kept all 200 and it was slower (0.82x),
   * where 10 keys kept 10 (2.26x). The layout is unknown (no per-file key counts are logged for
   * covering indexes), so keys clustered in fewer files are refused that would pay: the estimate
   * errs towards Spark's plan.
   */
  def keysWithin(files: Int, fraction: Double): Long =
    if (fraction >= 1.0) Long.MaxValue
    else if (files <= 1 || fraction <= 0.0) 0L
    else math.floor(math.log(1.0 - fraction) / math.log(1.0 - 1.0 / files)).toLong

  /** The columns of `relation` that `big` (projections and filters over it) reads. */
  def columnsRead(big: LogicalPlan, relation: LogicalRelation): Seq[Attribute] = {
    val above = big.collect { case p if !(p eq relation) => p.references }
    val refs = above.foldLeft(AttributeSet(big.output))(_ ++ _)
    relation.output.filter(refs.contains)
  }

  /**
   * `relation` listing only the files the cheapest of `entries` names for `key IN values` (the
   * broadcast's distinct non-NULL keys), and the files it does not cover; None when the index
   * files to read cost more than the bound, cannot be read in the driver, or nothing is left out.
   * `described` is what the skipping statistics name as the filter.
   */
  def prune(
      spark: SparkSession,
      entries: Seq[LogEntry],
      key: AttributeReference,
      values: Seq[Any],
      relation: LogicalRelation,
      described: String): Option[LogicalRelation] = {
    val fs = CandidateIndexes.sourceScan(relation) match {
      case Some(fs) => fs
      case None => return None
    }
    val source = FileSource(relation, fs)
    val listed = source.listedFiles
    val inKeys = keysCondition(key, values)
    // The index files' whole sizes bound what the probe reads (two of their columns): it is kept
    // to a fraction of the scan it may prune. A cautious bound, not a measured break-even.
    val bound = HyperspaceConf.coveringJoinPruningMaxReadFraction(spark) * listed.map(_.size).sum
    val toRead = entries.map(e => e -> IndexFileIndex.filesToRead(e, Seq(inKeys)).map(_.size).sum)
    val affordable = toRead.filter(_._2 <= bound)
    if (affordable.isEmpty) return None
    val entry = affordable.minBy(_._2)._1
    holdingKeys(spark, entry, inKeys).flatMap(ids =>
      narrowed(spark, entry, relation, fs, source, listed, ids, inKeys, described))
  }

  /** `key IN values`: a set beyond a few values, as Spark's OptimizeIn makes it (hashed, not compared in turn). */
  private def keysCondition(key: AttributeReference, values: Seq[Any]): Expression =
    if (values.size > 10) InSet(key, values.toSet) else In(key, values.map(Literal(_, key.dataType)))

  /**
   * The lineage ids of the source files holding a row of `entry` that satisfies `inKeys`; None
   * when not read. Adaptive execution optimizes the rest of a query again after every stage, and
   * a probe that left nothing out is asked again each time: an entry is immutable, so its answer
   * for the same keys is kept.
   */
  private def holdingKeys(spark: SparkSession, entry: LogEntry, inKeys: Expression): Option[Set[Long]] =
    lookups.get((entry.identity, inKeys.canonicalized)).orElse {
      val ids = readHoldingKeys(spark, entry, inKeys)
      ids.foreach(lookups.put((entry.identity, inKeys.canonicalized), _))
      ids
    }

  /** Lookups by (index entry, key condition): few, as a condition holds up to maxKeys values; bounded by their ids. */
  private val lookups =
    new BoundedCache[((String, String, Long), Expression), Set[Long]](16, 1000000L, _.size.toLong + 1)

  private def readHoldingKeys(spark: SparkSession, entry: LogEntry, inKeys: Expression): Option[Set[Long]] = {
    val ids = mutable.HashSet.empty[Long]
    val keyColumn = CoveringIndex.storedIndexedColumns(entry.index).head
    val read = SplitIndexLookup.foreachMatch(spark, entry, Seq(keyColumn), Seq(inKeys), Nil) { row =>
      ids += row(0)
      true
    }
    if (read) Some(ids.toSet) else None
  }

  /**
   * The scan of `relation` reading, of the files it reads now, the listed files whose lineage ids
   * are `ids` and those `entry` does not cover; None when that leaves nothing out.
   */
  private def narrowed(
      spark: SparkSession,
      entry: LogEntry,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      source: FileSource,
      listed: Seq[FileKey],
      ids: Set[Long],
      inKeys: Expression,
      described: String): Option[LogicalRelation] = {
    val indexed = CandidateIndexes.indexedFiles(entry)
    val holding = entry.source.files.iterator.filter(f => ids.contains(f.id)).map(_.key).toSet
    val reading = fs.location.listFiles(Nil, Nil).flatMap(_.files).map(_.getPath.toString).toSet
    val (kept, leftOut) = listed.filter(f => reading.contains(f.path))
      .partition(f => !indexed.contains(f) || holding.contains(f))
    if (leftOut.isEmpty) return None
    val earlier = fs.location match {
      case s: SkippedFilesIndex => Some(s.stats)
      case _ => None
    }
    val read = kept.map(_.path).toSet
    val skipped = listed.filterNot(f => read.contains(f.path))
    val bytesTotal = listed.map(_.size).sum
    val stats = RelationSkippingStats(
      relation = source.table.getOrElse(fs.location.rootPaths.mkString(", ")),
      filter = described,
      filesTotal = listed.size, bytesTotal = bytesTotal,
      filesSkipped = skipped.size, bytesSkipped = skipped.map(_.size).sum,
      indexes = earlier.map(_.indexes).getOrElse(Nil) :+
        IndexSkips(entry.name, entry.id, leftOut.size, leftOut.map(_.size).sum, Nil))
    CoveringJoinAudit.check(spark, relation, fs, inKeys, described, leftOut.map(_.path), entry)
    // So that lastQuerySkippingStats sees this query once it has run.
    DataSkippingStats.ensureListener(spark)
    Some(FileRelation.withLocation(relation, fs, new CoveringJoinFileIndex(fs.location, read, entry, stats)))
  }
}

/**
 * Audit mode for a covering index's join pruning (`spark.hyperspace.audit.sampleRate` > 0): a
 * sample of the files it left out is read in full under the join's key condition; a single row
 * there means the index's lineage named too few files.
 */
object CoveringJoinAudit {

  def check(
      spark: SparkSession,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      condition: Expression,
      described: String,
      leftOut: Seq[String],
      entry: LogEntry): Unit =
    PruningAudit.checkLeftOut(spark, relation, fs, condition, leftOut) { (sample, found) =>
      s"Covering index '${entry.name}' (log version ${entry.id}) left out rows of a join: $sample it left " +
        s"out hold $found row(s) with $described. Refresh the index in full mode or delete it; the query was not run."
    }
}
