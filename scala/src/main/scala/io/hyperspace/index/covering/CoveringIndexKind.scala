package io.hyperspace.index.covering

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{FileRanges, IndexConfig, IndexKind, IndexKindConfig, KindSummary, RewriteFamily}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.FileSource

/** The covering index as an [[IndexKind]]: the lifecycle's calls, answered by [[CoveringIndex]]. */
object CoveringIndexKind extends IndexKind {

  override val name: String = CoveringIndex.Kind
  override val abbreviation: String = "CI"

  override def configFromJson(json: String): IndexKindConfig = IndexConfig.fromJson(json)

  /** The bucket count and lineage flag, when not given, come from the session and are stored. */
  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val c = configAs[IndexConfig](config)
    c.numBuckets.foreach(n => HyperspaceConf.NUM_BUCKETS.parseAndCheck(n.toString))
    CoveringIndex.define(spark, c.name, source, c.indexedColumns, c.includedColumns,
      c.numBuckets.getOrElse(HyperspaceConf.numBuckets(spark)),
      c.lineage.getOrElse(HyperspaceConf.lineageEnabled(spark)))
  }

  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = CoveringIndex.write(df, definition, files, dataPath, mode)

  /**
   * Each file's range of the indexed columns. Hash buckets spread a key's values over all files,
   * so a fresh build's files all span about the whole range; the ranges pay where files were
   * written at different times: an incremental refresh of appended, time-ordered data writes
   * files that hold only the new values, and a filter on them skips the older files.
   */
  override def describeFiles(spark: SparkSession, definition: IndexDefinition, dataPath: Path,
      files: Seq[ContentFile]): Seq[ContentFile] =
    FileRanges.describe(spark, CoveringIndex.storedSchema(definition), CoveringIndex.storedIndexedColumns(definition),
      dataPath, files)

  /** Only with lineage can a row be traced to the source file it came from. */
  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = definition.lineage

  /** Each task writes the buckets it read: no shuffle of the whole index for a refresh. */
  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit =
    CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds, oneFilePerBucket = false)

  /** Files are merged within their bucket. */
  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] =
    entry.content.files.groupBy(CoveringIndex.bucketOf).toSeq.collect { case (Some(_), fs) => fs }

  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds = Set.empty, oneFilePerBucket = true)

  override def coveredColumns(definition: IndexDefinition): Seq[String] =
    definition.indexedColumns ++ definition.includedColumns

  override def summary(definition: IndexDefinition): KindSummary =
    KindSummary(definition.indexedColumns, definition.includedColumns, definition.numBuckets,
      Map(
        "includedColumns" -> definition.includedColumns.mkString(", "),
        "numBuckets" -> definition.numBuckets.toString,
        "schema" -> definition.schema,
        "hasLineage" -> definition.lineage.toString))

  override def rewrites: RewriteFamily = RewriteFamily.CoveringScan
}
