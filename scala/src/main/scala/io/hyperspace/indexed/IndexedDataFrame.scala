package io.hyperspace.indexed

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{Cast, EqualTo, Expression, Literal, Or}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.hyperspace.{PythonRows, SparkInternals}
import org.apache.spark.sql.types._
import org.apache.spark.storage.StorageLevel

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.shims.Casting

/**
 * An in-memory indexed cache of a DataFrame (the paper's Indexed DataFrame): rows
 * hash-partitioned on a key column, each partition holding an index from key to rows. Create one
 * with `df.createIndex("col")` (after `import io.hyperspace._`), then:
 * {{{
 *   val idf = df.createIndex("id").cache()   // materialized in the executors' block managers
 *   idf.getRows(42L).show()                  // point lookup: only the key's partition is read
 *   val v1 = idf.appendRows(moreRows)        // a new version; idf keeps its own rows
 *   idf.join(probe, idf("id") === probe("id"), "left_outer")   // indexed join
 *   idf.createOrReplaceTempView("t")         // SQL: WHERE id = 42, JOIN ... ON t.id = ...
 * }}}
 * DataFrame and SQL queries over [[toDF]] use the index for `key = literal`, `key IN (...)`
 * and equi-joins on the key (the index is the pre-built build side; only the other side is
 * shuffled to it); everything else scans the cached rows.
 *
 * Every column is nullable in an Indexed DataFrame, so appended rows may carry nulls anywhere.
 */
final class IndexedDataFrame private[indexed] (
    @transient val sparkSession: SparkSession,
    private[hyperspace] val data: IndexedData) {

  /** The DataFrame over this version; queries on it use the index. */
  lazy val toDF: DataFrame = SparkInternals.ofRows(sparkSession,
    IndexedRelation(DataTypeUtils.toAttributes(data.schema), data))

  /** The relation node of [[toDF]] (the same attribute ids as its columns). */
  private def relation: IndexedRelation = toDF.queryExecution.analyzed match {
    case r: IndexedRelation => r
    case other => throw new IllegalStateException(s"unexpected plan ${other.nodeName}")
  }

  /** The indexed column. */
  def keyColumn: String = data.keyColumn

  /** The schema of the rows (every column nullable). */
  def schema: StructType = data.schema

  /** Number of hash partitions; fixed for the index and all its versions. */
  def numPartitions: Int = data.numPartitions

  /** 0 for the index as created, n after n appends along this version's ancestry. */
  def version: Int = data.version

  /** The column `name` of [[toDF]], for join conditions. */
  def col(name: String): Column = toDF.col(name)

  /** The column `name` of [[toDF]] (`idf("id")`). */
  def apply(name: String): Column = col(name)

  /** Caches this version in memory (MEMORY_ONLY) and materializes it now. */
  def cache(): IndexedDataFrame = persist(StorageLevel.MEMORY_ONLY)

  /**
   * Persists this version at `level` and materializes it now, measuring its size. A level
   * that serializes (`MEMORY_ONLY_SER`, `..._2`, disk) copies shared ancestor rows into every
   * serialized block; `MEMORY_ONLY` shares them in memory.
   */
  def persist(level: StorageLevel): IndexedDataFrame = {
    val current = data.rdd.getStorageLevel
    if (current != StorageLevel.NONE && current != level) {
      throw new HyperspaceException(s"This Indexed DataFrame (key '$keyColumn') is already " +
        s"persisted at ${current.description}; unpersist() it before persisting at " +
        s"${level.description}.")
    }
    if (current == StorageLevel.NONE) data.rdd.persist(level)
    materialize()
    this
  }

  /** Whether this version is persisted. */
  def isCached: Boolean = data.isPersisted

  /**
   * Removes this version's partitions from the executors, and the broadcasts of its rows kept
   * for joins. Versions appended to it keep working (they recompute this version's rows from
   * lineage if they need them again).
   */
  def unpersist(blocking: Boolean = false): IndexedDataFrame = {
    data.rdd.unpersist(blocking)
    data.releaseBroadcasts()
    this
  }

  private def materialize(): IndexedStats = {
    val stats = data.materialize()
    data.measured = Some(stats)
    stats
  }

  /**
   * Sizes of this version: rows, keys, bytes of row batches and of the key index (see
   * [[IndexedStats]]), what Spark's block manager holds for it right now, and the bytes of the
   * broadcasts of its rows kept for joins ([[KeepIndexBroadcasts]]). Materializes the
   * version if it was not.
   */
  def memoryStats: Map[String, Long] = {
    val s = data.measured.getOrElse(materialize())
    // From the block manager master, which a block manager tells before its task ends; the
    // status store behind getRDDStorageInfo is updated later, from the listener bus.
    val cached = if (isCached) cachedPartitionExecutors.count(_._2.nonEmpty).toLong else 0L
    val (bytes, diskBytes) = if (isCached) SparkInternals.cachedBlockBytes(data.rdd) else (0L, 0L)
    Map(
      "rows" -> s.rows,
      "keys" -> s.keys,
      "partitions" -> numPartitions.toLong,
      "cachedPartitions" -> cached,
      "blockManagerBytes" -> bytes,
      "blockManagerDiskBytes" -> diskBytes,
      "ownBatchBytes" -> s.ownBatchBytes,
      "totalBatchBytes" -> s.totalBatchBytes,
      "usedBatchBytes" -> s.usedBatchBytes,
      "ownTrieBytes" -> s.ownTrieBytes,
      "keptBroadcastBytes" -> data.keptBroadcastBytes)
  }

  /** [[memoryStats]] as a Java map (for the Python bindings). */
  def memoryStatsAsJava: java.util.Map[String, java.lang.Long] = {
    val out = new java.util.LinkedHashMap[String, java.lang.Long]()
    memoryStats.foreach { case (k, v) => out.put(k, java.lang.Long.valueOf(v)) }
    out
  }

  /** For each partition, the executors caching it (for tests of recovery). */
  def cachedPartitionExecutors: Map[Int, Seq[String]] =
    SparkInternals.cachedPartitionExecutors(data.rdd)

  /** [[cachedPartitionExecutors]] as a Java map of executor-id lists. */
  def cachedPartitionExecutorsAsJava: java.util.Map[Integer, java.util.List[String]] = {
    val out = new java.util.TreeMap[Integer, java.util.List[String]]()
    cachedPartitionExecutors.foreach { case (p, e) =>
      out.put(Integer.valueOf(p), java.util.Arrays.asList(e: _*))
    }
    out
  }

  /**
   * The rows whose key equals `key`, as a DataFrame; only the key's partition is read. `key`
   * is a value of the key column's type (or one Spark compares with it: an Int for a long key,
   * a date string for a date key). A null key matches nothing, as in SQL.
   */
  def getRows(key: Any): DataFrame = {
    val rel = relation
    val keyType = rel.keyAttribute.dataType
    val literal = if (key == null) Literal(null, keyType) else lookupLiteral(key, keyType)
    SparkInternals.ofRows(sparkSession, Filter(EqualTo(rel.keyAttribute, literal), rel))
  }

  /**
   * The rows whose key is one of `keys`, fetched now: an eager [[getRows]] for a few keys that
   * plans no query. A partition the driver's own block manager holds (local mode) is read in
   * place; the others by one job on just the partitions the keys hash to
   * (`spark.hyperspace.indexed.lookup.readInPlace` turns the in-place read off). Each matching
   * row comes once, in no particular order; null keys match nothing. Keys are taken as by
   * [[getRows]]; a value Spark compares by casting the key column (a Double for a Long key)
   * makes the whole lookup an ordinary filtered query, which returns the same rows.
   */
  def lookup(keys: Seq[Any]): Seq[Row] = {
    val toScala = CatalystTypeConverters.createToScalaConverter(schema)
    lookupInternal(keys).toSeq.map(r => toScala(r).asInstanceOf[Row])
  }

  /** [[lookup]] for Java callers. */
  def lookupAsJava(keys: java.util.List[Any]): java.util.List[Row] =
    java.util.Arrays.asList(lookup(keys.asScala.toSeq): _*)

  /** [[lookup]] for Python: the rows pickled as `DataFrame.collect()` sends them. */
  def lookupForPython(keys: java.util.List[Any]): Array[Byte] =
    PythonRows.pickle(lookupInternal(keys.asScala.toSeq).toSeq, schema)

  /**
   * [[lookup]] of Catalyst literals (a SQL statement's values), converted to the key's type as
   * [[getRows]] converts values. Rows in Catalyst's form.
   */
  private[hyperspace] def lookupLiterals(values: Seq[Literal]): Seq[InternalRow] = {
    val keyType = relation.keyAttribute.dataType
    lookupKeyLiterals(values.filter(_.value != null).map(l => keyLiteral(l, l.toString, keyType))).toSeq
  }

  private def lookupInternal(keys: Seq[Any]): Array[InternalRow] = {
    val keyType = relation.keyAttribute.dataType
    lookupKeyLiterals(keys.filter(_ != null).map(lookupLiteral(_, keyType)))
  }

  private def lookupKeyLiterals(literals: Seq[Literal]): Array[InternalRow] = {
    val rel = relation
    val keyType = rel.keyAttribute.dataType
    if (literals.isEmpty) Array.empty
    else if (literals.forall(_.dataType == keyType)) {
      data.lookup(literals.map(_.value), HyperspaceConf.indexedLookupReadInPlace(sparkSession))
    } else {
      val condition = literals.map(l => EqualTo(rel.keyAttribute, l): Expression).reduce(Or)
      SparkInternals.ofRows(sparkSession, Filter(condition, rel)).queryExecution.executedPlan
        .executeCollect()
    }
  }

  // A literal Spark would compare with the key by casting the column (an Int column against a
  // Long value) would defeat the index; integral values that fit are converted to the key's type.
  private def lookupLiteral(key: Any, keyType: DataType): Literal = {
    val provided = try Literal(key)
    catch {
      case NonFatal(e) => throw new HyperspaceException(s"Cannot look up ${describe(key)} in " +
          s"key column '$keyColumn' of type ${keyType.simpleString}: ${e.getMessage}")
    }
    keyLiteral(provided, key, keyType)
  }

  // `provided` (the value `key`) as a literal of the key's type when the index can take it, else
  // as given (then compared by a filter, as Spark compares it).
  private def keyLiteral(provided: Literal, key: Any, keyType: DataType): Literal = {
    if (provided.dataType == keyType) return provided
    val integral = Set[DataType](ByteType, ShortType, IntegerType, LongType)
    if (integral(provided.dataType) && integral(keyType)) {
      val v = provided.value.asInstanceOf[Number].longValue()
      val fits = keyType match {
        case ByteType => v.isValidByte
        case ShortType => v.isValidShort
        case IntegerType => v.isValidInt
        case _ => true
      }
      if (fits) return Literal.create(Casting.legacy(Literal(v), keyType).eval(), keyType)
    }
    // A decimal (Python's Decimal("3.00") is a decimal(3, 2)) or an integer compared with a decimal key
    // is widened to the key's type by SQL too; when that is exact, the index can take it.
    (provided.dataType, keyType) match {
      case (_: NumericType, _: DecimalType) if Cast.canUpCast(provided.dataType, keyType) =>
        return Literal.create(Casting.legacy(provided, keyType).eval(), keyType)
      case _ =>
    }
    // Python floats arrive as doubles; one a float key can hold exactly is a float key value.
    if (provided.dataType == DoubleType && keyType == FloatType) {
      val d = provided.value.asInstanceOf[Double]
      if (d.isNaN || d.toFloat.toDouble == d) return Literal(d.toFloat)
    }
    if (!Cast.canCast(provided.dataType, keyType)) {
      throw new HyperspaceException(s"Cannot look up ${describe(key)} in key column " +
        s"'$keyColumn' of type ${keyType.simpleString}: a ${provided.dataType.simpleString} value " +
        "cannot be compared with it.")
    }
    try Casting.ansi(provided, keyType, Some(sparkSession.conf.get("spark.sql.session.timeZone"))).eval()
    catch {
      case NonFatal(e) => throw new HyperspaceException(s"Cannot look up ${describe(key)} in " +
          s"key column '$keyColumn' of type ${keyType.simpleString}: ${e.getMessage}")
    }
    provided
  }

  private def describe(key: Any): String = key match {
    case s: String => s"'$s'"
    case other => String.valueOf(other)
  }

  /**
   * A new version with `rows` appended. Columns are matched by name (case as configured by
   * `spark.sql.caseSensitive`); a column may have a type that safely up-casts to the index's.
   * This version keeps answering with its own rows; two appends to it are independent
   * versions that share its data. The new version is persisted like this one and materialized
   * on first use (or by [[cache]]).
   */
  def appendRows(rows: DataFrame): IndexedDataFrame = {
    val aligned = IndexedDataFrame.align(rows, data.schema, sparkSession)
    val shuffled = IndexedData.shuffleByKey(aligned, data.schema, data.keyOrdinal, numPartitions)
    val bytes = aligned.queryExecution.optimizedPlan.stats.sizeInBytes
    new IndexedDataFrame(sparkSession, data.append(shuffled, bytes))
  }

  /**
   * `toDF.join(other, condition, joinType)`: an equi-join on the key uses the index for inner,
   * left/right/full outer, semi and anti joins, with any other condition applied after the
   * probe. Reference this side's columns through [[col]] / `idf("name")`.
   */
  def join(other: DataFrame, condition: Column, joinType: String): DataFrame =
    toDF.join(other, condition, joinType)

  /** Inner [[join]]. */
  def join(other: DataFrame, condition: Column): DataFrame = join(other, condition, "inner")

  /** `toDF.join(other, usingColumns, joinType)` (the index is used when the key is among them). */
  def join(other: DataFrame, usingColumns: Seq[String], joinType: String): DataFrame =
    toDF.join(other, usingColumns, joinType)

  /** [[join]] on one column of the same name on both sides. */
  def join(other: DataFrame, usingColumn: String, joinType: String): DataFrame =
    join(other, Seq(usingColumn), joinType)

  /** Registers [[toDF]] as a temporary view; SQL over it uses the index. */
  def createOrReplaceTempView(viewName: String): Unit = toDF.createOrReplaceTempView(viewName)

  /** Number of rows of this version. */
  def count(): Long = data.measured.map(_.rows).getOrElse(toDF.count())

  override def toString: String =
    s"IndexedDataFrame[key=$keyColumn, version=$version, partitions=$numPartitions, " +
      s"cached=$isCached, schema=${schema.simpleString}]"
}

/** Creates [[IndexedDataFrame]]s. */
object IndexedDataFrame {

  /**
   * An Indexed DataFrame over `df` keyed on `keyColumn`, hash-partitioned into
   * `spark.hyperspace.indexed.numPartitions` partitions. Nothing runs until it is cached or
   * queried; call [[IndexedDataFrame.cache]] to build it in memory.
   */
  def create(df: DataFrame, keyColumn: String): IndexedDataFrame = {
    val spark = df.sparkSession
    create(df, keyColumn, HyperspaceConf.indexedNumPartitions(spark))
  }

  /** [[create]] with an explicit number of partitions. */
  def create(df: DataFrame, keyColumn: String, numPartitions: Int): IndexedDataFrame = {
    val spark = df.sparkSession
    if (numPartitions <= 0 || numPartitions > 100000) {
      throw new HyperspaceException(
        s"Cannot index on column '$keyColumn' with $numPartitions partitions: must be 1 to 100000.")
    }
    val fields = df.schema.fields
    val names = fields.map(f => normalize(spark, f.name))
    val duplicates = names.groupBy(identity).collect { case (n, v) if v.length > 1 => n }
    if (duplicates.nonEmpty) {
      throw new HyperspaceException(s"Cannot index a DataFrame with duplicate column names " +
        s"(${duplicates.toSeq.sorted.mkString(", ")}); rename them first.")
    }
    val keyOrdinal = names.indexOf(normalize(spark, keyColumn))
    if (keyOrdinal < 0) {
      throw new HyperspaceException(s"Cannot index on column '$keyColumn': no such column. " +
        s"Columns: ${fields.map(_.name).mkString(", ")}.")
    }
    KeyCodec.forColumn(fields(keyOrdinal).name, fields(keyOrdinal).dataType)
    val schema = StructType(fields.map(_.copy(nullable = true)))
    val batchSize = HyperspaceConf.indexedBatchSize(spark).toInt
    val packing = BatchPacking(HyperspaceConf.indexedCompression(spark),
      HyperspaceConf.indexedCompressionBlockSize(spark).toInt,
      compactRows = HyperspaceConf.indexedRowFormat(spark) == "compact")
    new IndexedDataFrame(spark,
      IndexedData.build(df, schema, keyOrdinal, numPartitions, batchSize, packing))
  }

  /**
   * Why each equi-join on an Indexed DataFrame's key in `df` probes the index or is left to
   * Spark's own join (the planner's [[IndexedJoinSelection]] decisions, with the sizes used).
   */
  def joinDecisions(df: DataFrame): Seq[String] =
    IndexedStrategy.decisions(df.queryExecution.optimizedPlan).map { d =>
      (if (d.useIndex) "index: " else "spark: ") + d.reason
    }

  /** [[joinDecisions]] for Python. */
  def joinDecisionsAsJava(df: DataFrame): java.util.List[String] =
    java.util.Arrays.asList(joinDecisions(df): _*)

  private def normalize(spark: SparkSession, name: String): String =
    if (spark.conf.get("spark.sql.caseSensitive").toBoolean) name else name.toLowerCase

  /** `rows` with exactly `schema`'s columns, in order and types, or an error naming a column. */
  private[indexed] def align(rows: DataFrame, schema: StructType, spark: SparkSession): DataFrame = {
    // Rows that already have the columns in order are used as they are: their plan (and the RDD
    // it executes to) is then made once per DataFrame, not again for every append of it.
    val same = rows.schema.length == schema.length && rows.schema.fields.zip(schema.fields).forall {
      case (g, f) => g.dataType == f.dataType && normalize(spark, g.name) == normalize(spark, f.name)
    }
    if (same) return rows
    val provided = rows.schema.fields.map(f => normalize(spark, f.name) -> f).toMap
    val wanted = schema.fields.map(f => normalize(spark, f.name)).toSet
    val extra = rows.schema.fields.filterNot(f => wanted(normalize(spark, f.name)))
    if (extra.nonEmpty) {
      throw new HyperspaceException(s"Cannot append rows with column(s) " +
        s"${extra.map(f => s"'${f.name}'").mkString(", ")} the index does not have. Index " +
        s"columns: ${schema.fieldNames.mkString(", ")}.")
    }
    val columns = schema.fields.map { f =>
      provided.get(normalize(spark, f.name)) match {
        case None => throw new HyperspaceException(s"Cannot append rows without column " +
            s"'${f.name}' (${f.dataType.simpleString}); the rows have " +
            s"${rows.schema.fieldNames.mkString(", ")}.")
        case Some(g) if g.dataType == f.dataType => col(s"`${g.name}`").as(f.name)
        case Some(g) if Cast.canUpCast(g.dataType, f.dataType) =>
          col(s"`${g.name}`").cast(f.dataType).as(f.name)
        case Some(g) => throw new HyperspaceException(s"Cannot append rows whose column " +
            s"'${g.name}' is ${g.dataType.simpleString}: the index column is " +
            s"${f.dataType.simpleString} and the value cannot be up-cast safely.")
      }
    }
    rows.select(columns.toIndexedSeq: _*)
  }
}
