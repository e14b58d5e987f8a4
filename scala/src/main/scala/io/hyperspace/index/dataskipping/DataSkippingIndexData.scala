package io.hyperspace.index.dataskipping

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ArrayNode
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.util.{ArrayData, GenericArrayData}
import org.apache.spark.sql.types.{ArrayType, BinaryType, DataType, DateType, NumericType, StringType, StructType, TimestampNTZType, TimestampType}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{FileRanges, IndexKind}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.{FileSource, VersionedTable}

/**
 * How a data skipping index is defined, written and rewritten on disk: the sketch table as
 * Parquet files in the index's data version directories, one row per non-empty source file.
 * The lifecycle (create, refresh, optimize, ...) is the covering index's (see `actions/`);
 * only the data written differs.
 */
object DataSkippingIndexData {

  /**
   * The index definition for `config` over `source`, after resolving every sketch against the
   * source (errors name the index, sketch and expression). For a hive-partitioned source, a
   * [[PartitionSketch]] is added per partition column that has none, unless
   * `spark.hyperspace.index.dataskipping.autoPartitionSketch` is off.
   *
   * The definition records the sketches in `properties`, the sketch table's schema in `schema`,
   * and for listings (`indexes()`) the sketches' descriptions as `indexedColumns`; it has no
   * included columns, buckets or lineage (file ids are the sketch table's key).
   */
  def define(spark: SparkSession, config: DataSkippingIndexConfig, source: FileSource): IndexDefinition = {
    // A table format prunes its partitions itself: a partition sketch would only repeat it.
    val sketches =
      if (source.versioned.isDefined) config.sketches else withPartitionSketches(spark, config.sketches, source)
    val sourceDf = org.apache.spark.sql.hyperspace.SparkInternals.ofRows(spark, source.relation)
    val resolved = DataSkippingIndex.resolveSketches(spark, config.name, sketches, source.relation)
    source.versioned.foreach(t => refuseWhatFormatPrunes(config.name, t, resolved))
    // Only analyzed, never run: the schema of the table the build will write.
    val schema = DataSkippingIndex.buildSketchTable(sourceDf, resolved, Map.empty).schema
    IndexDefinition(DataSkippingIndex.Kind, DataSkippingIndex.KindVersion,
      indexedColumns = sketches.map(_.describe), includedColumns = Nil, numBuckets = 0,
      lineage = false, schema = schema.json, properties = DataSkippingIndex.properties(sketches))
  }

  /**
   * A MinMax sketch over a plain column whose min/max the table format's log keeps per file
   * (Delta: the first `delta.dataSkippingNumIndexedCols` columns, or `delta.dataSkippingStatsColumns`)
   * would skip only files the format's own pruning already leaves out: refused, naming the
   * column, rather than built and evaluated for nothing.
   */
  private def refuseWhatFormatPrunes(indexName: String, table: VersionedTable, sketches: Seq[ResolvedSketch]): Unit = {
    lazy val kept = table.minMaxColumns
    sketches.collectFirst {
      case ResolvedSketch(m: MinMaxSketch, _, a: Attribute)
          if formatKeepsMinMax(a.dataType) && kept.exists(_.equalsIgnoreCase(a.name)) => (m, a.name)
    }.foreach { case (m, column) =>
      throw new HyperspaceException(
        s"Cannot create data skipping index '$indexName': its sketch ${m.describe} is over column '$column', whose " +
          s"min/max the ${table.format} table's log already keeps for every file and prunes files by, so it " +
          "would skip nothing more. Leave that sketch out (a BloomFilter or ValueList sketch on the column helps " +
          "equality filters the min/max cannot), or stop the format from collecting the column's statistics.")
    }
  }

  // The types Delta keeps min/max statistics for (it keeps only null counts for the others).
  private def formatKeepsMinMax(t: DataType): Boolean = t match {
    case _: NumericType | _: StringType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  private def withPartitionSketches(spark: SparkSession, sketches: Seq[Sketch], source: FileSource): Seq[Sketch] =
    if (!HyperspaceConf.autoPartitionSketch(spark)) sketches
    else {
      val resolver = spark.sessionState.conf.resolver
      val missing = source.fsRelation.partitionSchema.fieldNames.filterNot { p =>
        sketches.exists {
          case PartitionSketch(expr) => resolver(expr, p)
          case _ => false
        }
      }
      sketches ++ missing.map(p => PartitionSketch(quote(p)))
    }

  private def quote(name: String): String =
    if (name.matches("[A-Za-z_][A-Za-z0-9_]*")) name else s"`${name.replace("`", "``")}`"

  /** The sketches of a data skipping index definition. */
  def sketchesOf(definition: IndexDefinition): Seq[Sketch] = DataSkippingIndex.sketchesOf(definition.properties)

  /** The sketch table's schema recorded in the definition. */
  def schemaOf(definition: IndexDefinition): StructType =
    DataType.fromJson(definition.schema).asInstanceOf[StructType]

  /**
   * Writes the sketch rows of `files` (the source files `df`, a scan of exactly those files,
   * reads) into `dataPath` as Parquet. `mode` Append adds to a directory the same operation
   * already wrote into (incremental refresh: rewritten old rows, then new ones).
   */
  def write(
      df: DataFrame,
      definition: IndexDefinition,
      indexName: String,
      files: Seq[SourceFile],
      dataPath: Path,
      mode: SaveMode = SaveMode.ErrorIfExists): Unit = {
    val spark = df.sparkSession
    val plan = df.queryExecution.analyzed
    val resolved = DataSkippingIndex.resolveSketches(spark, indexName, sketchesOf(definition), plan)
    val table = DataSkippingIndex.buildSketchTable(df, resolved, files.map(f => f.path -> f.id).toMap)
    val expected = schemaOf(definition)
    if (!DataType.equalsIgnoreNullability(table.schema, expected)) {
      throw new HyperspaceException(
        s"The sketch table of index '$indexName' would have the schema ${table.schema.simpleString}, " +
          s"but the index was created with ${expected.simpleString}: the source's types changed. " +
          "Recreate the index.")
    }
    // One row per file makes a small table: one output file keeps queries to one footer read.
    table.coalesce(1).write.mode(mode).parquet(dataPath.toString)
  }

  /**
   * Rewrites the sketch rows held in `files` (of `entry`) into `dataPath` as one file, without
   * the rows of the source files with ids `dropIds`: deletes are applied from the index itself,
   * the source is never read again.
   */
  def rewrite(
      spark: SparkSession,
      entry: LogEntry,
      files: Seq[ContentFile],
      dataPath: Path,
      dropIds: Set[Long],
      mode: SaveMode = SaveMode.ErrorIfExists): Unit = {
    val all = read(spark, entry, files)
    val kept = IndexKind.withoutSourceFiles(all, DataSkippingIndex.FileIdColumn, dropIds)
    kept.coalesce(1).write.mode(mode).parquet(dataPath.toString)
  }

  /**
   * The property of a hypothetical entry's definition (what-if, the advisor) holding its sketch
   * table itself, as JSON: an array of rows, each the sketch table's values in schema order (file
   * id, row count, then each sketch column's value as [[io.hyperspace.index.FileRanges.encode]]
   * writes it, a Bloom filter's bytes in Base64, a value list as an array of such values, or null). Such an entry has no data files; its table is read from here.
   */
  val HypotheticalRowsProperty = "hypotheticalSketchRows"

  /** The sketch rows held in `files` of `entry` (all of its content files by default). */
  def read(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile] = null): DataFrame = {
    val which = Option(files).getOrElse(entry.content.files)
    val schema = schemaOf(entry.index)
    entry.index.properties.get(HypotheticalRowsProperty).filter(_ => entry.isHypothetical) match {
      case Some(json) => spark.createDataFrame(java.util.Arrays.asList(hypotheticalRows(json, schema): _*), schema)
      case None =>
        if (which.isEmpty) spark.createDataFrame(spark.sparkContext.emptyRDD[Row], schema)
        else spark.read.schema(schema).parquet(which.map(entry.content.pathOf): _*)
    }
  }

  /** `rows` (values in the sketch table's internal form, in `schema`'s order) as the JSON of [[HypotheticalRowsProperty]]. */
  def hypotheticalRowsJson(rows: Seq[Seq[Any]], schema: StructType): String = {
    val mapper = new ObjectMapper()
    val array = mapper.createArrayNode()
    rows.foreach { r =>
      val node = array.addArray()
      r.zip(schema.fields).foreach { case (v, f) => addValue(node, v, f.dataType) }
    }
    mapper.writeValueAsString(array)
  }

  // A value sketch's columns: a Bloom filter's bytes as Base64, a value list as a nested array.
  private def addValue(node: ArrayNode, v: Any, t: DataType): Unit = (v, t) match {
    case (null, _) => node.addNull()
    case (bytes: Array[Byte], BinaryType) => node.add(java.util.Base64.getEncoder.encodeToString(bytes))
    case (list: ArrayData, ArrayType(e, _)) =>
      val inner = node.addArray()
      list.foreach(e, (_, x) => addValue(inner, x, e))
    case _ => node.add(FileRanges.encode(v, t))
  }

  private def valueOf(node: JsonNode, t: DataType): Any =
    if (node == null || node.isNull) null
    else t match {
      case BinaryType => java.util.Base64.getDecoder.decode(node.asText())
      case ArrayType(e, _) => new GenericArrayData((0 until node.size()).map(i => valueOf(node.get(i), e)).toArray)
      case _ => FileRanges.decode(node.asText(), t)
    }

  private def hypotheticalRows(json: String, schema: StructType): Seq[Row] = {
    val array = new ObjectMapper().readTree(json)
    (0 until array.size()).map { i =>
      val node = array.get(i)
      Row.fromSeq(schema.fields.indices.map { j =>
        val t = schema(j).dataType
        CatalystTypeConverters.convertToScala(valueOf(node.get(j), t), t)
      })
    }
  }
}
