package io.hyperspace.indexed

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._
import org.apache.spark.storage.StorageLevel

import io.hyperspace._
import io.hyperspace.testing.Fuzz

/**
 * Differential tests of Indexed DataFrames whose row batches are compressed
 * (`spark.hyperspace.indexed.compression`): scans, lookups, every join type, aggregates and
 * chains of appends return what the plain DataFrames return, with each codec, on generated rows
 * with nulls, strings, decimals and wide rows; small batches and blocks so that every partition
 * has many of both.
 */
class IndexedCompressionSuite extends SparkSessionSuite with SameRows {

  override protected def sessionConfig: Map[String, String] = Map(
    "spark.hyperspace.indexed.joinSelection" -> "index",
    "spark.hyperspace.indexed.batchSize" -> "8k",
    "spark.hyperspace.indexed.compression.blockSize" -> "512")

  private def source(n: Int, seed: Int, keys: Int = 700): DataFrame = spark.range(n).selectExpr(
    s"CASE WHEN hash(id, $seed) % 37 = 0 THEN NULL ELSE pmod(hash(id, $seed + 1), $keys) END AS k",
    s"CASE WHEN id % 11 = 0 THEN NULL ELSE concat('s', pmod(hash(id, $seed + 2), 50)) END AS s",
    s"CAST(pmod(hash(id, $seed + 3), 100000) AS DECIMAL(12, 2)) / 100 AS d",
    s"CAST(id AS DECIMAL(28, 4)) * 1234567.8901 AS wide_d",
    s"CASE WHEN id % 97 = 3 THEN repeat(concat('w', id), 300) ELSE NULL END AS wide",
    s"CAST(id + $seed * 100000 AS INT) AS i",
    "id % 3 = 0 AS b")

  private lazy val probe: DataFrame = spark.range(0, 900, 2).selectExpr(
    "CASE WHEN id % 41 = 0 THEN NULL ELSE id END AS pk", "CAST(id AS INT) AS pv")

  private def withCodec[T](codec: String)(f: => T): T = {
    spark.conf.set("spark.hyperspace.indexed.compression", codec)
    try f
    finally spark.conf.unset("spark.hyperspace.indexed.compression")
  }

  private def assertAgrees(idf: IndexedDataFrame, plain: DataFrame, clue: String): Unit = {
    val i = idf.toDF
    assertSameRows(i, plain, s"$clue scan")
    Seq(0L, 1L, 350L, 699L, 700L).foreach { key =>
      assertSameRows(idf.getRows(key), plain.filter(col("k") === key), s"$clue key $key")
    }
    assertSameRows(i.filter(col("k").isin(3, 5, 8, 13, 21)), plain.filter(col("k").isin(3, 5, 8, 13, 21)),
      s"$clue IN")
    assertSameRows(i.groupBy("k").agg(count("*"), sum("d"), max("wide")),
      plain.groupBy("k").agg(count("*"), sum("d"), max("wide")), s"$clue aggregate")
    assertJoinsAgree(i, plain, probe, clue)
  }

  Seq("lz4", "zstd").foreach { codec =>
    test(s"$codec: compressed batches answer scans, lookups, joins and aggregates as plain DataFrames") {
      val idf = withCodec(codec)(source(6000, 1).createIndex("k", 4)).cache()
      val stats = idf.memoryStats
      assert(stats("totalBatchBytes") < stats("usedBatchBytes") * 3 / 4, stats)
      assert(stats("blockManagerBytes") < stats("usedBatchBytes"), stats)
      assertAgrees(idf, source(6000, 1), codec)
      // Through Java serialization (a serialized level), as a spilled or replicated block.
      val ser = withCodec(codec)(source(6000, 1).createIndex("k", 4)).persist(StorageLevel.MEMORY_ONLY_SER)
      assertAgrees(ser, source(6000, 1), s"$codec serialized")
      Seq(idf, ser).foreach(_.unpersist(blocking = true))
    }
  }

  test("many versions over compressed batches: each answers with its own rows, old ones unchanged") {
    val base = withCodec("zstd")(source(3000, 1).createIndex("k", 4)).cache()
    val batches = (2 to 9).map(v => source(if (v % 3 == 0) 2000 else 30, v))
    val versions = batches.scanLeft(base)((parent, rows) => parent.appendRows(rows).cache())
    val plains = batches.scanLeft(source(3000, 1))(_ union _)
    // Every version's scan; its lookups and join for every other version in CI (and the last),
    // for every version under `make test-full`.
    versions.zip(plains).zipWithIndex.foreach { case ((v, plain), n) =>
      val i = v.toDF
      assertSameRows(i, plain, s"version $n scan")
    }
    versions.zip(plains).zipWithIndex.filter { case (_, n) =>
      n == versions.size - 1 || Fuzz.settingsFor(Seq(true, false), n).head
    }.foreach { case ((v, plain), n) =>
      val i = v.toDF
      Seq(0L, 7L, 350L, 699L).foreach { key =>
        assertSameRows(v.getRows(key), plain.filter(col("k") === key), s"version $n key $key")
      }
      assertSameRows(i.join(probe, i("k") === probe("pk")), plain.join(probe, plain("k") === probe("pk")),
        s"version $n join")
    }
    // A divergent append to an old version sees none of the later versions' rows.
    val extra = source(500, 42)
    assertSameRows(versions(2).appendRows(extra).toDF, plains(2).union(extra), "divergent append")
    versions.foreach(_.unpersist(blocking = true))
  }

  test("a decimal key (one long) is compressed too; a string key is not") {
    val data = source(4000, 3).withColumn("dk", col("d"))
    val byDecimal = withCodec("lz4")(data.createIndex("dk", 3)).cache()
    assert(byDecimal.memoryStats("totalBatchBytes") < byDecimal.memoryStats("usedBatchBytes") * 3 / 4)
    val someKey = data.filter(col("dk").isNotNull).select("dk").head().getDecimal(0)
    assertSameRows(byDecimal.getRows(someKey), data.filter(col("dk") === someKey), "decimal key")
    val byString = withCodec("lz4")(data.createIndex("s", 3)).cache()
    assert(byString.memoryStats("totalBatchBytes") >= byString.memoryStats("usedBatchBytes"))
    assertSameRows(byString.getRows("s7"), data.filter(col("s") === "s7"), "string key")
    Seq(byDecimal, byString).foreach(_.unpersist(blocking = true))
  }

  test("the codec setting is checked") {
    val e = intercept[io.hyperspace.HyperspaceException](withCodec("gzip")(source(10, 1).createIndex("k")))
    assert(e.getMessage.contains("spark.hyperspace.indexed.compression"), e.getMessage)
  }
}
