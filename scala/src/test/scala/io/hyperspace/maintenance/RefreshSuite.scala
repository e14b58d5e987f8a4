package io.hyperspace.maintenance

import java.io.File

import io.hyperspace.HyperspaceException
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.States
import io.hyperspace.testing.Fuzz

class RefreshSuite extends MaintenanceTestSupport {

  // The joins below check that a refreshed index serves a join; their small dimension side would
  // otherwise be broadcast, and joins Spark broadcasts are left to Spark (BroadcastJoinSuite).
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
  }

  private def create(name: String, dir: File, lineage: Boolean = true, buckets: Option[Int] = None): Unit =
    hs.createIndex(read(dir),
      IndexConfig(name, Seq("id"), Seq("name", "day"), numBuckets = buckets, lineage = Some(lineage)))

  /**
   * Queries over the source compared with and without Hyperspace (hybrid scan off, so only an
   * up-to-date — or quick-refreshed — index can be used); asserts the index served the filter.
   */
  private def checkQueries(name: String, dir: File, ids: Seq[Long]): Unit = {
    val dim = spark.range(0, 2000, 7).selectExpr("id", "id % 5 AS tag")
    val lookup = sameResult(read(dir).where(s"id = ${ids.head}").select("id", "name", "day"))
    assert(indexesUsed(lookup) == Seq(name), lookup.treeString)
    sameResult(read(dir).where(s"id IN (${ids.mkString(", ")})").select("id", "name", "day"))
    sameResult(read(dir).where("id < 120").select("name", "day"))
    val join = sameResult(read(dir).select("id", "name", "day").join(dim, "id"))
    assert(indexesUsed(join) == Seq(name), join.treeString)
    sameResult(read(dir).groupBy("id").count())
  }

  private val changes: Seq[(String, (File, Boolean) => Unit)] = Seq(
    "appends" -> ((dir, p) => { append(dir, p, 1000); append(dir, p, 2000, 30) }),
    "deletes" -> ((dir, _) => deleteFile(dir)),
    "rewrites" -> ((dir, _) => rewriteFile(dir)),
    "a mix" -> ((dir, p) => { append(dir, p, 1000); deleteFile(dir, 0); rewriteFile(dir, 1) }))

  // Each mode after each change. In CI over one layout each, chosen so that every mode and every
  // change meets both (partitioned when the mode's and the change's positions add up to an even
  // number); both layouts under `make test-full`.
  private def layouts(modeAt: Int, changeAt: Int): Seq[Boolean] =
    if (Fuzz.allSettings) Seq(false, true) else Seq((modeAt + changeAt) % 2 == 0)

  for ((mode, modeAt) <- Seq("full", "incremental", "quick").zipWithIndex;
    ((what, change), changeAt) <- changes.zipWithIndex;
    partitioned <- layouts(modeAt, changeAt)) {
    test(s"$mode refresh after $what (${if (partitioned) "partitioned" else "unpartitioned"}): " +
      "queries use the index and equal the source") {
      val name = s"r-$mode-${what.replace(' ', '-')}-$partitioned"
      val dir = newSource(name, partitioned)
      create(name, dir)
      change(dir, partitioned)
      val result = hs.refreshIndex(name, mode)
      assert(result.changed, result.message)
      assert(result.message.contains(s"($mode)"), result.message)
      val entry = logOf(name).latestStable.get
      assert(entry.state == States.ACTIVE && entry.operation == "REFRESH")
      assert(entry.source.hasPendingChanges == (mode == "quick"))
      checkQueries(name, dir, Seq(3L, 1005L, 2010L, 120L, 399L))
      // The index's rows are the source's rows (quick refresh leaves the data as it was).
      if (mode != "quick") {
        val indexed = readIndexData(name).select("id", "name", "day")
        assert(rowsOf(indexed) == rowsOf(read(dir).select("id", "name", "day")))
      }
    }
  }

  test("an unchanged source is a no-op that says so, in every mode") {
    val dir = newSource("noop", partitioned = false)
    create("noop", dir)
    val before = entries("noop")
    for (mode <- Seq("full", "incremental", "quick")) {
      val result = hs.refreshIndex("noop", mode)
      assert(!result.changed)
      assert(result.message.contains("up to date"), result.message)
    }
    assert(entries("noop") == before, "a no-op writes nothing")
    assert(versionDirs("noop") == Seq("v__=0"))
  }

  test("incremental refresh of appends writes only the new rows, beside the untouched files") {
    val dir = newSource("inc-append", partitioned = false)
    create("inc-append", dir)
    val v0 = logOf("inc-append").latestStable.get.content.files
    append(dir, partitioned = false, 5000, 10)
    hs.refreshIndex("inc-append", "incremental")
    val entry = logOf("inc-append").latestStable.get
    assert(v0.forall(entry.content.files.contains), "the first version's files are still used")
    val added = entry.content.files.filterNot(v0.contains)
    assert(added.nonEmpty && added.forall(_.path.startsWith("v__=1/")), added)
    assert(spark.read.parquet(added.map(entry.content.pathOf): _*).count() == 10)
    assert(entry.source.files.map(_.id).distinct.size == entry.source.files.size, "file ids are unique")
    // Vacuum keeps both versions: the entry reads from both.
    hs.vacuumIndex("inc-append")
    assert(versionDirs("inc-append") == Seq("v__=0", "v__=1"))
    assert(readIndexData("inc-append").count() == 410)
  }

  test("incremental refresh drops deleted files' rows from the index data, keeping lineage ids stable") {
    val dir = newSource("inc-delete", partitioned = false)
    create("inc-delete", dir)
    val before = logOf("inc-delete").latestStable.get.source.files
    val gone = deleteFile(dir, 2)
    hs.refreshIndex("inc-delete", "incremental")
    val after = logOf("inc-delete").latestStable.get.source.files
    assert(after.toSet == before.toSet - before(2), "the other files keep their ids")
    val ids = readIndexData("inc-delete").select("id").collect().map(_.getLong(0)).toSet
    assert(ids.intersect(gone).isEmpty && ids.size == 400 - gone.size)
  }

  test("deletes without lineage: incremental and quick fail saying what to do; full works") {
    val dir = newSource("no-lineage", partitioned = false)
    create("no-lineage", dir, lineage = false)
    deleteFile(dir)
    for (mode <- Seq("incremental", "quick")) {
      val e = intercept[HyperspaceException](hs.refreshIndex("no-lineage", mode))
      assert(e.getMessage.contains("'no-lineage'") && e.getMessage.contains("lineage") &&
          e.getMessage.contains("full"), e.getMessage)
    }
    assert(states("no-lineage") == Seq(States.CREATING, States.ACTIVE), "a refused refresh writes nothing")
    assert(hs.refreshIndex("no-lineage", "full").changed)
    checkQueries("no-lineage", dir, Seq(150L, 200L))
  }

  test("appends need no lineage for incremental refresh") {
    val dir = newSource("no-lineage-append", partitioned = true)
    create("no-lineage-append", dir, lineage = false)
    append(dir, partitioned = true, 700)
    assert(hs.refreshIndex("no-lineage-append", "incremental").changed)
    checkQueries("no-lineage-append", dir, Seq(701L, 5L))
  }

  test("refresh uses the index's stored settings, not the session's") {
    val dir = newSource("stored", partitioned = false)
    create("stored", dir, buckets = Some(3))
    append(dir, partitioned = false, 900)
    withConf("spark.hyperspace.index.numBuckets" -> "7", "spark.hyperspace.index.lineage.enabled" -> "false") {
      hs.refreshIndex("stored", "full")
    }
    val entry = logOf("stored").latestStable.get
    assert(entry.index.numBuckets == 3 && entry.index.lineage)
    assert(entry.content.files.flatMap(io.hyperspace.index.covering.CoveringIndex.bucketOf).toSet.subsetOf(Set(0, 1,
          2)))
  }

  test("a rewritten file (same path, new size and time) is a delete plus an append") {
    val dir = newSource("time-aware", partitioned = false)
    create("time-aware", dir)
    rewriteFile(dir, 0)
    val result = hs.refreshIndex("time-aware", "quick")
    assert(result.appendedFiles == 1 && result.deletedFiles == 1, result)
    val entry = logOf("time-aware").latestStable.get
    assert(entry.source.appendedFiles.map(_.path) == entry.source.deletedFiles.map(_.path))
  }

  test("indexes() shows the source files appended and deleted since the index data was built") {
    val dir = newSource("pending", partitioned = false)
    create("pending", dir)
    def pending = {
      val row = hs.indexes.where("name = 'pending'").select("appendedFiles", "deletedFiles").head()
      (row.getInt(0), row.getInt(1))
    }
    assert(pending == (0, 0))
    deleteFile(dir, 0)
    append(dir, partitioned = false, 3000)
    assert(pending == (1, 1))
    hs.refreshIndex("pending", "quick")
    assert(pending == (1, 1), "a quick refresh only records the changes")
    hs.refreshIndex("pending", "incremental")
    assert(pending == (0, 0))
  }

  test("bad modes and missing indexes give clear errors") {
    val dir = newSource("modes", partitioned = false)
    create("modes", dir)
    val e = intercept[HyperspaceException](hs.refreshIndex("modes", "fast"))
    assert(e.getMessage.contains("'modes'") && e.getMessage.contains("full, incremental, quick"))
    assert(hs.refreshIndex("modes", "INCREMENTAL").mode == "incremental")
    intercept[io.hyperspace.HyperspaceIndexNotFoundException](hs.refreshIndex("nope", "full"))
    hs.deleteIndex("modes")
    val deleted = intercept[HyperspaceException](hs.refreshIndex("modes", "full"))
    assert(deleted.getMessage.contains("DELETED") && deleted.getMessage.contains("restoreIndex"))
  }

  test("a source that can no longer be read fails the refresh naming the index, writing nothing") {
    val dir = newSource("gone", partitioned = false)
    create("gone", dir)
    org.apache.commons.io.FileUtils.deleteDirectory(dir)
    val e = intercept[HyperspaceException](hs.refreshIndex("gone", "full"))
    assert(e.getMessage.contains("'gone'"), e.getMessage)
    assert(states("gone") == Seq(States.CREATING, States.ACTIVE))
  }
}
