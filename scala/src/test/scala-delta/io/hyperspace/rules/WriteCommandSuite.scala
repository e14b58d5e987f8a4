package io.hyperspace.rules

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch}

/**
 * Commands that rewrite an indexed source work with Hyperspace on, and leave the same data as
 * with it off: Delta DELETE / UPDATE / MERGE / OPTIMIZE on a table indexed as files, and
 * INSERT OVERWRITE / CREATE TABLE AS SELECT over an indexed Parquet path. Plain reads of the
 * indexed source are still answered from the index.
 */
class WriteCommandSuite extends RuleTestSupport {

  override protected def withDelta: Boolean = true

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.range(0, 40).selectExpr("CAST(id AS INT) AS k", "CONCAT('new', id) AS v")
      .createOrReplaceTempView("updates")
  }

  /** A Delta table of 4 files (k spread over every file). */
  private def deltaTable(name: String): String = {
    val dir = newDir(name).getAbsolutePath + "/table"
    spark.range(0, 400, 1, 4).selectExpr("id", "CAST(id * 7 % 23 AS INT) AS k", "CONCAT('v', id) AS v")
      .write.format("delta").save(dir)
    dir
  }

  private def deltaRows(dir: String): Seq[String] =
    withHyperspace(on = false)(rowsOf(spark.read.format("delta").load(dir)))

  /**
   * Runs `command` on a table indexed as files with Hyperspace on, and on an identical table
   * with it off: the command succeeds and both tables end up with the same rows.
   */
  private def sameOutcome(label: String, hybrid: Boolean)(command: String => Unit): Unit = {
    val (indexed, plain) = (deltaTable(s"$label-on"), deltaTable(s"$label-off"))
    val name = s"delta_${label}_${if (hybrid) "hybrid" else "exact"}"
    hs.createIndex(spark.read.parquet(indexed), IndexConfig(name, Seq("k"), Seq("v", "id"), lineage = Some(hybrid)))
    hs.createIndex(spark.read.parquet(indexed), DataSkippingIndexConfig(s"${name}_skip", MinMaxSketch("id")))
    // The index serves plain reads of the table's files (how users index a Delta table today).
    val read = sameResult(spark.read.parquet(indexed).where("k = 3").select("v"))
    assert(indexesUsed(read) == Seq(name), read.treeString)
    if (hybrid) {
      spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
      spark.conf.set("spark.hyperspace.index.hybridscan.maxDeletedRatio", "0.99")
      spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", "0.99")
    }
    try {
      withHyperspace(on = false)(command(plain))
      withHyperspace(on = true)(command(indexed))
    } finally {
      Seq("enabled", "maxDeletedRatio", "maxAppendedRatio")
        .foreach(k => spark.conf.unset(s"spark.hyperspace.index.hybridscan.$k"))
    }
    assert(deltaRows(indexed) == deltaRows(plain), s"$label left other rows with Hyperspace on")
  }

  // (command, with hybrid scan on): hybrid scan is the riskier case — with it, a command's
  // selection of some of the table's files could pass for the index's source minus deletions.
  private val commands: Seq[(String, Boolean, String => Unit)] = Seq(
    ("delete", false, t => spark.sql(s"DELETE FROM delta.`$t` WHERE k = 3")),
    ("delete_by_id", true, t => spark.sql(s"DELETE FROM delta.`$t` WHERE id < 150 AND k = 5")),
    ("update", true, t => spark.sql(s"UPDATE delta.`$t` SET v = CONCAT(v, '!') WHERE k = 4")),
    ("merge", true,
      t =>
        spark.sql(
          s"""MERGE INTO delta.`$t` t USING updates s ON t.k = s.k AND t.id < 100
         |WHEN MATCHED AND s.k % 2 = 0 THEN DELETE
         |WHEN MATCHED THEN UPDATE SET v = s.v
         |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (1000 + s.k, s.k, s.v)""".stripMargin)),
    ("optimize", false, t => spark.sql(s"OPTIMIZE delta.`$t` ZORDER BY (k)")))

  for ((label, hybrid, command) <- commands) {
    test(s"Delta $label on a table indexed as files${if (hybrid) " (hybrid scan on)" else ""}") {
      sameOutcome(label, hybrid)(command)
    }
  }

  test("Delta reads are not answered from an index built over the table's files") {
    val table = deltaTable("read")
    hs.createIndex(spark.read.parquet(table), IndexConfig("delta_read", Seq("k"), Seq("v", "id")))
    val plan = sameResult(spark.read.format("delta").load(table).where("k = 3").select("v"))
    assert(indexesUsed(plan).isEmpty, plan.treeString)
  }

  /** A Parquet source with a covering index and a data skipping index on it. */
  private def indexedParquet(name: String): String = {
    val path = writeSource(name, rows = 400, files = 4)
    hs.createIndex(spark.read.parquet(path), IndexConfig(name, Seq("id"), Seq("name", "amount", "day")))
    hs.createIndex(spark.read.parquet(path), DataSkippingIndexConfig(s"${name}_skip", MinMaxSketch("id")))
    path
  }

  private def parquetRows(path: String): Seq[String] =
    withHyperspace(on = false)(rowsOf(spark.read.parquet(path)))

  test("INSERT OVERWRITE of an indexed path from a query over another indexed path") {
    val (target, from) = (indexedParquet("ow_target"), indexedParquet("ow_from"))
    val targetOff = writeSource("ow_target_off", rows = 400, files = 4)
    spark.read.parquet(from).createOrReplaceTempView("ow_from")
    val statement = (t: String) =>
      s"INSERT OVERWRITE DIRECTORY '$t' USING parquet SELECT * FROM ow_from WHERE id < 100"
    withHyperspace(on = false)(spark.sql(statement(targetOff)))
    withHyperspace(on = true)(spark.sql(statement(target)))
    assert(parquetRows(target) == parquetRows(targetOff))
    // The overwritten source is read as it is now, not from its (stale) index.
    val now = sameResult(spark.read.parquet(target).where("id = 5"))
    assert(indexesUsed(now).isEmpty)
  }

  test("INSERT OVERWRITE and CTAS over an indexed catalog table's path") {
    val path = indexedParquet("ctas_src")
    spark.read.parquet(path).createOrReplaceTempView("ctas_src")
    val out = newDir("ctas").getAbsolutePath
    withHyperspace(on = true) {
      spark.sql(s"CREATE TABLE ctas_t USING parquet LOCATION '$out/t' AS SELECT * FROM ctas_src WHERE id < 50")
      spark.sql("INSERT OVERWRITE TABLE ctas_t SELECT * FROM ctas_src WHERE id >= 350")
      spark.sql("INSERT INTO ctas_t SELECT * FROM ctas_src WHERE id = 7")
    }
    val expected = withHyperspace(on = false)(rowsOf(spark.read.parquet(path).where("id >= 350 OR id = 7")))
    assert(withHyperspace(on = false)(rowsOf(spark.table("ctas_t"))) == expected)
  }

  test("a plain query over the indexed source is still rewritten; its write to another path is too") {
    val path = indexedParquet("etl_src")
    val out = newDir("etl").getAbsolutePath + "/out"
    val query = () => spark.read.parquet(path).where("id = 42").select("id", "name")
    assert(indexesUsed(sameResult(query())) == Seq("etl_src"))
    withHyperspace(on = true)(query().write.parquet(out))
    assert(parquetRows(out) == withHyperspace(on = false)(rowsOf(query())))
  }
}
