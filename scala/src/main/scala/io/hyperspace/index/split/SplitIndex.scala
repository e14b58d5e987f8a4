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
import io.hyperspace.index.{FileRanges, IndexKind, IndexKindConfig, IndexKinds, KindSummary, RewriteFamily}
import io.hyperspace.index.covering.{CoveringIndex, IndexColumn}
import io.hyperspace.log.{ContentFile, IndexDefinition, LocationStats, LogEntry, SourceFile}
import io.hyperspace.sources.{FileSource, SourcePaths}

/**
 * The split index: per source row its key columns and its location — the source file's id (the
 * lineage id the log keeps) and the ordinal, first byte and compressed size of the Parquet row
 * group holding it — hash-bucketed on the keys and sorted within each bucket, as a covering index
 * without the included columns, in zstd-compressed Parquet.
 *
 * Kind version 1 also stored each row's index within its file (`_row_index`), for reads of single
 * pages or rows that were never built: half the index's bytes, read by nothing. Version 2 (from
 * then on) does not write it; indexes of version 1 keep it, and their refreshes and optimizes
 * keep writing it (the schema in the log says which), and seek as before. The seek rewrite
 * ([[io.hyperspace.rules.SplitSeekRule]]) reads the locations matching a filter and then only
 * those row groups of the source.
 *
 * Parquet sources only: CSV and JSON have no row groups, and a file-level index of them would be
 * a data skipping index with a value list sketch, which exists already; they are refused.
 */
object SplitIndex extends IndexKind {
  val Kind = "SplitIndex"
  val KindVersion = 2

  /** Location columns, after the keys and the lineage column. */
  val RowGroupColumn = "_row_group"
  val RowGroupStartColumn = "_row_group_start"
  val RowGroupBytesColumn = "_row_group_bytes"
  /** Written by kind version 1 only (see above). */
  val RowIndexColumn = "_row_index"
  private val LocationColumns = Seq(RowGroupColumn, RowGroupStartColumn, RowGroupBytesColumn, RowIndexColumn)

  /**
   * The Parquet writer's options for index files: zstd, which packs the sorted keys and the
   * dictionary codes of the locations about a fifth smaller than Spark's default snappy (measured
   * on the 2M-row benchmark index: 12.2 to 10.2 MB).
   */
  private val WriteOptions = Map("compression" -> "zstd")

  override val name: String = Kind
  override val abbreviation: String = "SI"

  override def configFromJson(json: String): IndexKindConfig = SplitIndexConfig.fromJson(json)

  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val c = configAs[SplitIndexConfig](config)
    if (source.format != "parquet" || source.versioned.isDefined) {
      throw new HyperspaceException(
        s"Index '${c.name}' cannot be a split index over this ${source.format} source: a split index points " +
          "into the row groups of plain Parquet files. For CSV or JSON use a data skipping index (value list " +
          "or bloom filter sketch on the key), which prunes whole files, or a covering index.")
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
    val stored = DataType.fromJson(covering.schema).asInstanceOf[StructType]
    val schema = StructType(stored.fields ++ Seq(
      StructField(RowGroupColumn, IntegerType, nullable = false),
      StructField(RowGroupStartColumn, LongType, nullable = false),
      StructField(RowGroupBytesColumn, LongType, nullable = false)))
    covering.copy(kind = Kind, kindVersion = KindVersion, schema = schema.json)
  }

  private def storedColumns(definition: IndexDefinition): Seq[String] =
    DataType.fromJson(definition.schema).asInstanceOf[StructType].fieldNames.toSeq

  /** The stored names of the key columns (top-level, so the source's names). */
  def keyColumns(definition: IndexDefinition): Seq[String] = CoveringIndex.storedIndexedColumns(definition)

  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = {
    val spark = df.sparkSession
    import spark.implicits._
    val keys = keyColumns(definition)
    // Whether the index is of kind version 1, whose files hold the row index (refreshes keep it).
    val storesRowIndex = storedColumns(definition).contains(RowIndexColumn)
    val rowIndex = "__hs_row_index"
    val rows = df.select(keys.map(k => col(IndexColumn.quote(k))) ++
        Seq(col("_metadata.file_path").as("__hs_file_path"), col("_metadata.row_index").as(rowIndex)): _*)
    // Rows name their file as `_metadata.file_path` does: percent-encoded, unlike the listing.
    val ids = files.map(f => (SourcePaths.asMetadataPath(f.path), f.id)).toDF("__hs_file_path", "__hs_file_id")
    val groups = rowGroups(spark, files).toDF(
      "__hs_rg_file", RowGroupColumn, "__hs_rg_first", "__hs_rg_rows", RowGroupStartColumn, RowGroupBytesColumn)
    val changed = raise_error(lit(s"A source file of split index '$indexName' changed while the index was being " +
        "built; retry."))
    val located = rows.join(broadcast(ids), Seq("__hs_file_path"), "left")
      .join(broadcast(groups),
        col("__hs_file_id") === col("__hs_rg_file") && col(rowIndex) >= col("__hs_rg_first") &&
          col(rowIndex) < col("__hs_rg_first") + col("__hs_rg_rows"), "left")
      // A row whose file or row group is not the one listed means the file changed under the build.
      .where(col("__hs_rg_file").isNotNull || changed.isNull)
    val data = located.select(keys.map(k => col(IndexColumn.quote(k))) ++ Seq(
        col("__hs_file_id").as(CoveringIndex.LineageColumn), col(RowGroupColumn), col(RowGroupStartColumn),
        col(RowGroupBytesColumn)) ++ (if (storesRowIndex) Seq(col(rowIndex).as(RowIndexColumn)) else Nil): _*)
    val bucketed = data.repartition(definition.numBuckets, keys.map(k => col(IndexColumn.quote(k))): _*)
    SparkInternals.writeBucketedParquet(bucketed, dataPath, definition.numBuckets, keys, keys, mode, WriteOptions)
  }

  /**
   * (file id, ordinal, first row, rows, first byte, compressed bytes) of every row group of
   * `files`, from their footers, read in parallel by tasks (a footer is one small read).
   */
  private def rowGroups(spark: SparkSession, files: Seq[SourceFile]): Seq[(Long, Int, Long, Long, Long, Long)] = {
    val conf = spark.sessionState.newHadoopConf().iterator().asScala.map(e => e.getKey -> e.getValue).toMap
    val paths = files.map(f => (f.path, f.id))
    val slices = math.max(1, math.min(paths.size, spark.sparkContext.defaultParallelism * 4))
    spark.sparkContext.parallelize(paths, slices).flatMap { case (path, id) =>
      val hadoopConf = new Configuration(false)
      conf.foreach { case (k, v) => hadoopConf.set(k, v) }
      footerRowGroups(new Path(path), hadoopConf).map { case (ordinal, first, rows, start, bytes) =>
        (id, ordinal, first, rows, start, bytes)
      }
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
    val data = spark.read.schema(schema).parquet(files.map(f => new Path(dataPath, f.name).toString): _*)
    val perFile = data.groupBy(col("_metadata.file_name")).agg(
      approx_count_distinct(key),
      approx_count_distinct(struct(key, col(CoveringIndex.LineageColumn), col(RowGroupColumn))),
      sum(col(RowGroupBytesColumn)))
    val locations = perFile.collect().map(r =>
      r.getString(0) -> LocationStats(r.getLong(1), r.getLong(2), if (r.isNullAt(3)) 0L else r.getLong(3))).toMap
    ranged.map(f =>
      f.copy(stats = f.stats.map(_.copy(
          locations = Some(locations.getOrElse(f.name, LocationStats(0L, 0L, 0L)))))))
  }

  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = true

  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit =
    CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds, oneFilePerBucket = false, options = WriteOptions)

  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] =
    entry.content.files.groupBy(CoveringIndex.bucketOf).toSeq.collect { case (Some(_), fs) => fs }

  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds = Set.empty, oneFilePerBucket = true,
      options = WriteOptions)

  override def coveredColumns(definition: IndexDefinition): Seq[String] = definition.indexedColumns

  override def summary(definition: IndexDefinition): KindSummary =
    KindSummary(definition.indexedColumns, Nil, definition.numBuckets,
      Map(
        "numBuckets" -> definition.numBuckets.toString,
        "locations" ->
          ("source file id, row group (ordinal, first byte, bytes)" +
            (if (storedColumns(definition).contains(RowIndexColumn)) ", row index" else "")),
        "schema" -> definition.schema))

  override def rewrites: RewriteFamily = RewriteFamily.RowGroupSeek

  /** Whether `entry` is a split index. */
  def isSplit(entry: LogEntry): Boolean = IndexKinds.find(entry.index.kind).contains(this)
}
