package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, AttributeSet, Expression, IsNotNull, Literal, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Limit, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.datasources.{FileFormat, HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.{LongType, StructType}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.expressions.SharedCodePredicate
import io.hyperspace.index.{BoundedCache, RewriteFamily, StoredSchemas}
import io.hyperspace.index.covering.{CoveringIndex, IndexFileIndex, IndexHadoopFsRelation}
import io.hyperspace.index.dataskipping.{DataSkippingStats, RelationSkippingStats}
import io.hyperspace.index.split._
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.{FileListing, FileRelation}
import io.hyperspace.sources.{FileKey, FileSource, SelectedFilesIndex}

/**
 * Filter over a plain Parquet scan → the same Filter over a scan of only the row groups a split
 * index locates for the filter's conditions on its key columns ([[SplitIndex]]); over a CSV or
 * JSON scan, of only the files a file-level split index locates. The Filter stays
 * on top, so rows are checked again: the index only has to name a superset of the row groups
 * holding matching rows, which the conjuncts on the keys alone guarantee (any row the whole
 * filter keeps satisfies them, and the index evaluates them on the same values).
 *
 * The locations are looked up while planning, in the driver: a seek pays only when it reads few
 * row groups, so the lookup result is small by construction (bounded by
 * `spark.hyperspace.index.split.maxLocations`), and knowing it before the physical plan lets the
 * scan's size estimates and the fallback decision use the real byte count instead of a guess.
 * The plain scan is kept when those bytes exceed `maxReadFraction` of the scan's.
 *
 * Source files appended since the build (or rewritten) are read whole, deleted ones are not
 * listed any more, as hybrid scan allows ([[CandidateIndexes.serve]]). The rule runs after the
 * covering rules: an index that covers the query replaces the scan first, and the split index
 * serves what no covering index does (`SELECT *` over wide tables).
 */
object SplitSeekRule extends IndexRewrite with PredicateHelper with Logging {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    val split = indexes.filter(SplitIndex.isSplit)
    if (split.isEmpty) plan
    else plan transformDown {
      case f @ Filter(condition, r: LogicalRelation) =>
        seek(spark, split, condition, r, log).map(sought => f.copy(child = sought)).getOrElse(f)
    }
  }

  /**
   * `relation` reading only the row groups of the best split index among `indexes` that can hold
   * rows satisfying `condition` (whose conjuncts on key columns are looked up), or None with the
   * reasons in `log`; `described` is what the skipping statistics name as the filter.
   */
  private[rules] def seek(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      condition: Expression,
      relation: LogicalRelation,
      log: DecisionLog,
      described: => String = ""): Option[LogicalRelation] = {
    val fs = CandidateIndexes.sourceScan(relation) match {
      case Some(fs) => fs
      case None => return None
    }
    val source = FileSource(relation, fs)
    def reject(e: LogEntry, reason: => Reason): Unit = log.reject(e, reason)
    lazy val listed = source.listedFiles
    val (ours, unfit) = indexesOf(indexes, source).partition(e => seeksInto(e, fs, source))
    unfit.foreach(reject(_, Reason.NotPlainParquetScan(source.versioned.map(_.format).getOrElse(source.format))))
    if (ours.isEmpty) return None
    val resolver = spark.sessionState.conf.resolver
    val conjuncts = splitConjunctivePredicates(condition)
      .filter(c => c.deterministic && !SubqueryExpression.hasSubquery(c))
    val candidates = CandidateIndexes.forRelation(spark, ours, relation, Nil, log, Set(RewriteFamily.RowGroupSeek))
    val withKeys = candidates.flatMap { c =>
      val keys = SplitIndex.keyColumns(c.entry.index)
      // Not `key IS NOT NULL` alone: Spark infers it for every join key and filtered column, it
      // keeps nearly every row, and a lookup for it collected `maxLocations` index rows to fall back.
      val onKeys = conjuncts.filter(p =>
        !p.isInstanceOf[IsNotNull] &&
          p.references.nonEmpty && p.references.forall(a => keys.exists(k => resolver(k, a.name))))
      if (onKeys.isEmpty) {
        reject(c.entry, Reason.NoFilterOnKeys(keys))
        None
      } else Some(c -> onKeys)
    }
    // Split indexes of one source differ by their keys; the one whose key filter pins the most
    // conjuncts is looked up (then by name), the others are not read at all.
    val ranked = withKeys.sortBy { case (c, onKeys) => (-onKeys.size, c.name) }
    ranked.drop(1).foreach { case (c, _) =>
      reject(c.entry, Reason.RankedLower(ranked.head._1.name, "more key conditions"))
    }
    ranked.headOption.flatMap { case (c, onKeys) =>
      val max = HyperspaceConf.splitMaxReadFraction(spark)
      val estimated = estimate(spark, c.entry, onKeys, listed)
      estimated.filter(_.fraction > SeekEstimate.refusedAbove(max)).foreach { e =>
        reject(c.entry, Reason.SeekEstimatedNotSelective(e, max))
        return None
      }
      if (c.entry.isHypothetical) {
        return hypotheticalSeek(c.entry, estimated, max, source, listed) match {
          case Left(why) => reject(c.entry, why); None
          case Right(seekPlan) => Some(withSeek(relation, fs, seekPlan, c.entry))
        }
      }
      // The optimizer runs the rule to a fixed point, several times per query: the lookup runs
      // once per entry, filter, listing and the settings it depends on.
      val settings = s"${HyperspaceConf.splitMaxLocations(spark)} $max ${HyperspaceConf.driverReadMaxBytes(spark)}"
      def looked =
        lookups.getOrElseUpdate((c.entry.identity, condition.canonicalized, s"${digestOf(listed)} $settings"),
          lookup(spark, c.entry, onKeys, source, if (described.isEmpty) condition.sql else described))
      val planned = try looked
      catch {
        case NonFatal(e) =>
          logWarning(s"Split index '${c.entry.name}' is not used for this query: $e")
          reject(c.entry, Reason.Failed(e.toString))
          return None
      }
      planned match {
        case Left(why) => reject(c.entry, why); None
        case Right(seekPlan) =>
          DataSkippingStats.ensureListener(spark)
          val sought = withSeek(relation, fs, seekPlan, c.entry)
          SplitSeekAudit.check(spark, relation, fs, sought, condition, seekPlan, c.entry)
          Some(sought)
      }
    }
  }

  /**
   * A hypothetical index's seek (the advisor's what-if: it has no data to look up): what its
   * estimate expects — refused above `maxReadFraction` as a lookup of the built index would be,
   * else a plan whose scan reads the expected share of the bytes (which row groups is not known:
   * none is listed, the plan is costed, never run). Without an estimate (a predicate the estimate
   * does not cover), no seek: the advisor does not count on what it cannot estimate.
   */
  private def hypotheticalSeek(
      entry: LogEntry,
      estimated: Option[SeekEstimate],
      max: Double,
      source: FileSource,
      listed: Seq[FileKey]): Either[Reason, SeekPlan] = estimated match {
    case None => Left(Reason.HypotheticalSeekNotEstimated)
    case Some(e) if e.fraction > max => Left(Reason.SeekNotSelective(e.fraction, max))
    case Some(e) =>
      val whole = listed.filterNot(CandidateIndexes.indexedFiles(entry).contains)
      val bytesTotal = listed.map(_.size).sum
      val bytesToRead = math.round(e.fraction * bytesTotal)
      val stats = RelationSkippingStats(
        relation = source.table.getOrElse(source.fsRelation.location.rootPaths.mkString(", ")),
        filter = "", filesTotal = listed.size, bytesTotal = bytesTotal, filesSkipped = 0,
        bytesSkipped = bytesTotal - bytesToRead,
        indexes = Seq(SplitSeekStats.skips(entry, 0, bytesTotal - bytesToRead)))
      Right(SeekPlan(Map.empty, whole.map(_.path).toSet, bytesToRead, stats))
  }

  /**
   * The indexes among `indexes` built from some of the files `source` lists: only those seek into
   * them. This also keeps the lookup's own read of index data (a Parquet scan too) from being
   * served by hybrid scan.
   */
  private[rules] def indexesOf(indexes: Seq[LogEntry], source: FileSource): Seq[LogEntry] = {
    lazy val listed = source.listedFiles
    indexes.filter(e =>
      CandidateIndexes.sameReader(e, source) && listed.exists(CandidateIndexes.indexedFiles(e).contains))
  }

  /**
   * Whether `entry` can narrow this scan: a row-group index only a plain Parquet scan (a table
   * format's subclass of it reads otherwise), a file-level one the CSV or JSON scan it was built
   * from ([[indexesOf]] holds the reader the same); a table format's scan neither.
   */
  private def seeksInto(entry: LogEntry, fs: HadoopFsRelation, source: FileSource): Boolean =
    source.versioned.isEmpty &&
      (if (SplitIndex.fileLevel(entry.index)) SplitIndex.FileLevelFormats.contains(source.format)
       else fs.fileFormat.getClass == classOf[ParquetFileFormat])

  /**
   * What the seek is expected to read, from the index's build statistics: a filter expected to
   * reach more than `maxReadFraction` is refused before the lookup, a job that for such filters
   * reads most of the index only to fall back (measured slower than no index at all).
   */
  private def estimate(spark: SparkSession, entry: LogEntry, onKeys: Seq[Expression], listed: Seq[FileKey])
      : Option[SeekEstimate] = {
    val indexed = CandidateIndexes.indexedFiles(entry)
    val (covered, whole) = listed.partition(indexed.contains)
    SeekEstimate.of(entry, SplitIndex.keyColumns(entry.index), onKeys, spark.sessionState.conf.resolver,
      covered.map(_.size).sum, whole.map(_.size).sum)
  }

  /** The index's layout over a scan listing `listed`, from its build statistics ([[SeekEstimate.layout]]). */
  private[rules] def layoutOf(entry: LogEntry, listed: Seq[FileKey]): Option[SeekLayout] = {
    val indexed = CandidateIndexes.indexedFiles(entry)
    val (covered, whole) = listed.partition(indexed.contains)
    SeekEstimate.layout(entry, covered.map(_.size).sum, whole.map(_.size).sum)
  }

  private def withSeek(relation: LogicalRelation, fs: HadoopFsRelation, plan: SeekPlan, entry: LogEntry)
      : LogicalRelation = {
    val location = new SplitSeekFileIndex(fs.location, plan, entry, hadoopConfOf(fs))
    // A file-level seek reads its files whole, with the scan's own format.
    val format =
      if (SplitIndex.fileLevel(entry.index)) fs.fileFormat
      else new SplitSeekParquetFormat(plan.rowGroups, plan.fingerprints, entry.name)
    relation.copy(relation = fs.copy(location = location, fileFormat = format)(fs.sparkSession))
  }

  /** The configuration the scan `fs` opens its files with. */
  private[rules] def hadoopConfOf(fs: HadoopFsRelation): () => Configuration =
    () => fs.sparkSession.sessionState.newHadoopConfWithOptions(fs.options)

  private def storedSchema(entry: LogEntry): StructType = StoredSchemas.parse(entry.index.schema)

  /** Lookups by (index entry, filter, digest of the source files listed and settings), bounded by their row groups. */
  private val lookups = new BoundedCache[((String, String, Long), Expression, String), Either[Reason, SeekPlan]](
    64, 1000000L, _.fold(_ => 1L, p => 1L + p.rowGroups.valuesIterator.map(_.size.toLong).sum))

  /** The SHA-256 of a listing: a key that does not keep a large table's whole listing alive. */
  private def digestOf(listed: Seq[FileKey]): String = {
    val sha = java.security.MessageDigest.getInstance("SHA-256")
    listed.foreach(k =>
      sha.update(s"${k.path}\u0000${k.size}\u0000${k.modificationTime}\u0000${k.deletionVector.getOrElse("")}\u0001"
          .getBytes(java.nio.charset.StandardCharsets.UTF_8)))
    sha.digest().map("%02x".format(_)).mkString
  }

  /**
   * The locations [[SplitIndexLookup.locate]] reads directly, read by a query over the index
   * instead, for what the direct read does not take (more index bytes than a driver-side read
   * takes): its rows, at most `maxLocations` + 1, as (lineage id, location columns).
   */
  private def nestedLookup(
      spark: SparkSession,
      entry: LogEntry,
      onKeys: Seq[Expression],
      locationColumns: Seq[String],
      maxLocations: Int): Seq[Array[Long]] = {
    val indexFiles = IndexFileIndex.bucketsToRead(entry, onKeys) match {
      case Some(buckets) => entry.content.files.filter(f => CoveringIndex.bucketOf(f).forall(buckets.contains))
      case None => entry.content.files
    }
    if (indexFiles.isEmpty) return Nil
    // Its files from the log, as every index scan reads them: no listing (a job past 32
    // paths), and a missing or corrupt index file fails the lookup instead of silently
    // dropping locations.
    val relation = new IndexHadoopFsRelation(entry, spark, new IndexFileIndex(entry), None,
      IndexHadoopFsRelation.lookupOptions)
    val scan = FileRelation(relation, DataTypeUtils.toAttributes(storedSchema(entry)))
    val attrs = scan.output
    val resolver = spark.sessionState.conf.resolver
    def attr(name: String) = attrs.find(i => resolver(i.name, name)).get
    val onIndex = onKeys.reduce(And).transform { case a: AttributeReference => attr(a.name) }
    // Matching rows, not distinct locations, are collected and deduplicated by the caller: a
    // distinct would add a shuffle (measured: it made lookups slower than the plain scan they
    // replace). Rows bound locations from above, so the limit on rows also bounds the driver's memory.
    val query = Limit(Literal(maxLocations + 1),
      Project((CoveringIndex.LineageColumn +: locationColumns).map(attr), Filter(onIndex, scan)))
    // The physical plan's rows, not a Dataset action: an action also writes the plan's
    // description for the UI's SQL tab, a tenth of a point lookup's planning (measured) for a
    // read nobody sees as a query of its own.
    SparkInternals.ofRows(spark, query).queryExecution.executedPlan.executeCollect()
      .map(r =>
        Array.tabulate(locationColumns.size + 1)(i =>
          if (query.output(i).dataType == LongType) r.getLong(i) else r.getInt(i).toLong)).toSeq
  }

  /**
   * The row groups `entry` locates for `onKeys` (conjuncts over its key columns) among the files
   * `source` lists, or why the seek does not pay.
   */
  private def lookup(
      spark: SparkSession,
      entry: LogEntry,
      onKeys: Seq[Expression],
      source: FileSource,
      described: String): Either[Reason, SeekPlan] = {
    val maxLocations = HyperspaceConf.splitMaxLocations(spark)
    // Version 3 rows name (file id, row group ordinal, row position); versions 1 and 2 rows the
    // row group's first byte and size instead of the last two; file-level rows the file id alone.
    val fileLevel = SplitIndex.fileLevel(entry.index)
    val perPosition = SplitIndex.rowsPerPosition(entry.index)
    val locationColumns = perPosition match {
      case _ if fileLevel => Nil
      case Some(_) => Seq(SplitIndex.RowGroupColumn, SplitIndex.RowPositionColumn)
      case None => Seq(SplitIndex.RowGroupStartColumn, SplitIndex.RowGroupBytesColumn)
    }
    val located = SplitIndexLookup.locate(spark, entry, onKeys, locationColumns, maxLocations)
    val direct = located.isDefined
    val rows = located.getOrElse(nestedLookup(spark, entry, onKeys, locationColumns, maxLocations))
    if (rows.size > maxLocations) return Left(Reason.TooManyLocations(maxLocations))
    val listed = source.listedFiles
    val indexed = CandidateIndexes.indexedFiles(entry)
    val byId = entry.source.files.map(f => f.id -> f.key).toMap
    val listedKeys = listed.toSet
    val unindexed = listed.filterNot(indexed.contains)
    // What each located file was at the build (tables of kind versions 1 and 2 do not exist, and
    // tables written before fingerprints record none): a damaged table fails the lookup here.
    lazy val content =
      if (fileLevel || perPosition.isDefined) RowGroupTable.contentOf(spark, entry) else RowGroupTableContent.empty
    def fingerprints(located: Iterable[Long]): Map[String, Long] =
      located.flatMap(id => byId.get(id).flatMap(k => content.fingerprints.get(id).map(k.path -> _))).toMap
    if (fileLevel) {
      val ids = rows.map(_(0)).distinct.filter(id => byId.get(id).exists(listedKeys.contains))
      val files = ids.map(byId)
      return seekPlan(spark, entry, source, listed, Map.empty, unindexed ++ files, described, direct,
        fingerprints(ids))
    }
    val distinctLocated = rows.map(r => (r(0), r(1), r(2))).distinct
    lazy val table = content.groups
    val rowGroups = distinctLocated.groupBy(_._1).toSeq.flatMap { case (id, groups) =>
      byId.get(id).filter(listedKeys.contains).map(k =>
        k.path ->
          (perPosition match {
            case None => groups.map { case (_, start, bytes) => RowGroupRange(start, bytes) }
            case Some(per) =>
              groups.groupBy(_._2).toSeq.map { case (ordinal, hits) =>
                val g = table.getOrElse((id, ordinal.toInt),
                  throw new HyperspaceException(
                    s"Split index '${entry.name}' names row group $ordinal of source file ${k.path}, which its row " +
                      "group table does not list; refresh the index in full mode."))
                // Adjacent positions make one range: parquet-mr merges them anyway.
                val ranges = hits.map(_._3).distinct.sorted.map(p => (p * per, math.min(g.rows, (p + 1) * per) - 1))
                RowGroupRange(g.start, g.bytes, ordinal.toInt, ranges)
              }
          }).sortBy(_.start))
    }.toMap
    val locatedIds = distinctLocated.map(_._1).distinct.filter(id => byId.get(id).exists(listedKeys.contains))
    seekPlan(spark, entry, source, listed, rowGroups, unindexed, described, direct, fingerprints(locatedIds))
  }

  /**
   * `entry`'s seek reading `rowGroups` and the files `whole` of a scan listing `listed`, or why it does
   * not pay: more than `maxReadFraction` of the scan's bytes.
   */
  private def seekPlan(
      spark: SparkSession,
      entry: LogEntry,
      source: FileSource,
      listed: Seq[FileKey],
      rowGroups: Map[String, Seq[RowGroupRange]],
      whole: Seq[FileKey],
      described: String,
      direct: Boolean,
      fingerprints: Map[String, Long]): Either[Reason, SeekPlan] = {
    val bytesToRead = rowGroups.valuesIterator.flatten.map(_.bytes).sum + whole.map(_.size).sum
    val bytesTotal = listed.map(_.size).sum
    val fraction = if (bytesTotal == 0) 0.0 else bytesToRead.toDouble / bytesTotal
    val max = HyperspaceConf.splitMaxReadFraction(spark)
    if (fraction > max) return Left(Reason.SeekNotSelective(fraction, max))
    val read = rowGroups.keySet ++ whole.map(_.path)
    val skipped = listed.filterNot(f => read.contains(f.path))
    val stats = RelationSkippingStats(
      relation = source.table.getOrElse(source.fsRelation.location.rootPaths.mkString(", ")),
      filter = described,
      filesTotal = listed.size, bytesTotal = bytesTotal,
      filesSkipped = skipped.size, bytesSkipped = bytesTotal - bytesToRead,
      indexes = Seq(SplitSeekStats.skips(entry, skipped.size, bytesTotal - bytesToRead)))
    Right(SeekPlan(rowGroups, whole.map(_.path).toSet, bytesToRead, stats, directLookup = direct, fingerprints))
  }
}

/**
 * Audit mode (`spark.hyperspace.audit.sampleRate` > 0): after a seek is planned, a sample of the
 * indexed files it pruned — wholly or some of their row groups — is read in full under the
 * query's filter, and the rows it keeps are counted against what the seek reads of the same
 * files. More rows in full means the index let a matching row be skipped: the query fails with
 * an [[AuditFailure]] naming the index and files, instead of silently returning fewer rows.
 */
object SplitSeekAudit {

  def check(
      spark: SparkSession,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      sought: LogicalRelation,
      condition: Expression,
      plan: SeekPlan,
      entry: LogEntry): Unit = {
    val rate = HyperspaceConf.auditSampleRate(spark)
    if (rate <= 0) return
    val listed: Seq[FileKey] = FileSource(relation, fs).listedFiles
    // Files read whole cannot have lost rows; every other listed file had something pruned.
    val pruned = listed.map(_.path).filterNot(plan.wholeFiles.contains)
    if (pruned.isEmpty) return
    val sample = PruningAudit.sample(pruned, rate)
    val seekFs = sought.relation.asInstanceOf[HadoopFsRelation]
    val seekLocation = new SplitSeekFileIndex(new SelectedFilesIndex(fs.location, sample),
      plan.copy(wholeFiles = Set.empty), entry, SplitSeekRule.hadoopConfOf(fs))
    val seekOfSample = sought.copy(relation = seekFs.copy(location = seekLocation)(seekFs.sparkSession))
    val inFull = PruningAudit.rowsMatching(spark, relation, fs, condition, sample)
    val bySeek = SparkInternals.ofRows(spark, Filter(condition, seekOfSample)).count()
    def fail(files: Set[String], expected: Long, got: Long, how: String): Nothing =
      throw new AuditFailure(
        s"Split index '${entry.name}' (log version ${entry.id}) skipped rows: in ${files.size} sampled source " +
          s"file(s) (${files.toSeq.sorted.take(3).mkString(", ")}${if (files.size > 3) ", ..." else ""}) the filter " +
          s"${condition.sql} keeps $expected row(s) but the seek $how reads $got of them. Refresh the index in full " +
          "mode or delete it; the query was not run.")
    if (inFull != bySeek) fail(sample, inFull, bySeek, "")
    // A seek read in the driver reads only the pages of the located row ranges: the sampled files
    // it would read so are read so here too, and their matching rows counted.
    val paged = plan.rowGroups.filter { case (path, groups) => sample.contains(path) && groups.exists(_.rows.nonEmpty) }
    val readable = condition.deterministic && condition.references.subsetOf(AttributeSet(relation.output))
    if (paged.nonEmpty && fs.partitionSchema.isEmpty && readable) {
      val inFullPaged = PruningAudit.rowsMatching(spark, relation, fs, condition, paged.keySet)
      val byPages = pageRowsMatching(spark, relation, fs, condition, paged, plan.fingerprints, entry.name)
      if (inFullPaged != byPages) fail(paged.keySet, inFullPaged, byPages, "by pages")
    }
  }

  /** Rows of `relation` satisfying `condition` that the driver-side page read of `groups` returns. */
  private def pageRowsMatching(
      spark: SparkSession,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      condition: Expression,
      groups: Map[String, Seq[RowGroupRange]],
      fingerprints: Map[String, Long],
      indexName: String): Long = {
    val hadoopConf = spark.sessionState.newHadoopConfWithOptions(fs.options)
    val options = fs.options + (FileFormat.OPTION_RETURNING_BATCH -> "false")
    val format = new SplitSeekParquetFormat(groups, fingerprints, indexName)
    // Configures `hadoopConf` for the data schema, as the driver-side read has it.
    val whole = format.buildReaderWithPartitionValues(
      spark, fs.dataSchema, fs.partitionSchema, fs.dataSchema, Nil, options, hadoopConf)
    val read = SplitPageRead.seekReader(spark.sessionState.conf, options, fs.dataSchema, hadoopConf,
      new PageReadCounts, groups, whole, format.check(hadoopConf))
    val predicate = SharedCodePredicate.create(condition, relation.output)
    val files = fs.location.listFiles(Nil, Nil).flatMap(_.files).map(_.fileStatus)
      .filter(f => groups.contains(f.getPath.toString))
    files.map(status => read(FileListing.partitionedFile(status)).count(predicate).toLong).sum
  }
}
