package io.hyperspace.sources

import scala.util.Random

import org.apache.iceberg.Table
import org.apache.iceberg.spark.Spark3Util
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.functions.col

import io.hyperspace.HyperspaceException
import io.hyperspace.dataskipping.SkippingStatsSupport
import io.hyperspace.index.dataskipping.{BloomFilterSketch, DataSkippingIndexConfig, MinMaxSketch, SkippedFilesIndex, ValueListSketch}
import io.hyperspace.sources.iceberg.IcebergReads

/**
 * Data skipping indexes over Iceberg tables: the files a query reads are the snapshot's files,
 * minus what Iceberg's own pruning (the column bounds its manifests keep) leaves out, minus what
 * the sketches rule out; the statistics report both prunings. Differentially over appends,
 * copy-on-write deletes and updates, compaction, refresh and time travel. Runs only on Spark lines
 * with an Iceberg runtime (build.sbt excludes it elsewhere).
 */
class IcebergDataSkippingSuite extends SkippingStatsSupport {

  override protected def withIceberg: Boolean = true

  // Join pruning of table formats is off by default (docs/configuration.md says why).
  override protected def sessionConfig: Map[String, String] =
    Map("spark.hyperspace.index.dataskipping.joinPruning.tableFormats.enabled" -> "true")

  /**
   * An Iceberg table `ice.db.<name>` of 8 files of 50 rows, ids contiguous per file; `t` (= 10 * id)
   * and `name` follow the id, `k` does not. Iceberg keeps the bounds of `id` and `k` only (`t` and
   * `name`: counts).
   */
  private def table(name: String, mode: String = "copy-on-write"): String = {
    val t = s"ice.db.$name"
    spark.sql(s"CREATE TABLE $t (id BIGINT, t INT, name STRING, k INT) USING iceberg TBLPROPERTIES (" +
      s"'format-version'='2', 'write.delete.mode'='$mode', 'write.update.mode'='$mode', " +
      "'write.metadata.metrics.column.t'='counts', 'write.metadata.metrics.column.name'='counts')")
    append(t, 0, 400, 8)
    t
  }

  private def append(t: String, from: Long, n: Long, files: Int): Unit =
    spark.range(from, from + n, 1, files)
      .selectExpr("id", "CAST(id * 10 AS INT) AS t", "CONCAT('n', id) AS name", "CAST(pmod(hash(id), 23) AS INT) AS k")
      .writeTo(t).append()

  private def iceberg(t: String): Table = Spark3Util.loadIcebergTable(spark, t)

  private def skipping(name: String): DataSkippingIndexConfig =
    DataSkippingIndexConfig(name, MinMaxSketch("t"), BloomFilterSketch("name"), ValueListSketch("k"))

  test("an Iceberg table's scan skips, beyond Iceberg's own pruning, the files the sketches rule out; both reported") {
    val t = table("stats")
    hs.createIndex(spark.table(t), skipping("ids_stats"))

    // Iceberg keeps no bounds of t: it prunes nothing, the index 7 of the 8 files (ids 100-140 are in file 2).
    val r = pruned(spark.table(t).where("t BETWEEN 1000 AND 1400"), "ids_stats")
    assert(r.filesTotal == 8 && r.filesSkipped == 7 && r.filesRead == 1, r.describe)
    assert(r.formatPruning.exists(f => f.format == "iceberg" && f.filesPruned == 0 && f.filesSkippedAfter == 7), r)

    // Iceberg prunes the files of id < 200 by its own bounds; of the other four, the index skips t >= 2500.
    val both = pruned(spark.table(t).where("id >= 200 AND t < 2500"), "ids_stats")
    assert(both.formatPruning.exists(f => f.filesPruned == 4 && f.filesSkippedAfter == 3), both)
    assert(both.filesRead == 1, both.describe)

    // A point lookup through the bloom filter, by path as well as by name.
    assert(pruned(spark.table(t).where("name = 'n123'"), "ids_stats").filesRead == 1)
    val byPath = spark.read.format("iceberg").load(iceberg(t).location())
    assert(pruned(byPath.where("name = 'n123'"), "ids_stats").filesRead == 1)

    // When Iceberg's own pruning already leaves out every file the index would skip, the scan stays Iceberg's.
    val same = spark.table(t).where("id < 100 AND t < 1000")
    assert(statsOf(same).isEmpty)
    assert(hs.whyNot(same, "ids_stats").contains("already leaves out every file"), hs.whyNot(same, "ids_stats"))
  }

  test("join pruning at run time: a scan the sketches pruned while planning is pruned again for the join's keys; " +
    "Iceberg's own scan is left alone") {
    val t = table("join")
    hs.createIndex(spark.table(t), skipping("ids_join"))
    val dim = newDir("join-dim").getAbsolutePath + "/data"
    spark.range(0, 450, 1, 1).selectExpr("CAST(id * 10 AS INT) AS t2", "CONCAT('d', id) AS dname").write.parquet(dim)
    // t = 10 * id, 50 ids per file: 1200 and 1300 are in file 2, 3300 in file 6. Filtered on its
    // names: a filter on t2 would be inferred onto t.
    def joined(big: DataFrame, how: String = "inner") =
      big.join(spark.read.parquet(dim).where("dname IN ('d120', 'd130', 'd330')"), col("t") === col("t2"), how)
    val location = iceberg(t).location()
    def filesRead(plan: SparkPlan) = plan.collect {
      case s: FileSourceScanExec if s.relation.location.rootPaths.exists(_.toString.contains(location)) =>
        s.metrics("numFiles").value
    }.sum
    def joinPruned(plan: SparkPlan) = plan.collectFirst {
      case s: FileSourceScanExec
          if s.relation.location.isInstanceOf[SkippedFilesIndex] &&
            s.relation.location.asInstanceOf[SkippedFilesIndex].forJoin =>
        s.relation.location.asInstanceOf[SkippedFilesIndex].stats
    }

    // The sketches prune t < 3000 while planning (files 6 and 7 left out), Iceberg's bounds of id
    // >= 100 files 0 and 1; at run time the scan is pruned again from the snapshot's files: file 2.
    val planned = sameResult(joined(spark.table(t).where("id >= 100 AND t < 3000")))
    val stats = joinPruned(planned).getOrElse(fail(s"not pruned\n${planned.treeString}"))
    assert(filesRead(planned) == 1, planned.treeString)
    // Spark infers t2 < 3000 onto the small side from the join's equality: 3300 is not broadcast.
    assert(stats.filter.startsWith("t IN (the 2 join key(s) of the other side)"), stats.filter)
    assert(stats.formatPruning.exists(f => f.format == "iceberg" && f.filesPruned == 2 && f.filesSkippedAfter == 5),
      stats)
    // Not for a join that keeps the big side's unmatched rows: the planning's pruning only.
    val outer = sameResult(joined(spark.table(t).where("id >= 100 AND t < 3000"), "left_outer"))
    assert(joinPruned(outer).isEmpty && filesRead(outer) == 4, outer.treeString)

    // A scan no index pruned while planning is Iceberg's own V2 scan at run time: left alone, and
    // whyNot does not promise a run-time pruning.
    val whole = sameResult(joined(spark.table(t)))
    assert(joinPruned(whole).isEmpty && whole.collect { case s: BatchScanExec => s }.nonEmpty, whole.treeString)
    val why = withHyperspace(on = true)(hs.whyNot(joined(spark.table(t)), "ids_join"))
    assert(!why.contains("decides at run time"), why)
  }

  test("a MinMax sketch over a column Iceberg keeps bounds for is refused; other sketches on it are not") {
    val t = table("refuse")
    val e = intercept[HyperspaceException](
      hs.createIndex(spark.table(t), DataSkippingIndexConfig("ids_refuse", MinMaxSketch("id"), MinMaxSketch("t"))))
    assert(e.getMessage.contains("ids_refuse") && e.getMessage.contains("'id'"), e.getMessage)
    hs.createIndex(spark.table(t), DataSkippingIndexConfig("ids_bloom_id", BloomFilterSketch("id")))
    sameResult(spark.table(t).where("id = 77"))
  }

  test("a table with delete files is not pruned through its files: deleted rows stay deleted") {
    val t = table("mor", mode = "merge-on-read")
    hs.createIndex(spark.table(t), skipping("ids_mor"))
    // Delete files on one data file (ids 100-149): the index still summarizes the others, so its
    // sketches would skip them, but no file of this snapshot may be read as plain Parquet.
    spark.sql(s"DELETE FROM $t WHERE t % 30 = 0 AND t BETWEEN 1200 AND 1300")
    assert(spark.sql(s"SELECT count(*) FROM $t.delete_files").head().getLong(0) > 0)
    val q = spark.table(t).where("t BETWEEN 1200 AND 1300")
    assert(statsOf(q).isEmpty)
    assert(hs.whyNot(q, "ids_mor").contains("delete files"), hs.whyNot(q, "ids_mor"))
    withHyperspace(on = true)(assert(q.where("t IN (1200, 1290)").count() == 0))
  }

  test("refresh of a data skipping index reads the Iceberg manifests of the change only") {
    val t = table("cost")
    hs.createIndex(spark.table(t), skipping("ids_cost"))
    append(t, 1000, 50, 1)
    val before = IcebergReads.dataFilesRead
    val result = hs.refreshIndex("ids_cost", "incremental")
    assert(IcebergReads.dataFilesRead - before == 1, result.message)
    assert(result.message.contains("from 1 commit(s) of the iceberg log"), result.message)
    // The appended file (ids 1000-1049) is summarized: a filter outside it skips it too.
    val r = pruned(spark.table(t).where("t BETWEEN 1000 AND 1400"), "ids_cost")
    assert(r.filesTotal == 9 && r.filesRead == 1, r.describe)
  }

  test("differential: generated filters over an Iceberg table through appends, deletes, updates, compaction, " +
    "refresh and time travel") {
    val t = table("diff")
    hs.createIndex(spark.table(t), skipping("ids_diff"))
    val random = new Random(16)
    def filter(): String = random.nextInt(6) match {
      case 0 => val lo = random.nextInt(5000); s"t BETWEEN $lo AND ${lo + random.nextInt(800)}"
      case 1 => s"name = 'n${random.nextInt(500)}'"
      case 2 => s"name IN ('n${random.nextInt(500)}', 'n${random.nextInt(500)}') OR t > ${random.nextInt(6000)}"
      case 3 => s"id >= ${random.nextInt(400)} AND t < ${random.nextInt(5000)} AND k <> ${random.nextInt(23)}"
      case 4 => s"k = ${random.nextInt(23)} AND t < ${random.nextInt(5000)}"
      case _ => s"NOT (t >= ${random.nextInt(4000)}) AND name LIKE 'n1%'"
    }
    var used = 0
    var skipped = 0
    def check(df: => DataFrame): Unit = (1 to 3).foreach { _ =>
      val f = filter()
      val stats = statsOf(df.where(f).select("id", "t", "name"))
      used += stats.size
      skipped += stats.map(_.filesSkipped).sum
      stats.foreach(s => assert(s.formatPruning.exists(_.format == "iceberg"), s"$f: ${s.describe}"))
    }
    check(spark.table(t))
    val snapshots = scala.collection.mutable.ArrayBuffer(iceberg(t).currentSnapshot().snapshotId())
    val steps: Seq[() => Unit] = Seq(
      () => append(t, 400, 100, 2),
      () => spark.sql(s"DELETE FROM $t WHERE k = 3 AND id < 250"),
      () => spark.sql(s"UPDATE $t SET name = CONCAT(name, '!') WHERE id % 9 = 0 AND id >= 300"),
      () => hs.refreshIndex("ids_diff", "incremental"),
      () => spark.sql(s"DELETE FROM $t WHERE t BETWEEN 500 AND 800"),
      () =>
        spark.sql("CALL ice.system.rewrite_data_files(table => 'db.diff', options => map('rewrite-all', 'true'))")
          .collect(),
      () => hs.refreshIndex("ids_diff", "incremental"),
      () => append(t, 600, 50, 1),
      () => hs.refreshIndex("ids_diff", "quick"))
    steps.foreach { step =>
      withHyperspace(on = true)(step())
      snapshots += iceberg(t).currentSnapshot().snapshotId()
      check(spark.table(t))
    }
    snapshots.distinct.foreach(id => check(spark.read.option("versionAsOf", id.toString).table(t)))
    assert(used > 5 && skipped > 0, s"the index pruned only $used of the queries, skipping $skipped files")
  }
}
