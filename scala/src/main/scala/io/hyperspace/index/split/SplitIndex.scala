package io.hyperspace.index.split

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.functions.{approx_count_distinct, broadcast, col, lit, raise_error, struct, sum}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types._

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{FileRanges, IndexKind, IndexKindConfig, IndexKinds, KindSummary, RewriteFamily, StoredSchemas}
import io.hyperspace.index.covering.{CoveringIndex, IndexColumn}
import io.hyperspace.log.{ContentFile, IndexDefinition, LocationStats, LogEntry, SourceFile}
import io.hyperspace.sources.{FileSource, SourcePaths}

/**
 * The split index: per source row its key columns and its location — the source file's id (the
 * lineage id the log keeps), the ordinal of the Parquet row group holding it and a coarse position
 * in that row group (`_row_position`: the row's index within the row group divided by
 * [[rowsPerPosition]]) — hash-bucketed on the keys and sorted within each bucket, as a covering
 * index without the included columns, in zstd-compressed Parquet. Each data version directory also
 * holds a small table of the row groups its rows point into ([[RowGroupTable]]: first byte,
 * compressed size, rows), so what is the same for every row of a row group is stored once.
 *
 * Kind version 3 (this layout) lets a seek read only the Parquet pages holding the located rows
 * ([[SplitPageRead]]). Version 2 stored per row the row group's first byte and size instead of a
 * position (a fifth of the index's bytes, and only whole row groups could be read); version 1 also
 * stored the row's index within its file (`_row_index`, half the index's bytes). Indexes of
 * versions 1 and 2 keep their layout — their refreshes and optimizes keep writing it (the schema
 * in the log says which) — and seek whole row groups as before. The seek rewrite
 * ([[io.hyperspace.rules.SplitSeekRule]]) reads the locations matching a filter and then only
 * those row groups (or pages) of the source.
 *
 * CSV and JSON sources have no row groups: over them the index is file-level ([[fileLevel]]), its
 * rows the distinct (keys, source file id) pairs, and a seek reads the located files whole. Their
 * directories' tables list each source file as one unit (ordinal 0, first byte 0, its size), so
 * the estimate and join pruning's cost check reason about files as they do about row groups.
 */
object SplitIndex extends IndexKind {
  val Kind = "SplitIndex"
  val KindVersion = 3

  /** Location columns, after the keys and the lineage column. */
  val RowGroupColumn = "_row_group"
  /** Kind version 3: the row's index within its row group, divided by [[rowsPerPosition]]. */
  val RowPositionColumn = "_row_position"
  /** Kind versions 1 and 2 (see above). */
  val RowGroupStartColumn = "_row_group_start"
  val RowGroupBytesColumn = "_row_group_bytes"
  /** Written by kind version 1 only (see above). */
  val RowIndexColumn = "_row_index"
  private val LocationColumns =
    Seq(RowGroupColumn, RowPositionColumn, RowGroupStartColumn, RowGroupBytesColumn, RowIndexColumn)

  /**
   * Rows per `_row_position` unit, recorded in the definition's properties under this key. 1,024
   * rows: a position then takes about 7 bits per row for row groups of 100,000 rows (the exact row
   * index took 17, half of a version 1 index's bytes), and 1,024 rows lie within one or two pages
   * of parquet-mr's default 20,000-row pages, so a located row costs the pages holding it.
   */
  val RowsPerPositionKey = "rowsPerPosition"
  val DefaultRowsPerPosition = 1024

  /** Rows per position unit of a version 3 index, None for versions 1 and 2 (no positions). */
  def rowsPerPosition(definition: IndexDefinition): Option[Int] =
    if (!storedColumns(definition).contains(RowPositionColumn)) None
    else Some(definition.properties.get(RowsPerPositionKey).map(_.toInt).getOrElse(DefaultRowsPerPosition))

  /**
   * The Parquet writer's options for index files: zstd, which packs the sorted keys and the
   * dictionary codes of the locations about a fifth smaller than Spark's default snappy (measured
   * on the 2M-row benchmark index: 12.2 to 10.2 MB).
   */
  private val WriteOptions = Map("compression" -> "zstd")

  override val name: String = Kind
  override val abbreviation: String = "SI"

  override def configFromJson(json: String): IndexKindConfig = SplitIndexConfig.fromJson(json)

  /** Source formats indexed file by file: no row groups to point into, so a seek reads whole files. */
  val FileLevelFormats: Set[String] = Set("csv", "json")

  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val c = configAs[SplitIndexConfig](config)
    val fileLevel = FileLevelFormats.contains(source.format)
    if ((source.format != "parquet" && !fileLevel) || source.versioned.isDefined) {
      throw new HyperspaceException(
        s"Index '${c.name}' cannot be a split index over this ${source.format} source: a split index points " +
          "into the row groups of plain Parquet files, or names the CSV or JSON files holding each key. For " +
          "Delta Lake and Iceberg tables, or other formats, use a covering or data skipping index.")
    }
    val covering = CoveringIndex.define(spark, c.name, source, c.indexedColumns, Nil,
      HyperspaceConf.numBuckets(spark), lineage = true)
    CoveringIndex.columnsOf(covering)._1.find(_.isNested).foreach { nested =>
      throw new HyperspaceException(
        s"Index '${c.name}': the split index keys on top-level columns only; '${nested.name}' is a nested field.")
    }
    val resolver = spark.sessionState.conf.resolver
    source.relation.schema.fieldNames.find(n => LocationColumns.exists(resolver(n, _))).foreach { clash =>
      throw new HyperspaceException(
        s"Index '${c.name}' cannot be a split index of a source with a column named '$clash': the split index " +
          "stores its locations under that name.")
    }
    if (fileLevel) covering.copy(kind = Kind, kindVersion = KindVersion)
    else {
      val stored = DataType.fromJson(covering.schema).asInstanceOf[StructType]
      val schema = StructType(stored.fields ++ Seq(
        StructField(RowGroupColumn, IntegerType, nullable = false),
        StructField(RowPositionColumn, IntegerType, nullable = false)))
      covering.copy(kind = Kind, kindVersion = KindVersion, schema = schema.json,
        properties = covering.properties + (RowsPerPositionKey -> DefaultRowsPerPosition.toString))
    }
  }

  private def storedColumns(definition: IndexDefinition): Seq[String] =
    StoredSchemas.parse(definition.schema).fieldNames.toSeq

  /**
   * Whether the index locates whole source files (CSV, JSON: keys and file id only) rather than
   * Parquet row groups; the stored schema says which, as it does for the kind versions.
   */
  def fileLevel(definition: IndexDefinition): Boolean = !storedColumns(definition).contains(RowGroupColumn)

  /** Whether the index's directories hold a [[RowGroupTable]]: file-level and kind version 3 indexes. */
  private def hasUnitTable(definition: IndexDefinition): Boolean =
    fileLevel(definition) || rowsPerPosition(definition).isDefined

  /** The stored names of the key columns (top-level, so the source's names). */
  def keyColumns(definition: IndexDefinition): Seq[String] = CoveringIndex.storedIndexedColumns(definition)

  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit =
    if (fileLevel(definition)) writeFileLevel(df, definition, indexName, files, dataPath, mode)
    else writeRowGroups(df, definition, indexName, files, dataPath, mode)

  /** The message of a build that met a row of a file it did not list: the file changed under it. */
  private def changedUnderBuild(indexName: String) =
    raise_error(lit(s"A source file of split index '$indexName' changed while the index was being built; retry."))

  /**
   * `files` as (`__hs_file_path`, `__hs_file_id`), the path spelled as source rows name their file
   * in `_metadata.file_path`: percent-encoded, unlike the listing.
   */
  private def fileIds(spark: SparkSession, files: Seq[SourceFile]): DataFrame = {
    import spark.implicits._
    files.map(f => (SourcePaths.asMetadataPath(f.path), f.id)).toDF("__hs_file_path", "__hs_file_id")
  }

  /** `bucketed` (partitioned by the keys into the index's buckets) written as its bucket files. */
  private def writeBuckets(bucketed: DataFrame, definition: IndexDefinition, dataPath: Path, mode: SaveMode): Unit =
    SparkInternals.writeBucketedParquet(bucketed, dataPath, definition.numBuckets, keyColumns(definition),
      keyColumns(definition), mode, CoveringIndex.writeOptions(definition) ++ WriteOptions)

  /**
   * A file-level index's rows: each distinct (keys, source file id) once — a seek reads whole
   * files, so how many rows of a file hold a key does not matter — bucketed and sorted as the
   * row-group kinds are. The distinct runs after the bucketing shuffle, which already groups every
   * pair (its keys decide its bucket), so it adds no shuffle of its own.
   */
  private def writeFileLevel(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = {
    val spark = df.sparkSession
    val keys = keyColumns(definition).map(k => col(IndexColumn.quote(k)))
    val pairs = df.select(keys :+ col("_metadata.file_path").as("__hs_file_path"): _*)
      .join(broadcast(fileIds(spark, files)), Seq("__hs_file_path"), "left")
      .where(col("__hs_file_id").isNotNull || changedUnderBuild(indexName).isNull)
      .select(keys :+ col("__hs_file_id").as(CoveringIndex.LineageColumn): _*)
    writeBuckets(pairs.repartition(definition.numBuckets, keys: _*).dropDuplicates(), definition, dataPath, mode)
    RowGroupTable.add(spark, dataPath, files.map(f => RowGroupInfo(f.id, 0, 0L, 0L, 0L, f.size)),
      inTasks(spark, files)((path, f, conf) => Seq(f.id -> SourceFingerprint.sampled(path, f.size, conf))).toMap)
  }

  private def writeRowGroups(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = {
    val spark = df.sparkSession
    import spark.implicits._
    val keys = keyColumns(definition)
    // Whether the index is of kind version 1, whose files hold the row index (refreshes keep it).
    val storesRowIndex = storedColumns(definition).contains(RowIndexColumn)
    val rowIndex = "__hs_row_index"
    val rows = df.select(keys.map(k => col(IndexColumn.quote(k))) ++
        Seq(col("_metadata.file_path").as("__hs_file_path"), col("_metadata.row_index").as(rowIndex)): _*)
    val (footerGroups, fingerprints) = rowGroups(spark, files)
    val groups = footerGroups.toDF(
      "__hs_rg_file", RowGroupColumn, "__hs_rg_first", "__hs_rg_rows", RowGroupStartColumn, RowGroupBytesColumn)
    val located = rows.join(broadcast(fileIds(spark, files)), Seq("__hs_file_path"), "left")
      .join(broadcast(groups),
        col("__hs_file_id") === col("__hs_rg_file") && col(rowIndex) >= col("__hs_rg_first") &&
          col(rowIndex) < col("__hs_rg_first") + col("__hs_rg_rows"), "left")
      // A row whose file or row group is not the one listed means the file changed under the build.
      .where(col("__hs_rg_file").isNotNull || changedUnderBuild(indexName).isNull)
    val locations = rowsPerPosition(definition) match {
      case Some(per) =>
        Seq(col(RowGroupColumn), ((col(rowIndex) - col("__hs_rg_first")) / per).cast(IntegerType).as(RowPositionColumn))
      case None =>
        Seq(col(RowGroupColumn), col(RowGroupStartColumn), col(RowGroupBytesColumn)) ++
          (if (storesRowIndex) Seq(col(rowIndex).as(RowIndexColumn)) else Nil)
    }
    val data = located.select(keys.map(k => col(IndexColumn.quote(k))) ++
        Seq(col("__hs_file_id").as(CoveringIndex.LineageColumn)) ++ locations: _*)
    writeBuckets(data.repartition(definition.numBuckets, keys.map(k => col(IndexColumn.quote(k))): _*), definition,
      dataPath, mode)
    if (rowsPerPosition(definition).isDefined) {
      RowGroupTable.add(spark, dataPath,
        footerGroups.map {
          case (id, ordinal, first, rows, start, bytes) => RowGroupInfo(id, ordinal, first, rows, start, bytes)
        },
        fingerprints)
    }
  }

  /**
   * (file id, ordinal, first row, rows, first byte, compressed bytes) of every row group of
   * `files`, from their footers, and each file's [[SourceFingerprint]] (its tail, which holds the
   * footer), read in parallel by tasks (a footer is one small read).
   */
  private def rowGroups(spark: SparkSession, files: Seq[SourceFile])
      : (Seq[(Long, Int, Long, Long, Long, Long)], Map[Long, Long]) = {
    val read = inTasks(spark, files) { (path, f, conf) =>
      val groups = footerRowGroups(path, conf).map { case (ordinal, first, rows, start, bytes) =>
        (f.id, ordinal, first, rows, start, bytes)
      }
      Seq((groups, f.id -> SourceFingerprint.parquetTail(path, f.size, conf)))
    }
    (read.flatMap(_._1), read.map(_._2).toMap)
  }

  /** `each` of `files` (its path, the file, a Hadoop configuration of the session's), run in parallel by tasks. */
  private def inTasks[T: scala.reflect.ClassTag](spark: SparkSession, files: Seq[SourceFile])(
      each: (Path, SourceFile, Configuration) => Seq[T]): Seq[T] = {
    val conf = spark.sessionState.newHadoopConf().iterator().asScala.map(e => e.getKey -> e.getValue).toMap
    val slices = math.max(1, math.min(files.size, spark.sparkContext.defaultParallelism * 4))
    spark.sparkContext.parallelize(files, slices).flatMap { f =>
      val hadoopConf = new Configuration(false)
      conf.foreach { case (k, v) => hadoopConf.set(k, v) }
      each(new Path(f.path), f, hadoopConf)
    }.collect().toSeq
  }

  /** (ordinal, first row, rows, first byte, compressed bytes) of each row group of the Parquet file at `path`. */
  def footerRowGroups(path: Path, conf: Configuration): Seq[(Int, Long, Long, Long, Long)] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path, conf))
    try {
      val blocks = reader.getFooter.getBlocks.asScala.toSeq
      val firsts = blocks.scanLeft(0L)(_ + _.getRowCount)
      blocks.zipWithIndex.map { case (b, i) => (i, firsts(i), b.getRowCount, b.getStartingPos, b.getCompressedSize) }
    } finally reader.close()
  }

  /**
   * Each file's key ranges (as covering index files have, so a lookup reads only the files whose
   * ranges can hold its keys) and its [[LocationStats]]: what a seek needs to tell, before reading
   * the index, that a filter reaches too many row groups to pay. One aggregation over the files
   * just written (a build, the appended part of a refresh, a rewrite or a merge), so every file
   * of every version carries its own counts and totals are sums over the log's files.
   */
  override def describeFiles(spark: SparkSession, definition: IndexDefinition, dataPath: Path,
      files: Seq[ContentFile]): Seq[ContentFile] = {
    val schema = DataType.fromJson(definition.schema).asInstanceOf[StructType]
    val keys = keyColumns(definition).map(k => col(IndexColumn.quote(k)))
    val ranged = FileRanges.describe(spark, schema, keyColumns(definition), dataPath, files)
    // A struct of several keys is never NULL; a single NULL key is not counted, as no equality finds it.
    val key = if (keys.size == 1) keys.head else struct(keys: _*)
    val read = spark.read.schema(schema).parquet(files.map(f => new Path(dataPath, f.name).toString): _*)
      .select(col("*"), col("_metadata.file_name").as("__hs_file_name"))
    // A file-level row's unit is its file: row group 0 of the directory's table, the file's size.
    val rowGroup = if (fileLevel(definition)) lit(0) else col(RowGroupColumn)
    // Version 3 rows name their row group; its bytes are in the directory's row group table.
    val data = if (schema.fieldNames.contains(RowGroupBytesColumn)) read
    else {
      import spark.implicits._
      val table = RowGroupTable.read(spark, Seq(dataPath)).groups.values.toSeq
        .map(g => (g.fileId, g.ordinal, g.bytes)).toDF("__hs_rg_id", "__hs_rg_ordinal", RowGroupBytesColumn)
      read.join(broadcast(table),
        col(CoveringIndex.LineageColumn) === col("__hs_rg_id") && rowGroup === col("__hs_rg_ordinal"), "left")
    }
    val perFile = data.groupBy(col("__hs_file_name")).agg(
      approx_count_distinct(key),
      approx_count_distinct(struct(key, col(CoveringIndex.LineageColumn), rowGroup)),
      sum(col(RowGroupBytesColumn)))
    val locations = perFile.collect().map(r =>
      r.getString(0) -> LocationStats(r.getLong(1), r.getLong(2), if (r.isNullAt(3)) 0L else r.getLong(3))).toMap
    ranged.map(f =>
      f.copy(stats = f.stats.map(_.copy(
          locations = Some(locations.getOrElse(f.name, LocationStats(0L, 0L, 0L)))))))
  }

  // Every recorded file is read once (its tail, or its sampled blocks), in tasks: the cost of a
  // full refresh's check, which would otherwise find nothing changed and keep stale locations.
  override def changedInPlace(spark: SparkSession, entry: LogEntry): Seq[String] =
    if (!hasUnitTable(entry.index)) Nil
    else {
      val recorded = RowGroupTable.contentOf(spark, entry).fingerprints
      val fileLevel = this.fileLevel(entry.index)
      inTasks(spark, entry.source.files.filter(f => recorded.contains(f.id))) { (path, f, conf) =>
        if (SourceFingerprint.matches(path, f.size, fileLevel, conf, recorded(f.id))(_ => ())) Nil else Seq(f.path)
      }.sorted
    }

  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = true

  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit = {
    CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds, oneFilePerBucket = false, options = WriteOptions)
    carryRowGroups(spark, entry, dataPath, dropIds)
  }

  /**
   * A rewrite's directory gets the row groups of the entry's (version 3): its rows point into row
   * groups that earlier directories listed, and those directories may be vacuumed once no file of
   * the log lies in them.
   */
  private def carryRowGroups(spark: SparkSession, entry: LogEntry, dataPath: Path, dropIds: Set[Long]): Unit =
    if (hasUnitTable(entry.index)) {
      val kept = RowGroupTable.contentOf(spark, entry).without(dropIds)
      RowGroupTable.add(spark, dataPath, kept.groups.values.toSeq, kept.fingerprints)
    }

  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] =
    entry.content.files.groupBy(CoveringIndex.bucketOf).toSeq.collect { case (Some(_), fs) => fs }

  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit = {
    CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds = Set.empty, oneFilePerBucket = true,
      options = WriteOptions)
    carryRowGroups(spark, entry, dataPath, Set.empty)
  }

  override def coveredColumns(definition: IndexDefinition): Seq[String] = definition.indexedColumns

  override def summary(definition: IndexDefinition): KindSummary =
    KindSummary(definition.indexedColumns, Nil, definition.numBuckets,
      Map(
        "numBuckets" -> definition.numBuckets.toString,
        "locations" ->
          (if (fileLevel(definition)) "source file id (whole CSV or JSON files)"
           else if (rowsPerPosition(definition).isDefined) {
             s"source file id, row group ordinal, row position (${rowsPerPosition(definition).get} rows)"
           } else {
             "source file id, row group (ordinal, first byte, bytes)" +
               (if (storedColumns(definition).contains(RowIndexColumn)) ", row index" else "")
           }),
        "schema" -> definition.schema))

  override def rewrites: RewriteFamily = RewriteFamily.RowGroupSeek

  /** Whether `entry` is a split index. */
  def isSplit(entry: LogEntry): Boolean = IndexKinds.find(entry.index.kind).contains(this)
}
