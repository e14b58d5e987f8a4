package io.hyperspace.index

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame

import io.hyperspace.HyperspaceSuite
import io.hyperspace.log.ContentFile

/**
 * Per-file ranges taken from Parquet footers are exactly those an aggregation over the rows
 * finds, for every type the footer is used for, across row groups, NULLs, negative numbers,
 * strings of any length and empty files; types and settings the footer cannot tell exactly are
 * aggregated instead.
 */
class FileRangesSuite extends HyperspaceSuite {

  private val Columns = Seq("b", "sh", "i", "l", "d", "ts", "ntz", "bo", "dec1", "dec2", "dec3", "s", "nulls")

  private def rows(n: Long): DataFrame = spark.range(0, n, 1, 3).selectExpr(
    "CAST(CASE WHEN id % 11 = 0 THEN NULL ELSE id % 200 - 100 END AS BYTE) AS b",
    "CAST(pmod(hash(id), 60000) - 30000 AS SHORT) AS sh",
    "CASE WHEN id % 5 = 0 THEN NULL ELSE hash(id, 1) END AS i",
    "CAST(hash(id, 2) AS BIGINT) * 1000003 AS l",
    "DATE_ADD(DATE'1960-01-01', CAST(pmod(hash(id, 3), 40000) AS INT)) AS d",
    "TIMESTAMP_SECONDS(CAST(hash(id, 4) AS BIGINT) * 7) AS ts",
    "CAST(TIMESTAMP_SECONDS(CAST(hash(id, 5) AS BIGINT)) AS TIMESTAMP_NTZ) AS ntz",
    "CASE WHEN id % 3 = 0 THEN NULL ELSE id % 7 = 0 END AS bo",
    "CAST(hash(id, 6) / 1000000.0 AS DECIMAL(7, 2)) AS dec1",
    "CAST(hash(id, 7) / 7.0 AS DECIMAL(15, 3)) AS dec2",
    "CAST(hash(id, 8) * 1234567.0 AS DECIMAL(30, 5)) AS dec3",
    // Unicode, the empty string, and (in the first file only) values too long to record.
    "CASE WHEN id % 997 = 0 AND id < 5000 THEN repeat('ÿ', 300) WHEN id % 13 = 0 THEN '' " +
      "ELSE CONCAT(CASE WHEN id % 2 = 0 THEN 'é' ELSE 'a' END, hash(id, 9)) END AS s",
    "CAST(NULL AS INT) AS nulls")

  private def written(name: String, df: DataFrame, blockSize: Int = 32768): (Path, Seq[ContentFile]) = {
    val dir = new Path(newDir(name).getAbsolutePath, "data")
    df.write.option("parquet.block.size", blockSize.toString).parquet(dir.toString)
    val fs = dir.getFileSystem(spark.sessionState.newHadoopConf())
    val files = fs.listStatus(dir).toSeq.filter(_.getPath.getName.endsWith(".parquet"))
      .map(s => ContentFile(s.getPath.getName, s.getLen, s.getModificationTime))
    (dir, files)
  }

  private def withTimestamps[T](kind: String)(body: => T): T = {
    spark.conf.set("spark.sql.parquet.outputTimestampType", kind)
    try body
    finally spark.conf.unset("spark.sql.parquet.outputTimestampType")
  }

  test("footer ranges equal the rows' ranges for every type read from the footer, over many row groups") {
    withTimestamps("TIMESTAMP_MICROS") {
      val df = rows(20000)
      val (dir, files) = written("footers", df)
      val schema = spark.read.parquet(dir.toString).schema
      val conf = spark.sessionState.newHadoopConf()
      val footers = ParquetFooterRanges.read(conf, schema, Columns, dir, files)
        .getOrElse(fail("the footers were not used"))
      val aggregated = FileRanges.aggregated(spark, schema, Columns, dir, files)
      assert(footers == aggregated)
      // The check above means something: several row groups per file, ranges of every column
      // but the long strings', which neither way records.
      assert(footers.values.forall(_.rowCount > 0) && footers.values.map(_.rowCount).sum == 20000)
      val reader = org.apache.parquet.hadoop.ParquetFileReader.open(
        org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(new Path(dir, files.head.name), conf))
      try assert(reader.getFooter.getBlocks.size > 1, reader.getFooter.getBlocks.size)
      finally reader.close()
      assert(footers.values.exists(_.columns.keySet == Columns.toSet - "s"))
      assert(footers.values.exists(_.columns.keySet == Columns.toSet))
      footers.values.foreach(f => assert(f.columns("nulls").min.isEmpty && f.columns("nulls").nullCount == f.rowCount))
    }
  }

  test("dates and timestamps written in the LEGACY rebase mode are aggregated, not read from the footer") {
    spark.conf.set("spark.sql.parquet.datetimeRebaseModeInWrite", "LEGACY")
    try withTimestamps("TIMESTAMP_MICROS") {
        val old = spark.range(0, 200, 1, 2).selectExpr("id",
          "DATE_ADD(DATE'1200-01-01', CAST(id AS INT)) AS d", "TIMESTAMP_SECONDS(-25000000000 + id) AS ts")
        val (dir, files) = written("legacy", old)
        val schema = spark.read.parquet(dir.toString).schema
        val conf = spark.sessionState.newHadoopConf()
        assert(ParquetFooterRanges.read(conf, schema, Seq("d"), dir, files).isEmpty)
        assert(ParquetFooterRanges.read(conf, schema, Seq("ts"), dir, files).isEmpty)
        assert(ParquetFooterRanges.read(conf, schema, Seq("id"), dir, files).isDefined)
        // What is recorded is the rows' own range, as Spark reads them back.
        val described = FileRanges.describe(spark, schema, Seq("d"), dir, files).flatMap(_.stats)
        val firstDay = java.time.LocalDate.parse("1200-01-01").toEpochDay
        assert(described.flatMap(_.columns("d").min).map(_.toLong).min == firstDay)
      }
    finally spark.conf.unset("spark.sql.parquet.datetimeRebaseModeInWrite")
  }

  test("an empty file has no values in the footer as in the rows") {
    val (dir, files) = written("empty", rows(10).limit(0))
    val schema = spark.read.parquet(dir.toString).schema
    val footers = ParquetFooterRanges.read(spark.sessionState.newHadoopConf(), schema, Columns, dir, files)
    assert(footers.isDefined && footers == Some(FileRanges.aggregated(spark, schema, Columns, dir, files)))
    assert(footers.get.values.forall(_.rowCount == 0))
  }

  test("floating-point columns and INT96 timestamps are aggregated, not read from the footer") {
    val withNaN = rows(3000).selectExpr("i", "CASE WHEN i % 5 = 0 THEN double('NaN') ELSE i / 3.0 END AS x")
    val (dir, files) = written("floats", withNaN)
    val schema = spark.read.parquet(dir.toString).schema
    assert(ParquetFooterRanges.read(spark.sessionState.newHadoopConf(), schema, Seq("i", "x"), dir, files).isEmpty)
    val described = FileRanges.describe(spark, schema, Seq("i", "x"), dir, files)
    // The aggregation sees the NaNs, which Spark orders above every number.
    assert(described.flatMap(_.stats).exists(_.columns("x").max.contains("NaN")))
    withTimestamps("INT96") {
      val (tsDir, tsFiles) = written("int96", rows(100).select("ts"))
      val tsSchema = spark.read.parquet(tsDir.toString).schema
      assert(ParquetFooterRanges.read(spark.sessionState.newHadoopConf(), tsSchema, Seq("ts"), tsDir, tsFiles).isEmpty)
      assert(FileRanges.describe(spark, tsSchema, Seq("ts"), tsDir, tsFiles).forall(
          _.stats.exists(_.columns.contains("ts"))))
    }
  }
}
