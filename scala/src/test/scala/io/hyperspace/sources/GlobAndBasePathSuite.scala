package io.hyperspace.sources

import java.io.File

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.col

import io.hyperspace.HyperspaceException
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch}
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * Sources as the original Hyperspace's users read them: glob patterns declared with the
 * `spark.hyperspace.source.globbingPattern` reader option, and partition sub-directories read
 * with `basePath`.
 */
class GlobAndBasePathSuite extends MaintenanceTestSupport {

  private val GlobKey = "spark.hyperspace.source.globbingPattern"

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", "0.9")
  }

  private def writeRows(path: String, from: Long, n: Int = 50, partitioned: Boolean = false): Unit = {
    val df = spark.range(from, from + n, 1, 2).selectExpr("id", "CONCAT('name-', id % 13) AS name",
      "CAST(id % 3 AS STRING) AS part")
    (if (partitioned) df.write.mode("append").partitionBy("part") else df.write.mode("append")).parquet(path)
  }

  private def globRead(glob: String): DataFrame = spark.read.option(GlobKey, glob).parquet(glob.split(",").toSeq: _*)

  test("an index over a glob pattern: queries over the glob use it; refresh picks up new matching directories") {
    val root = newDir("glob").getAbsolutePath
    writeRows(s"$root/1", 0)
    val glob = s"$root/*"
    hs.createIndex(globRead(glob), IndexConfig("glob_idx", Seq("id"), Seq("name")))
    val recorded = logOf("glob_idx").latestStable.get.source.rootPaths
    assert(recorded.size == 1 && recorded.head.endsWith(s"${new File(root).getName}/*"), recorded)
    // Queries read the glob with or without the option.
    for (df <- Seq(globRead(glob), spark.read.parquet(glob))) {
      assert(indexesUsed(sameResult(df.where("id = 7").select("id", "name"))) == Seq("glob_idx"))
    }
    // A new directory matching the pattern: the index is stale until refreshed, then covers it.
    writeRows(s"$root/2", 1000)
    assert(indexesUsed(sameResult(spark.read.parquet(glob).where("id = 1007").select("id", "name"))).isEmpty)
    val r = hs.refreshIndex("glob_idx", "incremental")
    assert(r.changed && r.appendedFiles > 0, r)
    val files = logOf("glob_idx").latestStable.get.source.files.map(_.path)
    assert(files.exists(_.contains(s"$root/1/")) && files.exists(_.contains(s"$root/2/")), files)
    assert(indexesUsed(sameResult(spark.read.parquet(glob).where("id = 1007").select("id", "name"))) == Seq("glob_idx"))
    // Full refresh and hybrid scan see the glob's directories too.
    writeRows(s"$root/3", 2000)
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true") {
      assert(indexesUsed(sameResult(globRead(glob).where("id IN (7, 2007)").select("id", "name"))) == Seq("glob_idx"))
    }
    hs.refreshIndex("glob_idx", "full")
    assert(logOf("glob_idx").latestStable.get.source.files.exists(_.path.contains(s"$root/3/")))
  }

  test("several glob patterns, comma-separated, and a data skipping index over a glob") {
    val root = newDir("globs").getAbsolutePath
    writeRows(s"$root/a/1", 0)
    writeRows(s"$root/b/1", 100)
    val globs = s"$root/a/*,$root/b/*"
    hs.createIndex(globRead(globs), IndexConfig("globs_idx", Seq("id"), Seq("name")))
    hs.createIndex(globRead(globs), DataSkippingIndexConfig("globs_ds", MinMaxSketch("id")))
    writeRows(s"$root/a/2", 1000)
    writeRows(s"$root/b/2", 2000)
    hs.refreshIndex("globs_idx", "incremental")
    hs.refreshIndex("globs_ds", "incremental")
    val files = logOf("globs_idx").latestStable.get.source.files.map(_.path)
    for (d <- Seq("a/1", "a/2", "b/1", "b/2")) assert(files.exists(_.contains(s"$root/$d/")), (d, files))
    def query(columns: String*) =
      spark.read.parquet(s"$root/a/*", s"$root/b/*").where("id = 2007").select(columns.map(col): _*)
    assert(logOf("globs_ds").latestStable.get.source.files.size == files.size)
    // Data skipping reads the one file holding id 2007 for a query the covering index does not cover ...
    val stats = withHyperspace(on = true)(hs.skippingStats(query("id", "name", "part")))
    assert(stats.map(s => (s.indexes.map(_.index), s.filesRead)) == Seq((Seq("globs_ds"), 1)), stats)
    sameResult(query("id", "name", "part"))
    // ... and without it, the covering index serves the query it covers.
    hs.deleteIndex("globs_ds")
    assert(indexesUsed(sameResult(query("id", "name"))) == Seq("globs_idx"))
  }

  test("whyNot finds an index declared over a glob pattern and gives the rule's reasons") {
    val root = newDir("glob-whynot").getAbsolutePath
    writeRows(s"$root/1", 0)
    writeRows(s"$root/2", 100)
    val glob = s"$root/*"
    hs.createIndex(globRead(glob), IndexConfig("glob_why", Seq("id"), Seq("name")))
    for (df <- Seq(globRead(glob), spark.read.parquet(glob))) {
      val why = withHyperspace(on = true)(hs.whyNot(df.where("name = 'name-3'").select("id", "name"), "glob_why"))
      assert(why.contains("no filter on the leading indexed column 'id'"), why)
      val uncovered = withHyperspace(on = true)(hs.whyNot(df.where("id = 3").select("part"), "glob_why"))
      assert(uncovered.contains("part not covered"), uncovered)
    }
    // A new directory matching the pattern: the index is stale, and whyNot says so.
    writeRows(s"$root/3", 1000)
    val stale = withHyperspace(on = true)(hs.whyNot(spark.read.parquet(glob).where("id = 3").select("id"), "glob_why"))
    assert(stale.contains("changed since the index was built"), stale)
  }

  test("a glob pattern option that does not match the paths read is a clear error") {
    val root = newDir("glob-bad").getAbsolutePath
    writeRows(s"$root/2/1", 0)
    val e = intercept[HyperspaceException](
      hs.createIndex(spark.read.option(GlobKey, s"$root/1/*").parquet(s"$root/2/1"),
        IndexConfig("glob_bad", Seq("id"), Seq("name"))))
    assert(e.getMessage.contains(s"$root/1/*") && e.getMessage.contains("glob"), e.getMessage)
    assert(logOf("glob_bad").latestStable.isEmpty)
  }

  test("an index over partition directories read with basePath serves queries over the root") {
    val root = newDir("basepath").getAbsolutePath + "/data"
    writeRows(root, 0, n = 90, partitioned = true)
    val indexed = spark.read.option("basePath", root).parquet(s"$root/part=0", s"$root/part=1", s"$root/part=2")
    hs.createIndex(indexed, IndexConfig("base_idx", Seq("part"), Seq("id")))
    def query(df: DataFrame) = df.where("part = '1'").select("id", "part")
    // The same files read from the root: the index applies, hybrid scan on or off.
    assert(indexesUsed(sameResult(query(spark.read.parquet(root)))) == Seq("base_idx"))
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true") {
      assert(indexesUsed(sameResult(query(spark.read.parquet(root)))) == Seq("base_idx"))
    }
    // A new partition: the root's listing has appended files, served by hybrid scan only.
    spark.range(500, 520).selectExpr("id", "'n' AS name", "'3' AS part")
      .write.mode("append").partitionBy("part").parquet(root)
    assert(indexesUsed(sameResult(query(spark.read.parquet(root)))).isEmpty)
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true") {
      val plan = sameResult(spark.read.parquet(root).where("part IN ('1', '3')").select("id", "part"))
      assert(indexesUsed(plan) == Seq("base_idx"), plan.treeString)
    }
    // Read with basePath as at creation: still the index.
    assert(indexesUsed(sameResult(query(indexed))) == Seq("base_idx"))
  }

  test("basePath is no reason to miss a data skipping index either") {
    val root = newDir("basepath-ds").getAbsolutePath + "/data"
    writeRows(root, 0, n = 90, partitioned = true)
    val indexed = spark.read.option("basePath", root).parquet(s"$root/part=0", s"$root/part=1", s"$root/part=2")
    hs.createIndex(indexed, DataSkippingIndexConfig("base_ds", MinMaxSketch("id")))
    val stats = withHyperspace(on = true)(hs.skippingStats(spark.read.parquet(root).where("id = 4")))
    assert(stats.map(_.indexes.map(_.index)) == Seq(Seq("base_ds")), stats)
    sameResult(spark.read.parquet(root).where("id = 4"))
  }
}
