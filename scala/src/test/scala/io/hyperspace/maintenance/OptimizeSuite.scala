package io.hyperspace.maintenance

import io.hyperspace.HyperspaceException
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.log.ContentFile

class OptimizeSuite extends MaintenanceTestSupport {

  private def filesPerBucket(name: String): Map[Int, Seq[ContentFile]] =
    logOf(name).latestStable.get.content.files.groupBy(f => CoveringIndex.bucketOf(f).get)

  /** An index whose buckets hold several files each: created, then refreshed incrementally twice. */
  private def fragmented(name: String): java.io.File = {
    val dir = newSource(name, partitioned = false)
    hs.createIndex(read(dir), IndexConfig(name, Seq("id"), Seq("name"), lineage = Some(true)))
    append(dir, partitioned = false, 1000, 80)
    hs.refreshIndex(name, "incremental")
    append(dir, partitioned = false, 2000, 80)
    hs.refreshIndex(name, "incremental")
    assert(filesPerBucket(name).values.forall(_.size == 3))
    dir
  }

  private def checkQueries(name: String, dir: java.io.File): Unit = {
    val lookup = sameResult(read(dir).where("id IN (7, 1007, 2050)").select("id", "name"))
    assert(indexesUsed(lookup) == Seq(name))
    sameResult(read(dir).select("id", "name").join(spark.range(0, 3000, 3).toDF("id"), "id"))
  }

  test("full optimize leaves one file per bucket; results and rows do not change") {
    val dir = fragmented("full")
    val rowsBefore = rowsOf(readIndexData("full"))
    val result = hs.optimizeIndex("full", "full")
    assert(result.changed && result.mergedFiles == 12, result)
    assert(filesPerBucket("full").values.forall(_.size == 1))
    assert(rowsOf(readIndexData("full")) == rowsBefore)
    checkQueries("full", dir)
    // The files it replaced stay until vacuum; then only the new version is left.
    assert(versionDirs("full") == Seq("v__=0", "v__=1", "v__=2", "v__=3"))
    vacuumNow("full")
    assert(versionDirs("full") == Seq("v__=3"))
    checkQueries("full", dir)
    assert(!hs.optimizeIndex("full", "full").changed, "nothing left to merge")
  }

  test("quick optimize merges only the files below the size threshold") {
    val dir = fragmented("quick")
    val before = filesPerBucket("quick")
    // The created files are the largest in each bucket: a threshold between them and the
    // appended files merges only the two appended ones.
    val created = before.values.flatMap(_.filter(_.path.startsWith("v__=0/"))).map(_.size).min
    val appended = before.values.flatMap(_.filterNot(_.path.startsWith("v__=0/"))).map(_.size).max
    assert(appended < created)
    withConf("spark.hyperspace.index.optimize.fileSizeThreshold" -> s"${appended + 1}b") {
      val result = hs.optimizeIndex("quick", "quick")
      assert(result.changed && result.mergedFiles == 8, result)
      assert(!hs.optimizeIndex("quick", "quick").changed, "one small file per bucket is left alone")
    }
    val after = filesPerBucket("quick")
    assert(after.values.forall(_.size == 2))
    assert(after.values.flatten.count(_.path.startsWith("v__=0/")) == 4, "the large files stay where they were")
    checkQueries("quick", dir)
  }

  test("optimize with nothing to merge is a no-op; bad modes and states give clear errors") {
    val dir = newSource("tidy", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("tidy", Seq("id")))
    val before = entries("tidy")
    assert(!hs.optimizeIndex("tidy", "full").changed)
    assert(hs.optimizeIndex("tidy", "full").message.contains("nothing to optimize"))
    assert(entries("tidy") == before)
    val e = intercept[HyperspaceException](hs.optimizeIndex("tidy", "incremental"))
    assert(e.getMessage.contains("'tidy'") && e.getMessage.contains("quick, full"), e.getMessage)
    hs.deleteIndex("tidy")
    intercept[HyperspaceException](hs.optimizeIndex("tidy", "quick"))
  }

  test("optimize keeps lineage, so incremental refresh still drops deleted files' rows afterwards") {
    val dir = fragmented("lineage")
    hs.optimizeIndex("lineage", "full")
    val gone = deleteFile(dir, 0)
    hs.refreshIndex("lineage", "incremental")
    val ids = readIndexData("lineage").select("id").collect().map(_.getLong(0)).toSet
    assert(ids.intersect(gone).isEmpty)
    checkQueries("lineage", dir)
  }
}
