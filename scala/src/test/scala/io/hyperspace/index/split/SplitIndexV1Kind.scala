package io.hyperspace.index.split

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.types.{DataType, LongType, StructField, StructType}

import io.hyperspace.index.{IndexKind, IndexKindConfig, KindSummary, RewriteFamily}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.FileSource

/** A split index as kind version 1 defined it (with `_row_index`), for compatibility tests. */
case class SplitIndexV1Config(name: String, indexedColumns: Seq[String]) extends IndexKindConfig {
  override def kindName: String = SplitIndexV1Kind.Name
}

/**
 * Creates split indexes of kind version 1: the log then names the kind `SplitIndex`, so everything
 * after the creation (seeks, refresh, optimize) is the current split index's code reading an index
 * written as version 1 wrote it.
 */
class SplitIndexV1Kind extends IndexKind {
  override def name: String = SplitIndexV1Kind.Name
  override def configFromJson(json: String): IndexKindConfig = {
    val c = SplitIndexConfig.fromJson(json)
    SplitIndexV1Config(c.name, c.indexedColumns)
  }
  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val c = configAs[SplitIndexV1Config](config)
    val current = SplitIndex.define(spark, SplitIndexConfig(c.name, c.indexedColumns), source)
    val schema = DataType.fromJson(current.schema).asInstanceOf[StructType]
    current.copy(kindVersion = 1,
      schema = StructType(schema.fields :+ StructField(SplitIndex.RowIndexColumn, LongType, nullable = false)).json)
  }
  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = SplitIndex.write(df, definition, indexName, files, dataPath, mode)
  override def describeFiles(spark: SparkSession, definition: IndexDefinition, dataPath: Path,
      files: Seq[ContentFile]): Seq[ContentFile] = SplitIndex.describeFiles(spark, definition, dataPath, files)
  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = true
  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit = SplitIndex.dropRows(spark, entry, files, dataPath, dropIds)
  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] = SplitIndex.mergeGroups(entry)
  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    SplitIndex.merge(spark, entry, files, dataPath)
  override def coveredColumns(definition: IndexDefinition): Seq[String] = SplitIndex.coveredColumns(definition)
  override def summary(definition: IndexDefinition): KindSummary = SplitIndex.summary(definition)
  override def rewrites: RewriteFamily = SplitIndex.rewrites
}

object SplitIndexV1Kind {
  val Name = "SplitIndexV1Test"
}
