package io.hyperspace.index.toy

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{LongType, StructField, StructType}

import io.hyperspace.HyperspaceException
import io.hyperspace.index.{IndexKind, IndexKindConfig, KindSummary, RewriteFamily}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.{FileSource, SourcePaths}

/** What a [[DistinctValuesKind]] index records: the distinct values of `column` in each source file. */
case class DistinctValuesConfig(name: String, column: String) extends IndexKindConfig {
  override def kindName: String = DistinctValuesKind.Name
}

/**
 * A third index kind, known to Hyperspace only through this test classpath's
 * `META-INF/services/io.hyperspace.index.IndexKind`: one row per (source file id, distinct value
 * of a column). It offers no query rewrite; it shows that create, refresh, optimize, listing,
 * delete/vacuum and whyNot need nothing of the core but the [[IndexKind]] methods.
 */
class DistinctValuesKind extends IndexKind {
  import DistinctValuesKind._

  override def name: String = Name

  override def configFromJson(json: String): IndexKindConfig = {
    val node = new ObjectMapper().readTree(json)
    DistinctValuesConfig(node.get("name").asText(), node.get("column").asText())
  }

  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val c = configAs[DistinctValuesConfig](config)
    val field = source.relation.schema.find(f => spark.sessionState.conf.resolver(f.name, c.column)).getOrElse(
      throw new HyperspaceException(s"Index '${c.name}': the source has no column '${c.column}'."))
    val schema = StructType(Seq(StructField(FileIdColumn, LongType, nullable = false), field.copy(name = ValueColumn)))
    IndexDefinition(Name, 1, indexedColumns = Seq(field.name), includedColumns = Nil, numBuckets = 0,
      lineage = false, schema = schema.json, properties = Map(ColumnProperty -> field.name))
  }

  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = {
    val spark = df.sparkSession
    import spark.implicits._
    val ids = files.map(f => (SourcePaths.asMetadataPath(f.path), f.id)).toDF("__path", FileIdColumn)
    df.select(col("_metadata.file_path").as("__path"), col(definition.properties(ColumnProperty)).as(ValueColumn))
      .join(ids, "__path").select(FileIdColumn, ValueColumn).distinct()
      .coalesce(1).write.mode(mode).parquet(dataPath.toString)
  }

  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = true

  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit =
    IndexKind.withoutSourceFiles(read(spark, entry, files), FileIdColumn, dropIds)
      .coalesce(1).write.parquet(dataPath.toString)

  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] = Seq(entry.content.files)

  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    read(spark, entry, files).coalesce(1).write.parquet(dataPath.toString)

  override def coveredColumns(definition: IndexDefinition): Seq[String] = Seq(definition.properties(ColumnProperty))

  override def summary(definition: IndexDefinition): KindSummary =
    KindSummary(coveredColumns(definition), Nil, 0, Map("column" -> definition.properties(ColumnProperty)))

  override def rewrites: RewriteFamily = RewriteFamily.NoRewrite

  override def noRewriteReason: String = "a distinct values index only records each file's values; no query reads it"
}

object DistinctValuesKind {
  val Name = "DistinctValues"
  val FileIdColumn = "_file_id"
  val ValueColumn = "value"
  val ColumnProperty = "column"

  /** The rows held in `files` of `entry`. */
  def read(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile]): DataFrame =
    spark.read.schema(org.apache.spark.sql.types.DataType.fromJson(entry.index.schema).asInstanceOf[StructType])
      .parquet(files.map(entry.content.pathOf): _*)
}
