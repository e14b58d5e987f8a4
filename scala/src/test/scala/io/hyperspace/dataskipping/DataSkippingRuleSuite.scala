package io.hyperspace.dataskipping

import org.apache.spark.sql.DataFrame

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping._

/** The data skipping rule end to end: pruning, formats, partitions, statistics, explain, covering indexes. */
class DataSkippingRuleSuite extends DataSkippingTestSupport {

  private val sketches = Seq(MinMaxSketch("id"), MinMaxSketch("ts"), ValueListSketch("cat"),
    BloomFilterSketch("name"), PrefixSketch("name", 5), SuffixSketch("name", 4))

  /** Runs `query` with and without Hyperspace (equal rows) and returns the files it read with it. */
  private def filesReadBy(query: => DataFrame): Long = filesRead(sameResult(query))

  test("a selective predicate on clustered data reads only the files that can match (scan metric)") {
    val dir = clusteredSource("metric")
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_metric", sketches.head, sketches.tail: _*))
    // 40 files of 50 contiguous ids: each predicate below matches rows of exactly one or two files.
    assert(filesReadBy(read(dir).where("id = 1234")) == 1)
    assert(filesReadBy(read(dir).where("id BETWEEN 120 AND 180")) == 2)
    assert(filesReadBy(read(dir).where("ts >= TIMESTAMP'2024-01-01 00:00:00' + INTERVAL 1990 MINUTES")) == 1)
    assert(filesReadBy(read(dir).where("name LIKE 'u0007-%'")) == 1)
    assert(filesReadBy(read(dir).where("name = 'u0033-2.org'")) == 1)
    assert(filesReadBy(read(dir).where("name IN ('u0001-1.org', 'u0039-0.com')")) == 2)
    // k is spread over every file: nothing to skip, every file read.
    assert(filesReadBy(read(dir).where("k = 5")) == 40)
    // Suffix alone cannot tell files apart here, but combined with the prefix it can.
    assert(filesReadBy(read(dir).where("name LIKE 'u0002%' AND name LIKE '%.com'")) == 1)
    val off = read(dir).where("id = 1234")
    withHyperspace(on = false) {
      off.collect()
      assert(filesRead(executed(off)) == 40)
    }
  }

  test("statistics: last query, per query and in explain, naming the index and sketches") {
    val dir = clusteredSource("stats")
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_stats", MinMaxSketch("id"), ValueListSketch("cat")))
    withHyperspace(on = true) {
      val seen = new java.util.concurrent.ConcurrentLinkedQueue[RelationSkippingStats]()
      val listener = new DataSkippingListener {
        override def onQuery(f: String, qe: org.apache.spark.sql.execution.QueryExecution,
            stats: Seq[RelationSkippingStats]): Unit = stats.foreach(seen.add)
      }
      // The index build's queries are delivered first, to no one.
      org.apache.spark.sql.hyperspace.SparkInternals.waitForListenerEvents(spark)
      spark.listenerManager.register(listener)
      try {
        read(dir).where("id < 100 AND cat = 'A'").collect()
        val last = hs.lastQuerySkippingStats
        assert(last.size == 1)
        val s = last.head
        assert((s.filesTotal, s.filesSkipped, s.filesRead) == (40, 38, 2))
        assert(s.bytesSkipped > 0 && s.bytesRead + s.bytesSkipped == s.bytesTotal)
        assert(s.relation.contains(dir.getName))
        assert(s.indexes.map(i => (i.index, i.filesSkipped)) == Seq("ds_stats" -> 38))
        val bySketch = s.indexes.head.sketches.map(k => k.sketch -> k.filesSkipped).toMap
        assert(bySketch("MinMax(id)") == 38)
        // cat 'A' is in the first 4 files
        assert(bySketch.collect { case (k, v) if k.startsWith("ValueList(cat") => v }.toSeq == Seq(36), bySketch)
        assert(seen.size() == 1) // lastQuerySkippingStats waited for the listener events
        // A query no index prunes resets the last statistics.
        spark.range(3).collect()
        assert(hs.lastQuerySkippingStats.isEmpty)
        // Per DataFrame, without running it.
        assert(hs.skippingStats(read(dir).where("cat = 'J'")).map(_.filesSkipped) == Seq(36))
        val text = hs.explain(read(dir).where("id < 100 AND cat = 'A'"))
        assert(text.contains("ds_stats"), text)
        assert(text.contains("Data skipping: ") && text.contains("skipped 38 of 40 files"), text)
        assert(RelationSkippingStats.toJson(last).contains("\"filesRead\":2"))
      } finally spark.listenerManager.unregister(listener)
    }
  }

  // Every format, partitioned or not, lean: parquet both ways, the others one way each.
  for ((format, partitioned) <- Seq("parquet" -> false, "parquet" -> true, "orc" -> true, "csv" -> false,
      "json" -> true)) {
    test(s"$format source${if (partitioned) ", hive-partitioned (partition sketch added)" else ""}: " +
      "pruned scans return the same rows") {
      val dir = clusteredSource(s"fmt-$format-$partitioned", files = 12, rowsPerFile = 40, format = format,
        partitioned = partitioned)
      val name = s"ds_${format}_$partitioned"
      hs.createIndex(readAs(dir, format), DataSkippingIndexConfig(name, MinMaxSketch("id"), PrefixSketch("name", 5)))
      val entry = logOf(name).latestStable.get
      assert(entry.index.indexedColumns.exists(_.startsWith("Partition(")) == partitioned, entry.index.indexedColumns)
      val total = readAs(dir, format).inputFiles.length
      val point = sameResult(readAs(dir, format).where("id = 77"))
      assert(filesRead(point) == 1, point.treeString)
      assert(filesRead(sameResult(readAs(dir, format).where("name LIKE 'u0011%'"))) == 1)
      assert(filesRead(sameResult(readAs(dir, format).where("id > 300 OR id < 5").select("name"))) < total)
      if (partitioned) {
        // The partition sketch skips by the partition value; Spark's own partition pruning agrees.
        val q = readAs(dir, format).where("part = 2 AND k > 3")
        assert(filesRead(sameResult(q)) <= total / 4 + 1)
        val stats = withHyperspace(on = true)(hs.skippingStats(readAs(dir, format).where("part = 2 AND k > 3")))
        assert(stats.map(_.filesSkipped) == Seq(total * 3 / 4))
      }
    }
  }

  test("appended files are read, deleted files disappear, rewritten files are read (no refresh)") {
    val dir = clusteredSource("changes", files = 10, rowsPerFile = 40)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_changes", MinMaxSketch("id")))
    deleteFile(dir, 0) // ids 0..39
    rewriteFile(dir, 0) // ids 40..79, now only the even ones: a file the index has not summarized
    spark.range(5000, 5040, 1, 1).selectExpr("id", "TIMESTAMP'2024-01-01 00:00:00' AS ts", "'Z' AS cat",
      "'x' AS name", "1 AS k", "CAST(NULL AS INT) AS score", "0 AS part").write.mode("append").parquet(dir.getPath)
    // Read: the appended and the rewritten file (no sketch rows); the 8 summarized ones are skipped.
    val plan = sameResult(read(dir).where("id = 5010 OR id = 5"))
    assert(filesRead(plan) == 2)
    val stats = withHyperspace(on = true)(hs.skippingStats(read(dir).where("id = 5010 OR id = 5")).head)
    assert((stats.filesTotal, stats.filesSkipped) == (10, 8))
    assert(filesRead(sameResult(read(dir).where("id = 46"))) == 2)
    assert(filesRead(sameResult(read(dir).where("id = 86"))) == 3)
  }

  test("with a covering index: data skipping is kept unless the covering index reads fewer bytes") {
    val dir = clusteredSource("compose", files = 30, rowsPerFile = 60)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_compose", MinMaxSketch("id"), MinMaxSketch("k")))
    hs.createIndex(read(dir), IndexConfig("cov_k", Seq("k"), Seq("id")))
    hs.createIndex(read(dir), IndexConfig("cov_id", Seq("id"), Seq("ts", "cat", "name", "k", "score", "part")))
    // A range on id: data skipping reads 1 of 30 source files; cov_id would read all its data.
    val range = sameResult(read(dir).where("id BETWEEN 100 AND 110"))
    assert(indexesUsed(range).isEmpty && filesRead(range) == 1, range.treeString)
    // k is not clustered: data skipping prunes nothing, the (smaller) covering index wins.
    val byK = sameResult(read(dir).where("k = 7").select("id"))
    assert(indexesUsed(byK) == Seq("cov_k"), byK.treeString)
    // Joins keep preferring covering indexes (no shuffle); the result is the same.
    sameResult(read(dir).where("id < 200").select("id", "k").join(read(dir).select("id", "cat"), "id"))
    hs.deleteIndex("cov_id"); hs.deleteIndex("cov_k")
  }

  test("an index whose sketch table is gone is ignored; the query still runs, reading every file") {
    val dir = clusteredSource("broken", files = 6, rowsPerFile = 10)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_broken", MinMaxSketch("id")))
    org.apache.commons.io.FileUtils.deleteDirectory(
      indexDir("ds_broken").listFiles().find(_.getName.startsWith("v__=")).get)
    assert(filesRead(sameResult(read(dir).where("id = 3"))) == 6)
    hs.deleteIndex("ds_broken")
  }
}
