package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Expression, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.DataType

import io.hyperspace.index.{IndexKinds, RewriteFamily, StoredSchemas}
import io.hyperspace.index.dataskipping._
import io.hyperspace.log.{LogEntry, SourceFile}
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.{FileKey, FileSource, SourceSubset, TableFormats, VersionedTable}

/**
 * A Filter over a file scan → the same Filter over the same scan with fewer files: the files
 * that data skipping indexes prove cannot hold a row the filter keeps are left out of the
 * relation's file list ([[DataSkippingFileIndex]]); the plan is otherwise unchanged.
 *
 * An index serves a relation read with the same format, read options and schema as its source,
 * sharing at least one file with it. Only files the index summarized, with the same path, size
 * and modification time, can be skipped: files appended since (or rewritten) are always read,
 * deleted ones are simply not listed any more. Several indexes on one relation each skip what
 * they can. An index that fails is ignored for the query (logged), never failing it.
 *
 * A table format's table (Delta) is pruned on top of the format's own pruning, through the
 * format's own scan (which keeps applying its deletion vectors): see [[withinFormat]].
 */
object DataSkippingRule extends IndexRewrite with PredicateHelper with Logging {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    val skipping = indexes.filter(concerns)
    if (skipping.isEmpty) plan
    else plan transformDown {
      case f @ Filter(condition, r: LogicalRelation) =>
        prune(spark, skipping, condition, r, log).map(pruned => f.copy(child = pruned)).getOrElse(f)
    }
  }

  /** Whether `entry` is an index this rule uses (its kind skips files). */
  def concerns(entry: LogEntry): Boolean = IndexKinds.offers(entry, RewriteFamily.FileSkipping)

  /** Whether `entry` (a data skipping index) describes the data `source` reads. */
  def serves(entry: LogEntry, source: FileSource, listed: => Seq[FileKey]): Boolean =
    readsLike(entry, source) && sharesFiles(entry, listed)

  /**
   * Whether `entry` describes data read like `source`'s and has a sketch that can rule out a file
   * for `filter` over `relation` (decided from the log entry alone; the sketch table is not read).
   */
  def sketchesApply(
      spark: SparkSession,
      entry: LogEntry,
      source: FileSource,
      filter: Expression,
      relation: LogicalRelation): Boolean =
    readsLike(entry, source) && attempt(entry, DecisionLog.Discard)(translate(spark, entry, filter, relation)).isDefined

  /** Whether `source` is read with the format, options and schema of `entry`'s source. */
  private def readsLike(entry: LogEntry, source: FileSource): Boolean =
    CandidateIndexes.sameReader(entry, source) &&
      DataType.equalsIgnoreNullability(StoredSchemas.parse(entry.source.schema), source.fsRelation.dataSchema) &&
      DataType.equalsIgnoreNullability(StoredSchemas.parse(entry.source.partitionSchema),
        source.fsRelation.partitionSchema)

  /** Whether some file of `listed` is one `entry` summarized (same path, size and mtime). */
  private def sharesFiles(entry: LogEntry, listed: Seq[FileKey]): Boolean = {
    val indexed = CandidateIndexes.indexedFiles(entry)
    listed.exists(indexed.contains)
  }

  /** A query filter translated into a condition over `entry`'s sketch table. */
  private case class Translation(entry: LogEntry, sketches: Seq[ResolvedSketch], condition: Expression)

  /**
   * Join pruning at run time ([[JoinPruningRule]]): `relation` without the files `indexes` rule out
   * for `keys` (the join's key among the other side's keys) and `filters` (those over the scan),
   * reported as `described`. A scan this rule pruned while planning is pruned again from its full
   * listing, under a condition that holds the planning's filters; a table format's scan (Delta,
   * Iceberg) from the whole table at the version it reads, the format pruning it again for
   * `filters` as it prunes a planned scan, and the sketches taking away files it keeps. None when
   * nothing more is ruled out, or the scan was pruned for the join already (adaptive execution
   * optimizes the rest of the query again after each stage).
   */
  def pruneForJoin(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      keys: Expression,
      filters: Seq[Expression],
      relation: LogicalRelation,
      described: String): Option[LogicalRelation] = {
    val fs = relation.relation match {
      case fs: HadoopFsRelation => fs
      case _ => return None
    }
    def skippedBy(location: FileIndex): Int = location match {
      case d: SkippedFilesIndex => d.stats.filesSkipped
      case _ => 0
    }
    val conjuncts = filters.flatMap(splitConjunctivePredicates)
    val full = fs.location match {
      case d: SkippedFilesIndex if d.forJoin => return None
      case d: DataSkippingFileIndex => FileRelation.withLocation(relation, fs, d.delegate)
      case _ => TableFormats.wholeTable(fs, conjuncts).fold(relation)(FileRelation.withLocation(relation, fs, _))
    }
    val condition = (conjuncts :+ keys).reduce(And)
    prune(spark, indexes, condition, full, DecisionLog.Discard, forJoin = Some(ForJoin(described, keys))).filter {
      _.relation match {
        case pruned: HadoopFsRelation => skippedBy(pruned.location) > skippedBy(fs.location)
        case _ => false
      }
    }
  }

  /** Pruning for a join's keys at run time: how the statistics name it, and the keys' condition. */
  private case class ForJoin(described: String, keys: Expression)

  /**
   * The relation with the files `indexes` rule out for `condition` left out, if any index
   * applies; its statistics name the filter's SQL, or, pruning for a join's keys, `forJoin`'s.
   */
  private def prune(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      condition: Expression,
      relation: LogicalRelation,
      log: DecisionLog,
      forJoin: Option[ForJoin] = None): Option[LogicalRelation] = {
    val fs = CandidateIndexes.sourceScan(relation) match {
      case Some(fs) if !fs.location.isInstanceOf[SkippedFilesIndex] => fs
      case _ => return None
    }
    val source = FileSource(relation, fs)
    // Only indexes of this relation's data have a reason to give about it.
    def reject(e: LogEntry, reason: => Reason): Unit =
      if (log.recording && SourceSubset.overlaps(e, source)) log.reject(e, reason)
    def noSketch(e: LogEntry) = Reason.NoSketchApplies(e.index.indexedColumns)
    // Dropping conjuncts only weakens the filter, which keeps more files: always safe.
    val usable = splitConjunctivePredicates(condition)
      .filter(c => c.deterministic && !SubqueryExpression.hasSubquery(c))
    if (usable.isEmpty) {
      indexes.foreach(e => reject(e, noSketch(e)))
      return None
    }
    val filter = usable.reduce(And)
    // What the sketches can say about the filter is decided from the log entry alone: a query
    // no sketch can help costs neither the source's file listing nor a sketch table read.
    // A scan of an older table version (time travel) is best served by the index version built
    // from it; any version is safe, since only files with the very key it summarized are skipped.
    val erased = TableVersions.erasure(spark, source.versioned)
    if (erased.isDefined) {
      indexes.foreach(reject(_, erased.get))
      return None
    }
    val versions = indexes.map(e => TableVersions.entryFor(spark, e, source.versioned).getOrElse(e))
    val (alike, unlike) = versions.partition(e => readsLike(e, source))
    unlike.foreach(reject(_, Reason.SkippingSourceMismatch))
    val translated = alike.flatMap { entry =>
      val t = attempt(entry, log)(translate(spark, entry, filter, relation))
      if (t.isEmpty) reject(entry, noSketch(entry))
      t
    }
    if (translated.isEmpty) return None
    val listed = source.listedFiles
    val (sharing, disjoint) = translated.partition(t => sharesFiles(t.entry, listed))
    disjoint.foreach(t => reject(t.entry, Reason.SkippingSourceMismatch))
    val applied = sharing.flatMap { t =>
      attempt(t.entry, log)(Some(evaluate(spark, t, filter)))
    }
    if (applied.isEmpty) return None

    val listedKeys = listed.toSet
    def present(files: Iterable[SourceFile]) = files.iterator.map(_.key).filter(listedKeys.contains).toSet
    val perIndex = applied.map { case (entry, skippedFiles, sketches) =>
      val keys = present(skippedFiles)
      val sketchSkips = sketches.map { case (sketch, files) =>
        val ks = present(files)
        SketchSkips(sketch, ks.size, ks.iterator.map(_.size).sum)
      }
      (entry, keys, IndexSkips(entry.name, entry.id, keys.size, keys.iterator.map(_.size).sum, sketchSkips))
    }
    val skipped = perIndex.flatMap(_._2).toSet
    val stats = RelationSkippingStats(
      relation = source.table.getOrElse(fs.location.rootPaths.mkString(", ")),
      filter = forJoin.fold(filter.sql)(_.described),
      filesTotal = listed.size, bytesTotal = listed.map(_.size).sum,
      filesSkipped = skipped.size, bytesSkipped = skipped.iterator.map(_.size).sum,
      indexes = perIndex.map(_._3))
    // So that lastQuerySkippingStats sees this query once it has run.
    DataSkippingStats.ensureListener(spark)
    source.versioned match {
      case None =>
        // The table formats' skipped files are read through the format (deletion vectors): not audited.
        DataSkippingAudit.check(spark, relation, fs, filter, stats.filter, skipped.toSeq.map(_.path),
          perIndex.filter(_._2.nonEmpty).map(_._1))
        val location = new DataSkippingFileIndex(fs.location, skipped.map(_.path), perIndex.map(_._1), stats,
          forJoin = forJoin.isDefined)
        Some(FileRelation.withLocation(relation, fs, location))
      case Some(table) =>
        // The format prunes for the scan's own filters, as it does once the scan is planned: the
        // join's keys are for the sketches (the join, not a Filter above the scan, applies them).
        val ownFilters = usable.filterNot(u => forJoin.exists(_.keys eq u))
        withinFormat(table, ownFilters, listed, skipped, perIndex.map(_._1), stats, forJoin.isDefined,
          (e, r) => reject(e, r))
    }
  }

  /**
   * A table format's scan without the `skipped` files, on top of the format's own pruning (Delta
   * prunes by partition values and by the min/max its log keeps per file, and masks rows with
   * deletion vectors): the format's own scan keeps doing all of that, and the indexes only take
   * away files it keeps. When they take away none of those, the scan is left as it was (the
   * format already prunes what the indexes would), and the indexes say so.
   */
  private def withinFormat(
      table: VersionedTable,
      filters: Seq[Expression],
      listed: Seq[FileKey],
      skipped: Set[FileKey],
      entries: Seq[LogEntry],
      stats: RelationSkippingStats,
      forJoin: Boolean,
      reject: (LogEntry, Reason) => Unit): Option[LogicalRelation] =
    if (skipped.isEmpty) {
      entries.foreach(reject(_, Reason.NoFileSkipped))
      None
    } else if (table.unservable.isDefined) {
      // A scan of fewer of its files would read them as files (Iceberg: as Parquet, without delete files).
      entries.foreach(reject(_, Reason.TableNotServable(table.unservable.get)))
      None
    } else if (table.unprunable.isDefined) {
      entries.foreach(reject(_, Reason.FormatScanOnly(table.format, table.unprunable.get)))
      None
    } else table.pruning(filters) match {
      case None =>
        entries.foreach(reject(_, Reason.FormatPrunesItself(table.format, reportsPruning = false)))
        None
      case Some(scan) =>
        val beyond = skipped.filter(f => scan.kept.contains(f.path))
        if (beyond.isEmpty) {
          entries.foreach(reject(_, Reason.FormatPrunesItself(table.format, reportsPruning = true)))
          None
        } else {
          val pruned = listed.filterNot(f => scan.kept.contains(f.path))
          val format = FormatPruning(table.format, pruned.size, pruned.map(_.size).sum, beyond.size,
            beyond.iterator.map(_.size).sum)
          Some(scan.without(skipped.map(_.path), entries, stats.copy(formatPruning = Some(format)), forJoin))
        }
    }

  // An index that fails is ignored for the query, never failing it.
  private def attempt[T](entry: LogEntry, log: DecisionLog)(body: => Option[T]): Option[T] =
    try body
    catch {
      case NonFatal(e) =>
        logWarning(s"Data skipping index '${entry.name}' is not used for this query: $e")
        log.reject(entry, Reason.Failed(e.toString))
        None
    }

  /**
   * `filter` over `relation` as a condition over `entry`'s sketch table, from the sketches and
   * table schema the entry records (the table is not read). None when no sketch can tell
   * anything about the filter.
   */
  private def translate(
      spark: SparkSession,
      entry: LogEntry,
      filter: Expression,
      relation: LogicalRelation): Option[Translation] = {
    val sketches = DataSkippingIndexData.sketchesOf(entry.index)
    val resolved = DataSkippingIndex.resolveSketches(spark, entry.name, sketches, relation)
    DataSkippingIndex.translate(filter, resolved, SketchTableEvaluator.attributes(entry))
      .map(Translation(entry, resolved, _))
  }

  /**
   * What a translated filter rules out: the files, and per sketch the files it rules out alone
   * (evaluated only when the sketch table is on the driver).
   */
  private def evaluate(
      spark: SparkSession,
      t: Translation,
      filter: Expression): (LogEntry, Iterable[SourceFile], Seq[(String, Iterable[SourceFile])]) = {
    val table = SketchTableEvaluator.load(spark, t.entry)
    val byId = t.entry.source.files.map(f => f.id -> f).toMap
    def files(ids: Set[Long]): Iterable[SourceFile] = ids.flatMap(byId.get)
    val perSketch =
      if (!table.onDriver) Nil
      else t.sketches.flatMap { r =>
        DataSkippingIndex.translate(filter, Seq(r), table.attributes)
          .map(c => r.sketch.describe -> files(table.skippedIds(c)))
      }
    (t.entry, files(table.skippedIds(t.condition)), perSketch)
  }
}
