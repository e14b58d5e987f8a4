package io.hyperspace.dataskipping

import java.io.File

import io.hyperspace.HyperspaceException
import io.hyperspace.index.dataskipping._
import io.hyperspace.log.States

/** A data skipping index through the covering index's lifecycle: refresh, optimize, delete, restore, vacuum. */
class DataSkippingMaintenanceSuite extends DataSkippingTestSupport {

  private def sketchIds(name: String): Seq[Long] = {
    val entry = logOf(name).latestStable.get
    DataSkippingIndexData.read(spark, entry).select(DataSkippingIndex.FileIdColumn).collect().map(
      _.getLong(0)).sorted.toSeq
  }

  private def sourceIds(name: String): Seq[Long] = logOf(name).latestStable.get.source.files.map(_.id).sorted

  /** ids 10_000 + n * 100 ... in one new file (clustered like the rest). */
  private def appendRows(dir: File, n: Int, partitioned: Boolean = false): Unit = {
    val rows = spark.range(10000 + n * 100, 10000 + n * 100 + 50, 1, 1).selectExpr("id",
      "TIMESTAMP'2025-01-01 00:00:00' AS ts", "'Z' AS cat", "CONCAT('z', CAST(id AS STRING)) AS name",
      "CAST(id % 101 AS INT) AS k", "CAST(NULL AS INT) AS score", "0 AS part")
    val writer = rows.write.mode("append")
    (if (partitioned) writer.partitionBy("part") else writer).parquet(dir.getPath)
  }

  test("incremental refresh indexes appended files into a new version and drops deleted files' rows") {
    val dir = clusteredSource("incr", files = 8, rowsPerFile = 25)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_incr", MinMaxSketch("id")))
    assert(sketchIds("ds_incr") == (0L until 8L))
    deleteFile(dir, 0)
    appendRows(dir, 1)
    val appendedRead = filesRead(sameResult(read(dir).where("id = 10110")))
    assert(appendedRead == 1) // the unsummarized appended file; every summarized one skipped
    val r = hs.refreshIndex("ds_incr", "incremental")
    assert(r.changed && r.appendedFiles == 1 && r.deletedFiles == 1, r)
    assert(sketchIds("ds_incr") == sourceIds("ds_incr"))
    assert(sketchIds("ds_incr") == (1L to 8L))
    val entry = logOf("ds_incr").latestStable.get
    assert(entry.content.files.map(_.dataVersion.get).distinct == Seq(entry.content.dataVersion))
    // A second append without deletes: the old sketch files stay, the new one sits beside them.
    appendRows(dir, 2)
    hs.refreshIndex("ds_incr", "incremental")
    val after = logOf("ds_incr").latestStable.get
    assert(after.content.files.map(_.dataVersion.get).distinct.size == 2)
    assert(sketchIds("ds_incr") == (1L to 9L))
    assert(filesRead(sameResult(read(dir).where("id = 10210"))) == 1)
    assert(filesRead(sameResult(read(dir).where("id = 30"))) == 1)
    assert(hs.refreshIndex("ds_incr", "incremental").changed == false)
  }

  test("quick refresh records changes; full refresh rebuilds; optimize merges sketch files into one") {
    val dir = clusteredSource("quick", files = 6, rowsPerFile = 20, partitioned = true)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_quick", MinMaxSketch("id")))
    assert(logOf("ds_quick").latestStable.get.index.indexedColumns == Seq("MinMax(id)", "Partition(part)"))
    val n = sketchIds("ds_quick").size // some row ranges straddle two partitions: more files than 6
    appendRows(dir, 3, partitioned = true)
    val q = hs.refreshIndex("ds_quick", "quick")
    assert(q.changed && q.appendedFiles == 1)
    assert(sketchIds("ds_quick").size == n) // recorded only
    assert(filesRead(sameResult(read(dir).where("id = 10310"))) == 1)
    assert(filesRead(sameResult(read(dir).where("id = 3"))) == 2) // the summarized match + the appended file
    hs.refreshIndex("ds_quick", "incremental")
    assert(sketchIds("ds_quick").size == n + 1)
    assert(filesRead(sameResult(read(dir).where("id = 3"))) == 1)
    assert(logOf("ds_quick").latestStable.get.content.files.size == 2)
    val o = hs.optimizeIndex("ds_quick", "full")
    assert(o.changed && o.mergedFiles == 2, o)
    assert(logOf("ds_quick").latestStable.get.content.files.size == 1)
    assert(sketchIds("ds_quick").size == n + 1)
    assert(!hs.optimizeIndex("ds_quick", "quick").changed)
    deleteFile(dir, 0)
    val f = hs.refreshIndex("ds_quick", "full")
    assert(f.changed && sketchIds("ds_quick") == (0L until n.toLong))
    assert(filesRead(sameResult(read(dir).where("id = 50 AND part = 1"))) == 1)
  }

  test("delete stops skipping, restore resumes it, vacuum removes the index; mistakes are clear errors") {
    val dir = clusteredSource("life", files = 5, rowsPerFile = 20)
    val config = DataSkippingIndexConfig("ds_life", MinMaxSketch("id"))
    hs.createIndex(read(dir), config)
    val e = intercept[HyperspaceException](hs.createIndex(read(dir), config))
    assert(e.getMessage.contains("already exists"))
    assert(filesRead(sameResult(read(dir).where("id = 3"))) == 1)
    hs.deleteIndex("ds_life")
    assert(filesRead(sameResult(read(dir).where("id = 3"))) == 5)
    hs.restoreIndex("ds_life")
    assert(filesRead(sameResult(read(dir).where("id = 3"))) == 1)
    val row = indexRow("ds_life")
    assert(row.getAs[String]("kind") == DataSkippingIndex.Kind)
    assert(row.getAs[scala.collection.Seq[String]]("indexedColumns").toSeq == Seq("MinMax(id)"))
    assert(row.getAs[Int]("numBuckets") == 0 && row.getAs[Int]("numSourceFiles") == 5)
    hs.deleteIndex("ds_life")
    vacuumNow("ds_life")
    assert(!indexDir("ds_life").exists())
    val bad = intercept[HyperspaceException](
      hs.createIndex(read(dir), DataSkippingIndexConfig("ds_bad", MinMaxSketch("nope"))))
    assert(bad.getMessage.contains("ds_bad") && bad.getMessage.contains("nope"), bad.getMessage)
    val notPartition = intercept[HyperspaceException](
      hs.createIndex(read(dir), DataSkippingIndexConfig("ds_bad", PartitionSketch("id"))))
    assert(notPartition.getMessage.contains("partition"), notPartition.getMessage)
    assert(logOf("ds_bad").latest.forall(_.state == States.DOESNOTEXIST))
  }

  test("autoPartitionSketch=false leaves the partition sketch out") {
    val dir = clusteredSource("nopart", files = 4, rowsPerFile = 10, partitioned = true)
    withConf("spark.hyperspace.index.dataskipping.autoPartitionSketch" -> "false") {
      hs.createIndex(read(dir), DataSkippingIndexConfig("ds_nopart", MinMaxSketch("id")))
    }
    assert(logOf("ds_nopart").latestStable.get.index.indexedColumns == Seq("MinMax(id)"))
  }
}
