package io.hyperspace.index.covering

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FileSourceOptions
import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, EqualNullSafe, EqualTo, Expression, In, InSet, Literal, Murmur3Hash, PlanExpression, Pmod}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation, PartitionDirectory}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.{DataType, StructType}

import io.hyperspace.index.{BoundedCache, FileRanges, IndexKinds}
import io.hyperspace.index.zorder.{ZOrderCoveringIndex, ZOrderFileIndex}
import io.hyperspace.log.{Content, ContentFile, LogEntry}
import io.hyperspace.shims.{FileListing, FileRelation, FileRelationBase}

/**
 * The files of one index version, straight from its log entry: no directory listing when a
 * query is planned. Equality, `IN` and `<=>` filters on the indexed column select the bucket
 * files that can hold the wanted keys, so the others are never opened — also when Spark decides
 * not to read the index as a bucketed relation (filter-only queries), where its own bucket
 * pruning does not apply. Files whose logged ranges of the indexed columns rule a filter out
 * are not opened either.
 */
class IndexFileIndex(val entry: LogEntry) extends FileIndex {
  private def status(f: ContentFile): FileStatus =
    new FileStatus(f.size, false, 1, 128L * 1024 * 1024, f.modificationTime, new Path(entry.content.pathOf(f)))

  override def rootPaths: Seq[Path] =
    entry.content.versionsUsed.toSeq.sorted.map(v => new Path(entry.content.root, Content.versionDirName(v)))
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    Seq(FileListing.directory(org.apache.spark.sql.catalyst.InternalRow.empty,
        IndexFileIndex.filesToRead(entry, dataFilters).map(status)))
  override def inputFiles: Array[String] = entry.content.files.map(entry.content.pathOf).toArray
  override def refresh(): Unit = ()
  override def sizeInBytes: Long = entry.content.sizeInBytes
  override def partitionSchema: StructType = new StructType()
  // By the index version it lists, not by identity: a scan's canonical form holds its relation
  // and so this listing, and Spark reuses an exchange (or a subquery) only between scans that
  // canonicalize alike. Each rewrite builds its own listing, so two references to the same data
  // (a CTE read twice, TPC-DS q1) would otherwise read and shuffle it twice. What the listing
  // returns depends only on the entry and the scan's filters, which the scan node compares.
  override def equals(other: Any): Boolean = other match {
    case o: IndexFileIndex if o.getClass == getClass =>
      // A hypothetical entry (the advisor's what-if) is written nowhere: only itself is itself.
      if (entry.isHypothetical || o.entry.isHypothetical) o.entry eq entry else o.entry.identity == entry.identity
    case _ => false
  }
  override def hashCode(): Int = entry.identity.hashCode()

  override def toString: String = s"IndexFileIndex[${entry.name} v${entry.content.dataVersion}]"
}

object IndexFileIndex {
  /**
   * The files of covering index `entry` that can hold rows satisfying all of `filters` (a
   * conjunction, on a scan of the index or of its source: columns are matched by name): those of
   * the buckets [[bucketsToRead]] selects, less those whose logged ranges rule the filters out.
   */
  def filesToRead(entry: LogEntry, filters: Seq[Expression]): Seq[ContentFile] =
    if (filters.isEmpty) entry.content.files
    else if (entry.isHypothetical || filters.exists(_.exists(_.isInstanceOf[PlanExpression[_]]))) {
      selectFiles(entry, filters)
    } else filesCache.getOrElseUpdate((entry.identity, filters), selectFiles(entry, filters))

  // Planning one query asks for the same scan's files several times (the ranking, the scan node,
  // the driver-read check); an entry is immutable, so its answer for the same filters is kept.
  // Not for filters holding a subquery: a key would keep its plan (and results) alive.
  private val filesCache =
    new BoundedCache[((String, String, Long), Seq[Expression]), Seq[ContentFile]](256, 1000000L, _.size.toLong + 1)

  private def selectFiles(entry: LogEntry, filters: Seq[Expression]): Seq[ContentFile] = {
    val inBuckets = bucketsToRead(entry, filters).map(filesOfBuckets(entry, _)).getOrElse(entry.content.files)
    FileRanges.filesToRead(entry.name, inBuckets, entry.index, CoveringIndex.storedIndexedColumns(entry.index), filters)
  }

  /** The files of `entry` in `buckets` (and any file without a bucket number). */
  def filesOfBuckets(entry: LogEntry, buckets: Set[Int]): Seq[ContentFile] =
    entry.content.files.filter(f => CoveringIndex.bucketOf(f).forall(buckets.contains))

  /**
   * The buckets that can hold rows satisfying all of `filters` (a conjunction), when some filter
   * pins the single indexed column to known values; None when every bucket may match.
   */
  def bucketsToRead(entry: LogEntry, filters: Seq[Expression]): Option[Set[Int]] = {
    val indexed = CoveringIndex.storedIndexedColumns(entry.index)
    if (indexed.size != 1) return None
    val column = indexed.head
    def isColumn(a: Attribute): Boolean = a.name.equalsIgnoreCase(column)
    def bucketOf(value: Literal): Int =
      Pmod(new Murmur3Hash(Seq(value)), Literal(entry.index.numBuckets)).eval().asInstanceOf[Int]
    val pinned: Seq[Set[Int]] = filters.flatMap {
      case EqualTo(a: Attribute, l: Literal) if isColumn(a) && l.dataType == a.dataType =>
        Some(valuesBuckets(Seq(l), bucketOf))
      case EqualTo(l: Literal, a: Attribute) if isColumn(a) && l.dataType == a.dataType =>
        Some(valuesBuckets(Seq(l), bucketOf))
      case EqualNullSafe(a: Attribute, l: Literal) if isColumn(a) && l.dataType == a.dataType => Some(Set(bucketOf(l)))
      case EqualNullSafe(l: Literal, a: Attribute) if isColumn(a) && l.dataType == a.dataType => Some(Set(bucketOf(l)))
      case In(a: Attribute, list)
          if isColumn(a) && list.forall(v => v.isInstanceOf[Literal] && v.dataType == a.dataType) =>
        Some(valuesBuckets(list.map(_.asInstanceOf[Literal]), bucketOf))
      case InSet(a: Attribute, values) if isColumn(a) =>
        Some(valuesBuckets(values.toSeq.map(v => Literal.create(v, a.dataType)), bucketOf))
      case _ => None
    }
    if (pinned.isEmpty) None else Some(pinned.reduce(_ intersect _))
  }

  // `col = NULL` and `col IN (NULL)` match nothing, so null literals select no bucket.
  private def valuesBuckets(values: Seq[Literal], bucketOf: Literal => Int): Set[Int] =
    values.filter(_.value != null).map(bucketOf).toSet
}

/**
 * A covering index read as a bucketed Parquet relation; named so it is recognisable in plans.
 *
 * Its scans never skip missing or corrupt files, whatever the session's
 * `spark.sql.files.ignoreMissingFiles` / `ignoreCorruptFiles` say: those settings accept fewer
 * rows from the user's own files, but an index file skipped would silently drop rows the source
 * has. Spark reads the two settings per relation (FileSourceOptions) before the session's.
 */
class IndexHadoopFsRelation(
    val entry: LogEntry,
    spark: SparkSession,
    location: FileIndex,
    bucketSpec: Option[BucketSpec],
    readOptions: Map[String, String] = IndexHadoopFsRelation.options)
  extends FileRelationBase(
    location,
    new StructType(),
    DataType.fromJson(entry.index.schema).asInstanceOf[StructType],
    bucketSpec,
    new ParquetFileFormat,
    readOptions,
    spark) {

  /** A covering index: all its files, bucketed. */
  def this(entry: LogEntry, spark: SparkSession) =
    this(entry, spark, new IndexFileIndex(entry), Some(IndexHadoopFsRelation.bucketSpec(entry)))

  /**
   * Whether every bucket of this covering index version is one file. The covering kind writes
   * every data file sorted on the indexed columns, so each bucket then reads sorted
   * ([[io.hyperspace.execution.IndexBucketOrder]]).
   */
  lazy val oneSortedFilePerBucket: Boolean = {
    val buckets = entry.content.files.map(CoveringIndex.bucketOf)
    entry.index.kind == CoveringIndexKind.name && buckets.forall(_.isDefined) && buckets.distinct.size == buckets.size
  }

  override def toString: String =
    s"Hyperspace(Type: ${IndexKinds.find(entry.index.kind).map(_.abbreviation).getOrElse(entry.index.kind)}, " +
      s"Name: ${entry.name}, LogVersion: ${entry.id})"
}

object IndexHadoopFsRelation {
  /** Bucketed and sorted by the indexed columns, as the index data names them. */
  def bucketSpec(entry: LogEntry): BucketSpec = {
    val columns = CoveringIndex.storedIndexedColumns(entry.index)
    BucketSpec(entry.index.numBuckets, columns, columns)
  }

  private val DictionaryFilter = "parquet.filter.dictionary.enabled"

  /** Read options of every index scan: a missing or damaged index file fails the query. */
  val options: Map[String, String] = Map(
    FileSourceOptions.IGNORE_MISSING_FILES -> "false",
    FileSourceOptions.IGNORE_CORRUPT_FILES -> "false")

  /**
   * [[options]] for a lookup of a few keys in files sorted by them (a split index's seek, a
   * filter on a covering index's sorted column): the
   * row group and page statistics already narrow the read to the pages that can hold the keys,
   * and Parquet's dictionary filter would first expand each row group's key dictionary (some
   * 90,000 values a bucket at TPC-H SF1, a set built per lookup) to tell the same. Measured: a
   * point lookup's planning 140 ms without it against 177 ms with it (medians of 77 alternating
   * runs, load 14; benchmarks/results/archive/split-point-profile.md). For a `SELECT *` lookup on a
   * covering index read in the driver it was a third of the read: 43 → 22 ms a read (load 8;
   * benchmarks/results/archive/h-18-tiny-seek-profile.notes.md). A Z-order index's files are sorted on no
   * column, so its reads keep the filter.
   */
  val lookupOptions: Map[String, String] = options + (DictionaryFilter -> "false")

  /** Whether `relation` reads with [[lookupOptions]]: a few keys (or a range) of the column its files are sorted on. */
  def readsSortedKeys(relation: HadoopFsRelation): Boolean =
    relation.options.get(DictionaryFilter) == lookupOptions.get(DictionaryFilter)
}

object IndexScan {

  /** Whether `relation` already reads an index (so no rule rewrites it again). */
  def isIndexScan(relation: LogicalRelation): Boolean =
    relation.relation.isInstanceOf[IndexHadoopFsRelation]

  /**
   * A plan reading index `entry` in place of `source`, with the source's output attributes (same
   * expression ids) in the source's order, so the plan above it stays valid: operators bind
   * columns by expression id, but the rows a query returns are read by position, so an index
   * storing its columns in another order (indexed first) needs a Project restoring the source's
   * order. The Project also drops index columns the source does not output (the lineage column)
   * except the flat columns of nested fields named in `fields` ([[IndexColumn.storedName]]s),
   * which follow the source's columns for the plan above to read in place of struct fields.
   * `bySplits` reads the index's files as Spark reads any files (see [[scanFor]]).
   */
  def replace(spark: SparkSession, entry: LogEntry, source: LogicalRelation, fields: Seq[String] = Nil,
      filters: Seq[Expression] = Nil, bySplits: Boolean = false): LogicalPlan = {
    val scan = scanFor(spark, entry, source, filters, bySplits)
    val output = sourceColumns(scan, source) ++ fieldColumns(scan, fields)
    if (scan.output.map(_.exprId) == output.map(_.exprId)) scan else Project(output, scan)
  }

  /** The attributes of `scan` (from [[scanFor]]) holding the nested fields stored as `fields`. */
  def fieldColumns(scan: LogicalRelation, fields: Seq[String]): Seq[Attribute] =
    fields.map(f =>
      scan.output.find(_.name == f).getOrElse(
        throw new IllegalStateException(s"The index scan $scan has no column $f")))

  /**
   * The index relation of `entry` standing in for `source`: its columns that the source has
   * carry the source's attributes; the others (the lineage column) get new ones. A Z-order
   * index lists only its files whose ranges can satisfy `filters` (the conjuncts of the filter
   * over the scan, on the source's attributes); a covering index whose sorted column `filters`
   * constrain is read with [[IndexHadoopFsRelation.lookupOptions]].
   *
   * `bySplits`: a covering index read as a relation without buckets, so Spark packs its files into
   * as many tasks as their bytes need, as for any files; a bucketed relation Spark may read one task
   * a bucket, also where nothing above needs the buckets (its `DisableUnnecessaryBucketedScan`
   * keeps them under a broadcast hash join that an aggregate's exchange follows): 64 tasks for a
   * side Spark read in 2 (issue #55).
   */
  def scanFor(spark: SparkSession, entry: LogEntry, source: LogicalRelation, filters: Seq[Expression] = Nil,
      bySplits: Boolean = false): LogicalRelation = {
    val relation =
      if (ZOrderCoveringIndex.isZOrder(entry)) ZOrderFileIndex.relation(spark, entry, filters)
      else if (bySplits)
        new IndexHadoopFsRelation(entry, spark, new IndexFileIndex(entry), None,
          if (filtersSortedColumn(entry, filters)) IndexHadoopFsRelation.lookupOptions
          else IndexHadoopFsRelation.options)
      else if (filtersSortedColumn(entry, filters))
        new IndexHadoopFsRelation(entry, spark, new IndexFileIndex(entry),
          Some(IndexHadoopFsRelation.bucketSpec(entry)),
          IndexHadoopFsRelation.lookupOptions)
      else new IndexHadoopFsRelation(entry, spark)
    val byName = source.output.map(a => a.name.toLowerCase -> a).toMap
    val output = relation.schema.fields.toSeq.map { f =>
      byName.get(f.name.toLowerCase) match {
        case Some(a) => a.withNullability(f.nullable || a.nullable)
        case None => AttributeReference(f.name, f.dataType, f.nullable)()
      }
    }
    FileRelation(relation, output)
  }

  /** Whether one of `filters` references the column every file of covering index `entry` is sorted on. */
  private def filtersSortedColumn(entry: LogEntry, filters: Seq[Expression]): Boolean =
    entry.index.kind == CoveringIndexKind.name &&
      CoveringIndex.storedIndexedColumns(entry.index).headOption.exists(sorted =>
        filters.exists(_.references.exists(_.name.equalsIgnoreCase(sorted))))

  /** The source's attributes that `scan` (from [[scanFor]]) outputs, in the source's order. */
  def sourceColumns(scan: LogicalRelation, source: LogicalRelation): Seq[Attribute] =
    source.output.filter(a => scan.output.exists(_.exprId == a.exprId))
}
