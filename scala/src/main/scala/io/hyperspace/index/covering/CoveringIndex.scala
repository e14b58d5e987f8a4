package io.hyperspace.index.covering

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.execution.datasources.BucketingUtils
import org.apache.spark.sql.functions.{broadcast, coalesce, col, lit, raise_error}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types._

import io.hyperspace.HyperspaceException
import io.hyperspace.index.{BoundedCache, IndexKind, StoredSchemas}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.{FileSource, SourcePaths}

/**
 * The covering index kind: indexed + included columns, hash-bucketed on the indexed columns with
 * Spark's bucketing hash and sorted within each bucket, stored as Parquet.
 */
object CoveringIndex {
  val Kind = "CoveringIndex"
  val KindVersion = 1
  /** The lineage column: the log's id of the row's source file. */
  val LineageColumn = "_data_file_id"

  /**
   * The index definition for `indexed` and `included` over `source`, after checking that the
   * columns exist (by the session's case sensitivity), are not repeated and have types an index
   * can hold. Column names are stored as the source spells them.
   */
  def define(
      spark: SparkSession,
      indexName: String,
      source: FileSource,
      indexed: Seq[String],
      included: Seq[String],
      numBuckets: Int,
      lineage: Boolean): IndexDefinition = {
    val schema = source.relation.schema
    val resolver = spark.sessionState.conf.resolver
    if (indexed.isEmpty) {
      throw new HyperspaceException(s"Index '$indexName' needs at least one indexed column.")
    }
    val indexedColumns = indexed.map(IndexColumn.resolve(indexName, schema, resolver, _))
    val includedColumns = included.map(IndexColumn.resolve(indexName, schema, resolver, _))
    val all = indexedColumns ++ includedColumns
    all.groupBy(_._1).collect { case (c, cs) if cs.size > 1 => c.name }.toSeq.sorted.headOption
      .foreach { dup =>
        throw new HyperspaceException(
          s"Column '$dup' appears more than once in the indexed and included columns of index '$indexName'.")
      }
    // The index data names nested fields with a reserved prefix; a source column spelled that
    // way would be read back as one of them.
    schema.fieldNames.find(_.startsWith(IndexColumn.NestedPrefix))
      .filter(reserved => all.exists(c => c._1.isNested || c._1.path.head == reserved))
      .foreach { reserved =>
        throw new HyperspaceException(
          s"Index '$indexName' cannot index this source's column '$reserved', nor nested fields beside it: it starts " +
            s"with '${IndexColumn.NestedPrefix}', which Hyperspace reserves for the nested fields it stores.")
      }
    indexedColumns.foreach { case (c, f) =>
      if (!canIndex(f.dataType)) {
        throw new HyperspaceException(
          s"Column '${c.name}' of type ${f.dataType.simpleString} cannot be an indexed column of " +
            s"index '$indexName': indexed columns must be of an atomic, orderable type (numbers, " +
            "strings, booleans, dates, timestamps, decimals, binary).")
      }
    }
    includedColumns.foreach { case (c, f) =>
      if (!canStore(f.dataType)) {
        throw new HyperspaceException(
          s"Column '${c.name}' of type ${f.dataType.simpleString} cannot be included in index " +
            s"'$indexName': Parquet cannot store it.")
      }
    }
    if (lineage && schema.fieldNames.exists(n => resolver(n, LineageColumn))) {
      throw new HyperspaceException(
        s"Index '$indexName' cannot have lineage: the source already has a column named $LineageColumn.")
    }
    val dataSchema = StructType(all.map(_._2) ++
      (if (lineage) Seq(StructField(LineageColumn, LongType, nullable = false)) else Nil))
    IndexDefinition(Kind, KindVersion, indexedColumns.map(_._1.name), includedColumns.map(_._1.name),
      numBuckets, lineage, dataSchema.json)
  }

  /**
   * The index's indexed and included columns, from the stored schema (whose fields are the
   * indexed columns, then the included ones, then the lineage column): the log's names alone
   * cannot tell a top-level column named `a.b` from field `b` of struct `a`.
   */
  def columnsOf(definition: IndexDefinition): (Seq[IndexColumn], Seq[IndexColumn]) =
    // Rules ask for every candidate of every query: parse each stored schema once.
    columnsCache.getOrElseUpdate((definition.schema, definition.indexedColumns.size, definition.includedColumns.size), {
        val stored = DataType.fromJson(definition.schema).asInstanceOf[StructType].fieldNames.toSeq
          .map(IndexColumn.fromStoredName)
        val indexed = stored.take(definition.indexedColumns.size)
        (indexed, stored.slice(indexed.size, indexed.size + definition.includedColumns.size))
      })

  private val columnsCache = new BoundedCache[(String, Int, Int), (Seq[IndexColumn], Seq[IndexColumn])](1024)

  /** The schema of the index data files. */
  def storedSchema(definition: IndexDefinition): StructType =
    StoredSchemas.parse(definition.schema)

  /** The index data's names of the indexed columns: what it is bucketed and sorted by. */
  def storedIndexedColumns(definition: IndexDefinition): Seq[String] = columnsOf(definition)._1.map(_.storedName)

  private def canIndex(t: DataType): Boolean = t match {
    case _: NumericType | _: StringType | BooleanType | DateType | TimestampType |
        TimestampNTZType | BinaryType => true
    case _ => false
  }

  private def canStore(t: DataType): Boolean = t match {
    case NullType | _: CalendarIntervalType => false
    case s: StructType => s.fields.forall(f => canStore(f.dataType))
    case a: ArrayType => canStore(a.elementType)
    case m: MapType => canStore(m.keyType) && canStore(m.valueType)
    case _ => true
  }

  /**
   * Writes the index data of `definition` over `df` (a scan of the source files `files`) into
   * `dataPath`: one file per non-empty bucket. With lineage, every row gets its source file's id
   * from `files`; a row whose file is not among them (the source changed during the build) fails
   * the build rather than being indexed without lineage. `mode` Append adds to a directory the
   * same operation already wrote into. Nested fields are read out of their structs into flat
   * columns ([[IndexColumn.storedName]]), here and for every refresh alike.
   */
  def write(
      df: DataFrame,
      definition: IndexDefinition,
      files: Seq[SourceFile],
      dataPath: Path,
      mode: SaveMode = SaveMode.ErrorIfExists): Unit = {
    val data = indexRows(df, definition, files)
    val bucketColumns = storedIndexedColumns(definition)
    val bucketed = SparkInternals.hashPartitionedAndSorted(data, definition.numBuckets, bucketColumns)
    SparkInternals.writeBucketedParquet(bucketed, dataPath, definition.numBuckets,
      bucketColumns, bucketColumns, mode, writeOptions(definition))
  }

  /**
   * The Parquet writer's options for the data files of `definition`: its indexed columns of
   * fixed-width types (numbers, dates, timestamps) are written without a dictionary. Sorted within
   * each file, their plain values compress about as well as dictionary codes or better, while a
   * dictionary costs every read of a row group decoding it whole: at TPC-H SF1 a bucket's
   * `l_orderkey` dictionary held 94,000 keys, decoded by each point lookup to return 4 rows.
   * Measured (benchmarks/results/archive/h-18-key-encoding.notes.md): 7% smaller and 6% faster to join
   * on `l_orderkey`, a split index on it 35% smaller, and 3-5% larger where the indexed column
   * has a few dozen values (scans equal). Strings keep their dictionary: short repeated strings
   * are read as codes. So does a column whose stored name has a dot (a nested field's): Parquet
   * reads the name in a per-column setting as a dotted path, which matches no column of the
   * flat index files.
   */
  def writeOptions(definition: IndexDefinition): Map[String, String] = {
    val schema = storedSchema(definition)
    storedIndexedColumns(definition)
      .filter(c => !c.contains('.') && schema.find(_.name == c).exists(f => fixedWidth(f.dataType)))
      .map(c => s"parquet.enable.dictionary#$c" -> "false").toMap
  }

  private def fixedWidth(t: DataType): Boolean = t match {
    case _: NumericType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  /**
   * The rows of the index data of `definition` over `df` (a scan of the source files `files`):
   * the stored columns in the stored schema's order, nested fields read out of their structs,
   * and with lineage each row's source file id (see [[write]]). Kinds laying the same rows out
   * otherwise start from here.
   */
  def indexRows(df: DataFrame, definition: IndexDefinition, files: Seq[SourceFile]): DataFrame = {
    val (indexed, included) = columnsOf(definition)
    val flat = df.select((indexed ++ included).map(_.fromSource) ++
        (if (definition.lineage) Seq(col("_metadata.file_path").as("__hs_file_path")) else Nil): _*)
    val stored = (indexed ++ included).map(c => quote(c.storedName))
    if (definition.lineage) withLineage(flat, files, stored) else flat
  }

  /**
   * Rewrites the rows of the index data files `files` of `entry` into `dataPath`, dropping the
   * rows of the source files with lineage ids `dropIds` — deletes are applied from the index
   * itself, never by reading the source again. With `oneFilePerBucket`, the rows are shuffled so
   * that every bucket ends up in one file (optimize); otherwise each task writes the buckets it
   * read, avoiding a shuffle of the whole index (refresh). `options` are Parquet writer options
   * beside [[writeOptions]].
   */
  def rewrite(
      spark: SparkSession,
      entry: LogEntry,
      files: Seq[ContentFile],
      dataPath: Path,
      dropIds: Set[Long],
      oneFilePerBucket: Boolean,
      mode: SaveMode = SaveMode.ErrorIfExists,
      options: Map[String, String] = Map.empty): Unit = {
    val definition = entry.index
    val all = spark.read.schema(storedSchema(definition)).parquet(files.map(entry.content.pathOf): _*)
    val kept = IndexKind.withoutSourceFiles(all, LineageColumn, dropIds)
    val bucketColumns = storedIndexedColumns(definition)
    val data = if (!oneFilePerBucket) kept
    else SparkInternals.hashPartitionedAndSorted(kept, definition.numBuckets, bucketColumns)
    SparkInternals.writeBucketedParquet(data, dataPath, definition.numBuckets,
      bucketColumns, bucketColumns, mode, writeOptions(definition) ++ options)
  }

  /** `flat` (the index columns and `__hs_file_path`) with each row's source file id as lineage. */
  private def withLineage(flat: DataFrame, files: Seq[SourceFile], columns: Seq[String]): DataFrame = {
    val spark = flat.sparkSession
    import spark.implicits._
    // Rows name their file as `_metadata.file_path` does: percent-encoded, unlike the listing.
    val ids = files.map(f => (SourcePaths.asMetadataPath(f.path), f.id)).toDF("__hs_file_path", "__hs_file_id")
    val fileId = coalesce(col("__hs_file_id"),
      raise_error(lit("A source file changed while the index was being built; retry.")).cast(LongType))
    flat.join(broadcast(ids), Seq("__hs_file_path"), "left")
      .select(columns.map(col) :+ fileId.as(LineageColumn): _*)
  }

  private def quote(name: String): String = IndexColumn.quote(name)

  /** The bucket a data file holds, from its name (Spark's bucketed-file naming). */
  def bucketOf(file: ContentFile): Option[Int] = BucketingUtils.getBucketId(file.name)
}
