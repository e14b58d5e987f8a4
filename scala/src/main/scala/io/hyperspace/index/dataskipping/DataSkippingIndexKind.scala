package io.hyperspace.index.dataskipping

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}

import io.hyperspace.index.{IndexKind, IndexKindConfig, KindSummary, RewriteFamily}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.FileSource

/** The data skipping index as an [[IndexKind]]: the lifecycle's calls, answered by [[DataSkippingIndexData]]. */
object DataSkippingIndexKind extends IndexKind {

  override val name: String = DataSkippingIndex.Kind
  override val abbreviation: String = "DS"

  override def configFromJson(json: String): IndexKindConfig = DataSkippingIndexConfig.fromJson(json)

  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition =
    DataSkippingIndexData.define(spark, configAs[DataSkippingIndexConfig](config), source)

  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit =
    DataSkippingIndexData.write(df, definition, indexName, files, dataPath, mode)

  /** The sketch table is keyed by source file id. */
  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = true

  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit = DataSkippingIndexData.rewrite(spark, entry, files, dataPath, dropIds)

  /** The sketch table is small: all of it goes into one file. */
  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] = Seq(entry.content.files)

  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    DataSkippingIndexData.rewrite(spark, entry, files, dataPath, Set.empty)

  /** The sketches' expressions' source columns are not recorded apart; the sketches describe them. */
  override def coveredColumns(definition: IndexDefinition): Seq[String] = definition.indexedColumns

  override def summary(definition: IndexDefinition): KindSummary =
    KindSummary(definition.indexedColumns, Nil, definition.numBuckets,
      Map("sketches" -> definition.indexedColumns.mkString(", ")))

  override def rewrites: RewriteFamily = RewriteFamily.FileSkipping
}
