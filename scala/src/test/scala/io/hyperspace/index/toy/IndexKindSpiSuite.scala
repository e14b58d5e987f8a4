package io.hyperspace.index.toy

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.hadoop.fs.Path

import io.hyperspace.HyperspaceException
import io.hyperspace.index.{CatalogVersion, IndexCatalog, IndexKinds}
import io.hyperspace.index.covering.CoveringIndexKind
import io.hyperspace.index.dataskipping.DataSkippingIndexKind
import io.hyperspace.maintenance.MaintenanceTestSupport
import io.hyperspace.rules.ApplyHyperspace

/**
 * The index-kind SPI: a kind registered from the test classpath ([[DistinctValuesKind]], listed
 * in this suite's `META-INF/services`) goes through the whole lifecycle with no code of its own
 * in the core, and an index of a kind nobody registered is listed, not crashed on.
 */
class IndexKindSpiSuite extends MaintenanceTestSupport {

  private def values(name: String): Set[(Long, Long)] = {
    val entry = logOf(name).latestStable.get
    DistinctValuesKind.read(spark, entry, entry.content.files).collect()
      .map(r => (r.getLong(0), r.getLong(1))).toSet
  }

  test("the built-in kinds and the classpath's kinds are registered") {
    // DistinctValues, SplitIndexV1Test and SplitIndexV2Test are the test classpath's (META-INF/services).
    assert(IndexKinds.names == Seq("CoveringIndex", "DataSkippingIndex", "DistinctValues", "SplitIndex",
      "SplitIndexV1Test", "SplitIndexV2Test", "ZOrderCoveringIndex"))
    assert(IndexKinds.find("CoveringIndex").contains(CoveringIndexKind))
    assert(IndexKinds.find("DataSkippingIndex").contains(DataSkippingIndexKind))
    assert(IndexKinds.find("ZOrderCoveringIndex").contains(io.hyperspace.index.zorder.ZOrderCoveringIndex))
    assert(hs.indexKinds == IndexKinds.names)
  }

  test("a kind from the classpath: create, refresh (incremental, full), optimize, list, whyNot, delete, vacuum") {
    val src = new File(newDir("toy"), "v")
    spark.range(0, 200, 1, 4).selectExpr("id % 5 AS v", "CONCAT('n', id) AS name").write.parquet(src.getPath)
    val source = spark.read.parquet(src.getPath)
    hs.createIndex(source, DistinctValuesConfig("toy", "v"))
    def expectedV: Set[(Long, Long)] = {
      val ids = logOf("toy").latestStable.get.source.files.map(f => new Path(f.path).getName -> f.id).toMap
      spark.read.parquet(src.getPath).selectExpr("input_file_name()", "CAST(v AS LONG)").collect()
        .map(r => (ids(new Path(r.getString(0)).getName), r.getLong(1))).toSet
    }
    assert(values("toy") == expectedV && values("toy").nonEmpty)

    val row = hs.indexes.where("name = 'toy'").collect().head
    assert(row.getAs[String]("kind") == "DistinctValues" && row.getAs[String]("state") == "ACTIVE")
    assert(row.getAs[scala.collection.Seq[String]]("indexedColumns").toSeq == Seq("v"))
    assert(row.getAs[Map[String, String]]("additionalStats") == Map("column" -> "v"))
    assert(row.getAs[String]("stateReason") == null)
    assert(indexRow("toy").getAs[String]("kindAbbr") == "DistinctValues")

    // Incremental: the appended file's values are added, a deleted file's rows dropped.
    val deleted = dataFiles(src).head // one of the indexed files (chosen before the append)
    spark.range(1000, 1010, 1, 1).selectExpr("CAST(id % 7 AS BIGINT) AS v", "'x' AS name")
      .write.mode("append").parquet(src.getPath)
    assert(deleted.delete())
    val incr = hs.refreshIndex("toy", "incremental")
    assert(incr.changed && incr.appendedFiles == 1 && incr.deletedFiles == 1, incr)
    assert(values("toy") == expectedV)
    assert(values("toy").map(_._2).contains(6L)) // only the appended file has 6

    spark.range(2000, 2003, 1, 1).selectExpr("CAST(10 AS BIGINT) AS v", "'y' AS name")
      .write.mode("append").parquet(src.getPath)
    assert(hs.refreshIndex("toy", "full").changed)
    assert(values("toy") == expectedV && values("toy").map(_._2).contains(10L))
    assert(logOf("toy").latestStable.get.content.files.size == 1)

    spark.range(3000, 3002, 1, 1).selectExpr("CAST(11 AS BIGINT) AS v", "'z' AS name")
      .write.mode("append").parquet(src.getPath)
    hs.refreshIndex("toy", "incremental")
    assert(logOf("toy").latestStable.get.content.files.size == 2)
    assert(hs.optimizeIndex("toy", "full").changed)
    assert(logOf("toy").latestStable.get.content.files.size == 1)
    assert(values("toy") == expectedV)

    // No rewrite: whyNot says so in the kind's words; explain and the query itself work.
    hs.enable()
    try {
      val query = spark.read.parquet(src.getPath).where("v = 3")
      assert(hs.whyNot(query, "toy") ==
        "toy: a distinct values index only records each file's values; no query reads it")
      assert(hs.explain(query).nonEmpty)
      assert(query.count() == spark.read.parquet(src.getPath).collect().count(_.getLong(0) == 3L))
    } finally hs.disable()

    hs.deleteIndex("toy")
    assert(hs.indexes.where("name = 'toy'").collect().head.getAs[String]("state") == "DELETED")
    vacuumNow("toy")
    assert(hs.indexes.where("name = 'toy'").count() == 0)
    assert(versionDirs("toy").isEmpty)
  }

  test("the Python path: a kind's config as JSON with its kind name") {
    val dir = newSource("toy_json", partitioned = false, rows = 40, files = 2)
    hs.createIndexOfKindFromJson(read(dir), "DistinctValues", """{"name": "toy_json", "column": "name"}""")
    assert(logOf("toy_json").latestStable.get.index.kind == "DistinctValues")
    val e = intercept[HyperspaceException](
      hs.createIndexOfKindFromJson(read(dir), "NoSuchKind", """{"name": "x"}"""))
    assert(e.getMessage.contains("'NoSuchKind'") && e.getMessage.contains("DistinctValues"), e.getMessage)
    // A config given to the wrong kind is refused, naming the index and both kinds.
    val wrong = intercept[HyperspaceException](CoveringIndexKind.define(spark, DistinctValuesConfig("w", "id"),
        io.hyperspace.sources.FileSource.of(read(dir), "w")))
    assert(wrong.getMessage.contains("Index 'w'") && wrong.getMessage.contains("CoveringIndex"), wrong.getMessage)
  }

  test("an index of an unregistered kind is listed as unusable, skipped by queries, and refused by operations") {
    val dir = newSource("alien", partitioned = false, rows = 100, files = 2)
    hs.createIndex(read(dir), io.hyperspace.index.IndexConfig("alien", Seq("id"), Seq("name")))
    val log = logOf("alien")
    val id = log.latestStableId.get
    val file = new File(new Path(log.logPath, id.toString).toUri)
    val json = new String(Files.readAllBytes(file.toPath), UTF_8)
    assert(json.contains("\"CoveringIndex\""))
    Files.write(file.toPath, json.replace("\"CoveringIndex\"", "\"ZOrderIndex\"").getBytes(UTF_8))
    new File(file.getParentFile, s".${file.getName}.crc").delete()
    CatalogVersion.bump(new IndexCatalog(spark).systemPath, spark.sessionState.newHadoopConf())

    val row = hs.indexes.where("name = 'alien'").collect().head
    assert(row.getAs[String]("kind") == "ZOrderIndex")
    val reason = row.getAs[String]("stateReason")
    assert(
      reason.contains("Index 'alien'") && reason.contains("'ZOrderIndex'") &&
        reason.contains("CoveringIndex, DataSkippingIndex, DistinctValues, SplitIndex, SplitIndexV1Test, " +
          "SplitIndexV2Test, ZOrderCoveringIndex"), reason)
    assert(indexRow("alien").getAs[String]("kindAbbr") == "ZOrderIndex")

    val e = intercept[HyperspaceException](hs.refreshIndex("alien", "full"))
    assert(e.getMessage.contains("'ZOrderIndex'") && e.getMessage.contains("registered kinds"), e.getMessage)
    intercept[HyperspaceException](hs.optimizeIndex("alien", "full"))

    hs.enable()
    try {
      val query = read(dir).where("id = 7").select("id", "name")
      assert(query.collect().map(_.getLong(0)).toSeq == Seq(7L))
      assert(ApplyHyperspace.indexesIn(query.queryExecution.optimizedPlan).isEmpty)
      assert(hs.whyNot(query, "alien") == s"alien: $reason")
    } finally hs.disable()
    // Delete and vacuum need no kind: the index can always be removed.
    hs.deleteIndex("alien")
    vacuumNow("alien")
    assert(hs.indexes.where("name = 'alien'").count() == 0)
  }
}
