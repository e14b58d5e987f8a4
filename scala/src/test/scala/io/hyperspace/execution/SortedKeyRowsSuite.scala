package io.hyperspace.execution

import org.apache.spark.sql.DataFrame

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Lookups of known keys of a covering index's sorted column, read in the driver: only the rows
 * holding the keys are read (located in the key's pages first), with Spark's rows, for keys of
 * every type located and for the cases that fall back to Spark's reader.
 */
class SortedKeyRowsSuite extends RuleTestSupport {

  private val heavyKey = 42L

  /**
   * 12,000 rows: `id` (NULL every 997th row; `heavyKey` MaxLocatedRows + 500 times), an int `k`, a
   * string `s`, a timestamp `t` (a type not located), and `name`/`amount` to return.
   */
  private lazy val source: String = {
    val path = newDir("sorted-key-rows").getAbsolutePath + "/data"
    val heavy = SortedKeyRows.MaxLocatedRows + 500
    spark.range(0, 12000, 1, 4).selectExpr(
      s"CASE WHEN id % 997 = 5 THEN NULL WHEN id < $heavy THEN $heavyKey ELSE id END AS id",
      "CAST(id % 3000 AS INT) AS k",
      "CONCAT('key-', id % 2500) AS s",
      "TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id % 600) AS t",
      "CONCAT('name-', id) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    // Pages of 100 rows: each index file holds many, so a key's rows are a few of several pages.
    withConf("parquet.page.row.count.limit" -> "100", "spark.hyperspace.index.numBuckets" -> "4") {
      for (column <- Seq("id", "k", "s", "t")) {
        hs.createIndex(spark.read.parquet(source), IndexConfig(s"by_$column", Seq(column), Seq("name", "amount")))
      }
    }
  }

  private def query(where: String): DataFrame = spark.read.parquet(source).where(where).select("name", "amount")

  /** The driver read of `where`'s lookup, checked against Spark's rows: (rows read, row groups read by pages). */
  private def read(where: String, index: String): (Long, Long) = {
    val plan = sameResult(query(where))
    assert(indexesUsed(plan) == Seq(index), plan.treeString)
    val Seq(driverRead) = driverReads(plan)
    (driverRead.metrics("rowsRead").value, driverRead.metrics("rowGroupsByPages").value)
  }

  test("a lookup of known keys reads only their rows, for long, int and string keys") {
    for ((where, index, rows) <- Seq(
        ("id = 7777", "by_id", 1),
        ("id IN (7777, 9000, 11999, -3)", "by_id", 3),
        ("id = 7777 AND amount > 0", "by_id", 1),
        ("id <=> 9000", "by_id", 1),
        ("k = 17", "by_k", 4),
        ("k IN (17, 2999)", "by_k", 8),
        ("s = 'key-101'", "by_s", 5),
        ("s IN ('key-101', 'key-2499', 'nothing')", "by_s", 9))) {
      val (rowsRead, byPages) = read(where, index)
      assert(rowsRead == rows && byPages > 0, where)
    }
  }

  test("the key's pages are narrowed by the page index only where Spark's reader narrows them") {
    def keysDecoded(): Long = {
      val plan = sameResult(query("id = 7777"))
      val Seq(driverRead) = driverReads(plan)
      assert(driverRead.metrics("rowsRead").value == 1, plan.treeString)
      driverRead.metrics("keysDecoded").value
    }
    val narrowed = keysDecoded()
    // The key's bucket holds about 3,000 rows in pages of 100: a few pages' keys, not all of them.
    assert(narrowed > 0 && narrowed <= 300, narrowed)
    for (off <- Seq("spark.sql.parquet.filterPushdown" -> "false", "parquet.filter.columnindex.enabled" -> "false")) {
      withConf(off) {
        val all = keysDecoded()
        assert(all > 1000 && all > 4 * narrowed, s"$off: $all against $narrowed")
      }
    }
  }

  test("a key with no rows reads none") {
    assert(read("id = 5", "by_id") == (0L, 0L)) // id 5 is a NULL row
    assert(read("k = -1", "by_k")._1 == 0L)
  }

  test("Spark's reader reads a key of thousands of rows, a range, and a key of a type not located") {
    val (heavyRows, heavyPages) = read(s"id = $heavyKey", "by_id")
    assert(heavyRows > SortedKeyRows.MaxLocatedRows && heavyPages == 0)
    // A range on the sorted column: Spark's reader with the page index, more rows than match.
    val (rangeRows, rangePages) = read("k BETWEEN 100 AND 101", "by_k")
    assert(rangeRows > 8 && rangePages == 0)
    // `<=> NULL` is planned as IS NULL, which pins no bucket.
    val (nullRows, nullPages) = read("id <=> NULL", "by_id")
    assert(nullRows >= 12 && nullPages == 0)
    val (timeRows, timePages) = read("t = TIMESTAMP'2024-01-01 00:01:40'", "by_t")
    assert(timeRows > 20 && timePages == 0)
  }
}
