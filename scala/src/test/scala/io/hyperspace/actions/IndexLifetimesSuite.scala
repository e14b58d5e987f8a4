package io.hyperspace.actions

import java.io.File
import java.nio.file.Files

import io.hyperspace.{Hyperspace, HyperspaceException}
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch}
import io.hyperspace.log.States
import io.hyperspace.dataskipping.DataSkippingTestSupport

/**
 * How long index data lives, and which data a query or a build reads: builds read exactly the
 * files they record, planners never use a cached entry of an index that was deleted and created
 * again, nor an index whose files are gone, and vacuum keeps what queries may still read.
 */
class IndexLifetimesSuite extends DataSkippingTestSupport {

  private def lookup(dir: File) = read(dir).where("id IN (3, 150, 405, 5003)").select("id", "name")

  /**
   * Appends ids `from until from + n` as a file moved into `dir`, as another process or tool
   * would: Spark's own writes to a path re-cache the DataFrames over it, this does not.
   */
  private def appendFromOutside(dir: File, from: Long, n: Int): Unit = {
    val scratch = newDir("outside")
    spark.range(from, from + n, 1, 1).selectExpr(
      "id", "CONCAT('name-', id % 13) AS name", "CAST(id * 1.5 AS DOUBLE) AS amount",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 3 AS INT)) AS day")
      .write.parquet(new File(scratch, "out").getAbsolutePath)
    val file = dataFiles(new File(scratch, "out")).head
    Files.move(file.toPath, new File(dir, s"outside-$from.parquet").toPath)
  }

  test("create over a cached DataFrame builds from a fresh scan of the files it records") {
    val dir = newSource("cached", partitioned = false)
    val df = read(dir)
    df.cache()
    try {
      assert(df.count() == 400)
      appendFromOutside(dir, 5000, 10)
      hs.createIndex(df, IndexConfig("cached_ci", Seq("id"), Seq("name")))
      val entry = logOf("cached_ci").latestStable.get
      assert(entry.source.files.size == 5, "the appended file is recorded")
      assert(readIndexData("cached_ci").count() == 410, "and indexed")
      sameResult(lookup(dir))
    } finally df.unpersist()
    // Once the cache no longer answers queries, the index does: with every row.
    assert(indexesUsed(sameResult(lookup(dir))) == Seq("cached_ci"))
  }

  test("a data skipping index over a cached DataFrame summarizes the files it records") {
    val dir = newSource("cached-ds", partitioned = false)
    val df = read(dir)
    df.cache()
    try {
      assert(df.count() == 400)
      appendFromOutside(dir, 5000, 10)
      hs.createIndex(df, DataSkippingIndexConfig("cached_ds", MinMaxSketch("id")))
      val sketches = readIndexData("cached_ds")
      assert(sketches.count() == 5 && sketches.selectExpr("SUM(_num_rows)").head().getLong(0) == 410)
      sameResult(read(dir).where("id = 5003"))
    } finally df.unpersist()
    assert(filesRead(sameResult(read(dir).where("id = 5003"))) == 1)
  }

  test("delete, vacuum and create under the same name: the new index is used, in every session") {
    val dir = newSource("recreate", partitioned = false)
    val other = spark.newSession()
    other.conf.set("spark.hyperspace.system.path", systemPath.getAbsolutePath)
    Hyperspace.enable(other)
    def otherQuery() = other.read.parquet(dir.getAbsolutePath).where("id IN (3, 150)").select("id", "name")
    val expected = withHyperspace(on = false)(rowsOf(lookup(dir)))
    for (round <- 0 until 3) {
      // Alternate the definition so that a stale entry would be told from the new one.
      val (indexed, included) = if (round % 2 == 0) (Seq("id"), Seq("name")) else (Seq("id"), Seq("name", "amount"))
      hs.createIndex(read(dir), IndexConfig("again", indexed, included))
      val plan = sameResult(lookup(dir))
      assert(indexesUsed(plan) == Seq("again"), s"round $round")
      val used = indexScans(plan).head.relation.asInstanceOf[IndexHadoopFsRelation].entry
      assert(used.index.includedColumns == included, s"round $round: the planner used an earlier incarnation")
      val inOther = otherQuery()
      assert(inOther.collect().map(_.toString).sorted.toSeq == Seq("[150,name-7]", "[3,name-3]"))
      val otherUsed = indexScans(executed(inOther)).map(_.relation.asInstanceOf[IndexHadoopFsRelation].entry)
      assert(otherUsed.map(_.index.includedColumns) == Seq(included), s"round $round: another session")
      hs.deleteIndex("again")
      vacuumNow("again")
      assert(rowsOf(lookup(dir)) == expected)
    }
  }

  test("a data skipping index deleted, vacuumed and created again skips with its new sketches") {
    val dir = newSource("recreate-ds", partitioned = false, files = 4)
    def skipped() = {
      val df = read(dir).where("id = 3")
      withHyperspace(on = true) { df.collect(); df.queryExecution.optimizedPlan }.collectFirst {
        case l: org.apache.spark.sql.execution.datasources.LogicalRelation => l.relation
      }.get.asInstanceOf[org.apache.spark.sql.execution.datasources.HadoopFsRelation].location match {
        case d: io.hyperspace.index.dataskipping.DataSkippingFileIndex => d.stats.filesSkipped
        case _ => 0
      }
    }
    for (round <- 0 until 2) {
      hs.createIndex(read(dir), DataSkippingIndexConfig("ds_again", MinMaxSketch("id")))
      assert(skipped() == dataFiles(dir).size - 1, s"round $round")
      sameResult(read(dir).where("id = 3"))
      hs.deleteIndex("ds_again")
      vacuumNow("ds_again")
      // The source changes while there is no index: a stale entry would not match it.
      append(dir, partitioned = false, 6000 + round * 100, 10)
    }
  }

  test("an index whose data files are gone is not used, and whyNot says why") {
    val dir = newSource("missing-data", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("holes", Seq("id"), Seq("name")))
    assert(indexesUsed(sameResult(lookup(dir))) == Seq("holes"))
    val entry = logOf("holes").latestStable.get
    val victim = new File(new java.net.URI(entry.content.pathOf(entry.content.files.head)))
    assert(victim.delete())
    new File(victim.getParentFile, s".${victim.getName}.crc").delete()
    val plan = sameResult(lookup(dir))
    assert(indexesUsed(plan).isEmpty)
    val why = hs.whyNot(lookup(dir), "holes")
    assert(why.contains("missing") && why.contains(victim.getName), why)
  }

  test("incremental refresh refuses to commit an entry listing index files that are gone") {
    val dir = newSource("missing-refresh", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("holes_inc", Seq("id"), Seq("name")))
    val before = logOf("holes_inc").latestStable.get
    val victim = new File(new java.net.URI(before.content.pathOf(before.content.files.head)))
    assert(victim.delete())
    new File(victim.getParentFile, s".${victim.getName}.crc").delete()
    append(dir, partitioned = false, 5000, 10)
    val e = intercept[HyperspaceException](hs.refreshIndex("holes_inc", "incremental"))
    assert(e.getMessage.contains("holes_inc") && e.getMessage.contains(victim.getName), e.getMessage)
    val after = logOf("holes_inc").latestStable.get
    assert(after.content == before.content && after.state == States.ACTIVE)
    // A full refresh rebuilds it.
    hs.refreshIndex("holes_inc", "full")
    assert(indexesUsed(sameResult(lookup(dir))) == Seq("holes_inc"))
  }

  test("a query planned before a refresh and a vacuum still returns its rows") {
    val dir = newSource("planned", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("planned_ci", Seq("id"), Seq("name")))
    val expected = withHyperspace(on = false)(rowsOf(lookup(dir)))
    withHyperspace(on = true) {
      val planned = lookup(dir)
      planned.queryExecution.executedPlan
      assert(indexesUsed(planned.queryExecution.sparkPlan) == Seq("planned_ci"))
      // A running query: its first rows read, the rest still to come.
      val running = withConf("spark.sql.files.maxPartitionBytes" -> "1m", "spark.sql.files.openCostInBytes" -> "1m") {
        val df = read(dir).where("id >= 0").select("id", "name")
        assert(indexesUsed(df.queryExecution.sparkPlan) == Seq("planned_ci"))
        df.toLocalIterator()
      }
      val first = running.next()
      append(dir, partitioned = false, 5000, 10)
      hs.refreshIndex("planned_ci", "full")
      hs.optimizeIndex("planned_ci", "full")
      hs.vacuumIndex("planned_ci")
      assert(rowsOf(planned) == expected)
      var count = 1
      while (running.hasNext) { running.next(); count += 1 }
      assert(first != null && count == 400)
    }
  }

  test("vacuum never deletes what it cannot account for in the index directory") {
    val dir = newSource("foreign", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("foreign", Seq("id")))
    val notes = new File(indexDir("foreign"), "notes.txt")
    Files.writeString(notes.toPath, "mine")
    val stray = new File(indexDir("foreign"), "v__=9")
    stray.mkdirs()
    Files.writeString(new File(stray, "keep.txt").toPath, "mine too")
    val logNote = new File(indexDir("foreign"), "_hyperspace_log/README")
    Files.writeString(logNote.toPath, "mine as well")
    hs.deleteIndex("foreign")
    vacuumNow("foreign")
    assert(hs.indexes.where("name = 'foreign'").count() == 0)
    assert(notes.exists() && new File(stray, "keep.txt").exists() && logNote.exists())
    assert(!new File(indexDir("foreign"), "v__=0").exists())
    assert(!new File(indexDir("foreign"), "_hyperspace_log/0").exists())
  }

  test("with the system path at the lake root, vacuum leaves the sources beside the index alone") {
    val lake = newDir("lake-root")
    val source = new File(lake, "sales")
    spark.range(0, 100, 1, 2).selectExpr("id", "CAST(id AS STRING) AS s").write.parquet(source.getAbsolutePath)
    val sourceFiles = source.list().toSet
    withConf("spark.hyperspace.system.path" -> lake.getAbsolutePath) {
      hs.createIndex(spark.read.parquet(source.getAbsolutePath), IndexConfig("sales_by_id", Seq("id")))
      val mine = new File(lake, "sales_by_id/report.csv")
      Files.writeString(mine.toPath, "a,b")
      hs.deleteIndex("sales_by_id")
      vacuumNow("sales_by_id")
      assert(mine.exists())
      assert(source.list().toSet == sourceFiles)
      assert(spark.read.parquet(source.getAbsolutePath).count() == 100)
    }
  }
}
