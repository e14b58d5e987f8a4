package io.hyperspace.indexed

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._
import org.apache.spark.storage.StorageLevel

import io.hyperspace._
import io.hyperspace.testing.Fuzz

/**
 * Differential tests of the two stored row forms (`spark.hyperspace.indexed.rowFormat`
 * `compact` and `unsafe`): scans, lookups, every join type, aggregates, serialized storage and
 * chains of appends (divergent ones included) return what the plain DataFrames return, on rows
 * of every atomic type with nulls; small batches so that links cross batches.
 */
class IndexedCompactRowsSuite extends SparkSessionSuite with SameRows {

  override protected def sessionConfig: Map[String, String] = Map(
    "spark.hyperspace.indexed.joinSelection" -> "index",
    "spark.hyperspace.indexed.batchSize" -> "8k")

  private val Forms = Seq("compact", "unsafe")

  /** Every atomic type (`AtomicKeyTypes`' columns), nulls in each, a nullable long key `k`. */
  private def source(n: Int, seed: Int, keys: Int = 700): DataFrame = {
    val typed = AtomicKeyTypes.frame(spark, n.toLong)
    val nulled = typed.columns.filter(_ != "id").map { c =>
      expr(s"CASE WHEN pmod(hash(id, $seed, '$c'), 13) = 0 THEN NULL ELSE $c END").as(c)
    }
    typed.select(
      (Seq(
        expr(s"CASE WHEN pmod(hash(id, $seed), 37) = 0 THEN NULL ELSE pmod(hash(id, $seed + 1), $keys) END").as("k"),
        expr(s"id + $seed * 1000000 AS n"),
        // Negative and large values (zig-zag varints), high-cardinality and long strings (inline).
        expr(s"(id - 500) * 1099511627776 * (1 - 2 * (id % 2)) AS big"),
        expr(s"CASE WHEN id % 5 = 0 THEN repeat(concat('w', id), 40) ELSE concat('u', id, '-', $seed) END AS text"),
        expr("CAST(NULL AS STRING) AS always_null")) ++ nulled): _*)
  }

  private lazy val probe: DataFrame = spark.range(0, 900, 2).selectExpr(
    "CASE WHEN id % 41 = 0 THEN NULL ELSE id END AS pk", "CAST(id AS INT) AS pv")

  private def withForm[T](form: String)(f: => T): T = {
    spark.conf.set("spark.hyperspace.indexed.rowFormat", form)
    try f
    finally spark.conf.unset("spark.hyperspace.indexed.rowFormat")
  }

  private def assertAgrees(idf: IndexedDataFrame, plain: DataFrame, clue: String): Unit = {
    val i = idf.toDF
    assertSameRows(i, plain, s"$clue scan")
    Seq(0L, 1L, 350L, 699L, 700L).foreach { key =>
      assertSameRows(idf.getRows(key), plain.filter(col("k") === key), s"$clue key $key")
    }
    assertSameRows(i.filter(col("k").isin(3, 5, 8, 13, 21)), plain.filter(col("k").isin(3, 5, 8, 13, 21)),
      s"$clue IN")
    assertSameRows(i.groupBy("k").agg(count("*"), sum("b_dec"), max("text"), sum("big")),
      plain.groupBy("k").agg(count("*"), sum("b_dec"), max("text"), sum("big")), s"$clue aggregate")
    assertJoinsAgree(i, plain, probe, clue)
  }

  Forms.foreach { form =>
    test(s"$form: every atomic type with nulls answers scans, lookups, joins and aggregates as plain DataFrames") {
      val idf = withForm(form)(source(5000, 1).createIndex("k", 4)).cache()
      assertAgrees(idf, source(5000, 1), form)
      // Through Java serialization (a serialized level), as a spilled or replicated block.
      val ser = withForm(form)(source(5000, 1).createIndex("k", 4)).persist(StorageLevel.MEMORY_ONLY_SER)
      assertAgrees(ser, source(5000, 1), s"$form serialized")
      Seq(idf, ser).foreach(_.unpersist(blocking = true))
    }

    test(s"$form: many versions each answer with their own rows, old ones unchanged") {
      val base = withForm(form)(source(3000, 1).createIndex("k", 4)).cache()
      val batches = (2 to 7).map(v => source(if (v % 3 == 0) 2000 else 30, v))
      val versions = batches.scanLeft(base)((parent, rows) => parent.appendRows(rows).cache())
      val plains = batches.scanLeft(source(3000, 1))(_ union _)
      // Every version's scan; its lookups and join for every other version in CI (the forms take
      // turns, the last version always), for every version under `make test-full`.
      versions.zip(plains).zipWithIndex.foreach { case ((v, plain), n) =>
        val i = v.toDF
        assertSameRows(i, plain, s"$form version $n scan")
      }
      versions.zip(plains).zipWithIndex.filter { case (_, n) =>
        n == versions.size - 1 || Fuzz.settingsFor(Forms, n).contains(form)
      }.foreach { case ((v, plain), n) =>
        val i = v.toDF
        Seq(0L, 7L, 350L, 699L).foreach { key =>
          assertSameRows(v.getRows(key), plain.filter(col("k") === key), s"$form version $n key $key")
        }
        assertSameRows(i.join(probe, i("k") === probe("pk"), "left_outer"),
          plain.join(probe, plain("k") === probe("pk"), "left_outer"), s"$form version $n join")
      }
      // A divergent append to an old version sees none of the later versions' rows (nor their
      // dictionary values).
      val extra = source(500, 42)
      assertSameRows(versions(2).appendRows(extra).toDF, plains(2).union(extra), s"$form divergent append")
      assertSameRows(versions(3).toDF, plains(3), s"$form version 3 after the divergent append")
      versions.foreach(_.unpersist(blocking = true))
    }

    test(s"$form: an index on a key of every long-valued type joins and scans as plain DataFrames") {
      val data = AtomicKeyTypes.frame(spark, 400).withColumn("s", expr("concat('v', id % 9)"))
      // Each key type under one form in CI (the forms in turn), under both in `make test-full`.
      val keys = data.columns.filter(_.startsWith("b_")).zipWithIndex
        .collect { case (key, n) if Fuzz.settingsFor(Forms, n).contains(form) => key }
      keys.foreach { key =>
        val idf = withForm(form)(data.createIndex(key, 2)).cache()
        val i = idf.toDF
        val p = data.selectExpr(s"$key AS pk", "id AS pid").filter("pid % 7 = 0")
        assertSameRows(i, data, s"$form key $key scan")
        assertSameRows(i.join(p, i(key) === p("pk")), data.join(p, data(key) === p("pk")), s"$form key $key join")
        idf.unpersist(blocking = true)
      }
    }
  }

  test("compact: a join reading some index columns skips the others (every kind) correctly") {
    val idf = withForm("compact")(source(4000, 5).createIndex("k", 3)).cache()
    val (i, plain) = (idf.toDF, source(4000, 5))
    // Each selection reads columns after skipped ones of every kind (the last column is b_dt).
    Seq(Seq("b_dt"), Seq("text", "b_bin"), Seq("b_bigdec", "b_ntz"), Seq("n"), Seq.empty[String]).foreach { cols =>
      Seq("inner", "left_outer", "full_outer", "left_semi", "left_anti").foreach { jt =>
        val picked = (if (jt.startsWith("left_s") || jt.startsWith("left_a")) cols else cols :+ "pv").map(col)
        assertSameRows(i.join(probe, i("k") === probe("pk"), jt).select(picked: _*),
          plain.join(probe, plain("k") === probe("pk"), jt).select(picked: _*), s"$jt reading ${cols.mkString(",")}")
      }
    }
    assertSameRows(i.join(probe, i("k") === probe("pk")).agg(count("*"), sum("pv")),
      plain.join(probe, plain("k") === probe("pk")).agg(count("*"), sum("pv")), "reading no index column")
    idf.unpersist(blocking = true)
  }

  test("compact rows take less memory than UnsafeRows; a string key or nested column keeps UnsafeRows") {
    val edges = spark.range(200000).selectExpr("id % 50000 AS src", "id AS dst",
      "CAST(id % 1000 AS DOUBLE) / 7 AS weight", "concat('edge-', id % 1000) AS label")
    val compact = withForm("compact")(edges.createIndex("src", 4)).cache()
    val unsafe = withForm("unsafe")(edges.createIndex("src", 4)).cache()
    val (c, u) = (compact.memoryStats, unsafe.memoryStats)
    // 56 bytes per UnsafeRow record; about 20 compact (a 3-4 byte link, 1 null byte, 3-byte
    // src and dst, 8-byte weight, 2-byte label code).
    assert(u("usedBatchBytes") == 56L * 200000, u)
    assert(c("usedBatchBytes") < 22L * 200000, c)
    assert(c("blockManagerBytes") < u("blockManagerBytes") / 2, (c, u))
    assertSameRows(compact.toDF, edges, "edges")
    val byLabel = withForm("compact")(edges.createIndex("label", 2)).cache()
    assert(byLabel.memoryStats("usedBatchBytes") == u("usedBatchBytes"))
    assertSameRows(byLabel.getRows("edge-7"), edges.filter(col("label") === "edge-7"), "string key")
    val nested = edges.withColumn("pair", array(col("dst"), col("src")))
    val byNested = withForm("compact")(nested.createIndex("src", 2)).cache()
    assert(byNested.memoryStats("usedBatchBytes") > u("usedBatchBytes"))
    assertSameRows(byNested.getRows(7L), nested.filter(col("src") === 7L), "nested column")
    Seq(compact, unsafe, byLabel, byNested).foreach(_.unpersist(blocking = true))
  }

  test("a dictionary stops taking values when full: later strings are stored inline") {
    // 30,000 distinct short strings in one partition: more than a dictionary holds.
    val data = spark.range(40000).selectExpr("id % 100 AS k", "concat('x', id % 30000) AS s")
    val idf = withForm("compact")(data.createIndex("k", 1)).cache()
    assertSameRows(idf.toDF, data, "scan")
    assertSameRows(idf.getRows(42L), data.filter(col("k") === 42L), "lookup")
    val more = spark.range(40000, 41000).selectExpr("id % 100 AS k", "concat('y', id) AS s")
    assertSameRows(idf.appendRows(more).getRows(42L), data.union(more).filter(col("k") === 42L), "append")
    idf.unpersist(blocking = true)
  }

  test("the row format setting is checked") {
    val e = intercept[Exception](withForm("columnar")(source(10, 1).createIndex("k")))
    assert(e.getMessage.contains("spark.hyperspace.indexed.rowFormat"), e.getMessage)
  }
}
