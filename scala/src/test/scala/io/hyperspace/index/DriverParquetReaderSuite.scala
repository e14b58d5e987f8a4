package io.hyperspace.index

import java.io.File

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.datasources.{FileFormat, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources
import org.apache.spark.sql.types._

import io.hyperspace.SparkSessionSuite
import io.hyperspace.shims.FileListing

/**
 * The driver-side Parquet reader reads what Spark's Parquet format reads (rows, pushed filters,
 * calendars, partition values) with the configuration Spark's set-up writes, and broadcasts
 * nothing.
 */
class DriverParquetReaderSuite extends SparkSessionSuite {

  /** Every type the vectorized reader reads, NULLs, NaN, negative decimals, pre-Gregorian dates. */
  private lazy val typed: String = {
    val path = newDir("typed").getAbsolutePath + "/data"
    spark.range(0, 3000, 1, 3).selectExpr(
      "id",
      "CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(id % 100 AS INT) END AS i",
      "CAST(id % 3 AS TINYINT) AS b", "CAST(id AS SMALLINT) AS s", "id % 2 = 0 AS flag",
      "CASE WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) ELSE id / 4.0D END AS dbl",
      "CAST(id / 3.0 AS FLOAT) AS f",
      "CAST(id * 1.25 - 500 AS DECIMAL(9, 2)) AS dec_small",
      "CAST(id AS DECIMAL(38, 10)) * 1000000 AS dec_big",
      "CASE WHEN id % 5 = 0 THEN NULL ELSE concat('name-', id) END AS str",
      "CAST(concat('bin', id % 17) AS BINARY) AS bin",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 400 AS INT)) AS d",
      "TIMESTAMP_SECONDS(1700000000 + id * 37) AS ts",
      "CAST(TIMESTAMP_SECONDS(1700000000 + id) AS TIMESTAMP_NTZ) AS ntz",
      "array(id, id + 1) AS arr", "named_struct('x', id, 'y', CAST(id AS STRING)) AS st",
      "CAST(id % 4 AS INT) AS part")
      // Row groups and pages of a few dozen rows: pushed filters have some to skip.
      .write.option("parquet.block.size", "4096").option("parquet.page.size", "1024")
      .partitionBy("part").parquet(path)
    path
  }

  /** Dates and timestamps before 1582 written in the legacy hybrid calendar, INT96 timestamps. */
  private lazy val legacy: String = {
    val path = newDir("legacy").getAbsolutePath + "/data"
    withConf(
      "spark.sql.parquet.datetimeRebaseModeInWrite" -> "LEGACY",
      "spark.sql.parquet.int96RebaseModeInWrite" -> "LEGACY",
      "spark.sql.parquet.outputTimestampType" -> "INT96") {
      spark.range(0, 500, 1, 2).selectExpr(
        "id", "DATE_ADD(DATE'1000-01-01', CAST(id AS INT)) AS d",
        "TIMESTAMP_SECONDS(-30000000000 + id * 86400) AS ts").write.parquet(path)
    }
    path
  }

  private val partSchema = new StructType().add("part", IntegerType)

  /** The data files under `root` as splits of Spark's reading, with their partition values. */
  private def splits(root: String): Seq[PartitionedFile] = {
    val fs = new Path(root).getFileSystem(spark.sessionState.newHadoopConf())
    val files = fs.listFiles(new Path(root), true)
    Iterator.continually(files).takeWhile(_.hasNext).map(_.next())
      .filter(_.getPath.getName.endsWith(".parquet")).toSeq.sortBy(_.getPath.toString)
      .map { status =>
        val file = FileListing.partitionedFile(status)
        status.getPath.getParent.getName match {
          case s"part=$value" => file.copy(partitionValues = InternalRow(value.toInt))
          case _ => file
        }
      }
  }

  private def sparkReader(
      partitions: StructType,
      required: StructType,
      filters: Seq[sources.Filter],
      options: Map[String, String] = Map.empty,
      conf: Configuration = spark.sessionState.newHadoopConf()) =
    new ParquetFileFormat().buildReaderWithPartitionValues(spark, required, partitions, required, filters,
      options + (FileFormat.OPTION_RETURNING_BATCH -> "false"), conf)

  private def rowsOf(read: PartitionedFile => Iterator[InternalRow], files: Seq[PartitionedFile],
      schema: StructType) = {
    val toUnsafe = UnsafeProjection.create(schema)
    val toRow = CatalystTypeConverters.createToScalaConverter(schema)
    files.flatMap(f => read(f).map(r => toRow(toUnsafe(r).copy()).asInstanceOf[Row]).toList)
  }

  /** Rows in the same order (both readers read files in order); said by count, not dumped. */
  private def assertSameRows(read: Seq[Row], expected: Seq[Row], what: String): Unit = {
    val same = read == expected
    assert(same,
      s"$what: ${read.size} rows against ${expected.size}, first difference at " +
        read.zip(expected).indexWhere { case (a, b) => a != b })
  }

  test("the configuration written for a read is the one Spark's Parquet format writes") {
    val required = spark.read.parquet(typed).schema
    for {
      (key, value) <- Seq(
        "spark.sql.caseSensitive" -> "true", "spark.sql.parquet.binaryAsString" -> "true",
        "spark.sql.session.timeZone" -> "Asia/Kolkata", "spark.sql.parquet.int96AsTimestamp" -> "false",
        "spark.sql.optimizer.nestedSchemaPruning.enabled" -> "false",
        "spark.sql.parquet.inferTimestampNTZ.enabled" -> "false")
      schema <- Seq(required, new StructType().add("id", LongType))
    } withConf(key -> value) {
      val sparks = spark.sessionState.newHadoopConf()
      sparkReader(new StructType(), schema, Nil, conf = sparks)
      val ours = spark.sessionState.newHadoopConf()
      DriverParquetReader.configure(ours, spark.sessionState.conf, schema)
      def entries(c: Configuration) = c.iterator().asScala.map(e => e.getKey -> e.getValue).toMap
      val (a, b) = (entries(sparks), entries(ours))
      val same = a == b
      assert(same, s"$key=$value: differs at ${(a.toSet diff b.toSet) ++ (b.toSet diff a.toSet)}")
    }
  }

  test("the job configuration of a read is the session's with the relation's options, as Spark builds it") {
    val shared = spark.sparkContext.hadoopConfiguration
    shared.set("hyperspace.test.shared", "context")
    try withConf("hyperspace.test.session" -> "session", "spark.sql.session.timeZone" -> "Asia/Kolkata") {
        val options = Map("path" -> "/not/this", "paths" -> "[]", "mergeSchema" -> "true",
          "hyperspace.test.shared" -> "option", "hyperspace.test.null" -> null)
        def entries(c: Configuration) = c.iterator().asScala.map(e => e.getKey -> e.getValue).toMap
        val (sparks, ours) = (entries(spark.sessionState.newHadoopConfWithOptions(options)),
          entries(DriverParquetReader.jobConf(spark, options)))
        assert(sparks == ours, s"differs at ${(sparks.toSet diff ours.toSet) ++ (ours.toSet diff sparks.toSet)}")
        assert(ours.get("hyperspace.test.shared").contains("option") &&
          ours.get("hyperspace.test.session").contains("session"))
        assert(!ours.contains("path") && !ours.contains("hyperspace.test.null"))
      }
    finally shared.unset("hyperspace.test.shared")
  }

  test("a driver read of local files turns Parquet's vectored reads off, unless the user set them") {
    val key = DriverParquetReader.VectoredReads
    val local = Some(new Path(new File(typed).toURI))
    def setting(options: Map[String, String], from: Option[Path]): Option[String] =
      Option(DriverParquetReader.jobConf(spark, options, from).get(key))
    assert(setting(Map.empty, local).contains("false"))
    assert(setting(Map.empty, Some(new Path(typed))).contains("false")) // on the default file system
    // Only what Spark's own configuration holds, elsewhere (or with nothing read).
    val sparks = Option(spark.sessionState.newHadoopConfWithOptions(Map.empty).get(key))
    assert(setting(Map.empty, Some(new Path("s3a://bucket/index/part-0.parquet"))) == sparks)
    assert(setting(Map.empty, None) == sparks)
    // The user's setting wins, wherever it is made.
    assert(setting(Map(key -> "true"), local).contains("true"))
    withConf(key -> "true") { assert(setting(Map.empty, local).contains("true")) }
    val shared = spark.sparkContext.hadoopConfiguration
    val before = Option(shared.get(key))
    shared.set(key, "true")
    try assert(setting(Map.empty, local).contains("true"))
    finally before.fold(shared.unset(key))(shared.set(key, _))
    // A split index's page reads decide the same from the configuration they are given.
    val bare = spark.sessionState.newHadoopConf()
    bare.unset(key)
    assert(!DriverParquetReader.vectoredReads(local.get, bare))
    assert(DriverParquetReader.vectoredReads(new Path("s3a://bucket/index/part-0.parquet"), bare) ==
      org.apache.parquet.hadoop.ParquetInputFormat.HADOOP_VECTORED_IO_DEFAULT)
    bare.set(key, "true")
    assert(DriverParquetReader.vectoredReads(local.get, bare))
  }

  test("reads the rows Spark's reader reads, with the same filters pushed, and no broadcast") {
    val full = spark.read.parquet(typed).schema
    val required = StructType(full.filterNot(_.name == "part"))
    val files = splits(typed)
    assert(files.size >= 12)
    val filterSets = Seq(
      Nil,
      Seq(sources.EqualTo("id", 1234L)),
      Seq(sources.In("i", Array(3, 50, 99))),
      Seq(sources.GreaterThan("dec_small", BigDecimal("1000.00").bigDecimal), sources.LessThan("id", 1500L)),
      Seq(sources.StringStartsWith("str", "name-29")),
      Seq(sources.IsNull("str")),
      Seq(sources.GreaterThanOrEqual("d", java.sql.Date.valueOf("2024-12-01"))),
      Seq(sources.LessThan("ts", java.sql.Timestamp.valueOf("2023-11-15 00:00:00"))),
      Seq(sources.EqualTo("id", -1L)))
    for {
      filters <- filterSets
      schema <- Seq(required, StructType(required.filter(f => Set("str", "id").contains(f.name))))
    } {
      val ours = DriverParquetReader(spark, partSchema, schema, filters, Map.empty, spark.sessionState.newHadoopConf())
        .getOrElse(fail("the vectorized reader reads these types"))
      val resultSchema = StructType(schema ++ partSchema)
      var read: Seq[Row] = Nil
      assert(broadcastsDuring { read = rowsOf(ours, files, resultSchema) } == 0)
      assertSameRows(read, rowsOf(sparkReader(partSchema, schema, filters), files, resultSchema), filters.toString)
      // The pushed filter skipped row groups (the equality above holds only if both readers did).
      if (filters == Seq(sources.EqualTo("id", 1234L))) assert(read.nonEmpty && read.size <= 1000, read.size)
    }
    // A split of a file's first half reads the row groups whose middle lies in it, as Spark's does.
    val half = files.head.copy(length = files.head.length / 2)
    val ours = DriverParquetReader(spark, partSchema, required, Nil, Map.empty, spark.sessionState.newHadoopConf()).get
    val firstHalf = rowsOf(ours, Seq(half), StructType(required ++ partSchema))
    assert(firstHalf.nonEmpty && firstHalf.size < rowsOf(ours, files.take(1), StructType(required ++ partSchema)).size)
    assertSameRows(firstHalf,
      rowsOf(sparkReader(partSchema, required, Nil), Seq(half), StructType(required ++ partSchema)),
      "half a file")
    // The check above can see a broadcast: Spark's reader makes one.
    assert(broadcastsDuring(sparkReader(partSchema, required, Nil)) == 1)
  }

  test("rebases legacy calendars and reads INT96 as Spark does") {
    val schema = spark.read.parquet(legacy).schema
    val files = splits(legacy)
    for {
      mode <- Seq(Map.empty[String, String], Map("datetimeRebaseMode" -> "CORRECTED", "int96RebaseMode" -> "CORRECTED"))
      filters <- Seq(Nil, Seq(sources.LessThan("d", java.sql.Date.valueOf("1000-03-01"))))
    } {
      val ours =
        DriverParquetReader(spark, new StructType(), schema, filters, mode, spark.sessionState.newHadoopConf()).get
      val read = rowsOf(ours, files, schema)
      assertSameRows(read, rowsOf(sparkReader(new StructType(), schema, filters, mode), files, schema),
        s"$mode $filters")
      if (mode.isEmpty) assert(read.map(_.getAs[java.sql.Date]("d").toString).contains("1000-01-01"))
    }
  }

  test("leaves to Spark's reader what Spark reads without its vectorized reader") {
    val schema = new StructType().add("id", LongType)
    withConf("spark.sql.parquet.enableVectorizedReader" -> "false") {
      assert(DriverParquetReader(spark, new StructType(), schema, Nil, Map.empty,
          spark.sessionState.newHadoopConf()).isEmpty)
    }
    withConf("spark.sql.parquet.enableNestedColumnVectorizedReader" -> "false") {
      val nested = new StructType().add("arr", ArrayType(LongType))
      assert(DriverParquetReader(spark, new StructType(), nested, Nil, Map.empty,
          spark.sessionState.newHadoopConf()).isEmpty)
      assert(DriverParquetReader(spark, new StructType(), schema, Nil, Map.empty,
          spark.sessionState.newHadoopConf()).nonEmpty)
    }
  }
}
