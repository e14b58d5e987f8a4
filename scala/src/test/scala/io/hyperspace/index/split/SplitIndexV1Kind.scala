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

/** A split index as kind version 2 defined it (row group first byte and size per row), for compatibility tests. */
case class SplitIndexV2Config(name: String, indexedColumns: Seq[String]) extends IndexKindConfig {
  override def kindName: String = SplitIndexV2Kind.Name
}

/**
 * Creates split indexes of an earlier kind version: the log then names the kind `SplitIndex`, so
 * everything after the creation (seeks, refresh, optimize) is the current split index's code
 * reading an index written as that version wrote it.
 */
abstract class SplitIndexLegacyKind(version: Int) extends IndexKind {
  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val (name, columns) = config match {
      case c: SplitIndexV1Config => (c.name, c.indexedColumns)
      case c: SplitIndexV2Config => (c.name, c.indexedColumns)
    }
    val current = SplitIndex.define(spark, SplitIndexConfig(name, columns), source)
    val schema = DataType.fromJson(current.schema).asInstanceOf[StructType]
    // Versions 1 and 2: the row group's first byte and size per row, no position.
    val locations = Seq(
      StructField(SplitIndex.RowGroupStartColumn, LongType, nullable = false),
      StructField(SplitIndex.RowGroupBytesColumn, LongType, nullable = false)) ++
      (if (version == 1) Seq(StructField(SplitIndex.RowIndexColumn, LongType, nullable = false)) else Nil)
    current.copy(kindVersion = version, properties = current.properties - SplitIndex.RowsPerPositionKey,
      schema = StructType(schema.fields.filterNot(_.name == SplitIndex.RowPositionColumn) ++ locations).json)
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

class SplitIndexV1Kind extends SplitIndexLegacyKind(1) {
  override def name: String = SplitIndexV1Kind.Name
  override def configFromJson(json: String): IndexKindConfig = {
    val c = SplitIndexConfig.fromJson(json)
    SplitIndexV1Config(c.name, c.indexedColumns)
  }
}

object SplitIndexV1Kind {
  val Name = "SplitIndexV1Test"
}

class SplitIndexV2Kind extends SplitIndexLegacyKind(2) {
  override def name: String = SplitIndexV2Kind.Name
  override def configFromJson(json: String): IndexKindConfig = {
    val c = SplitIndexConfig.fromJson(json)
    SplitIndexV2Config(c.name, c.indexedColumns)
  }
}

object SplitIndexV2Kind {
  val Name = "SplitIndexV2Test"
}
