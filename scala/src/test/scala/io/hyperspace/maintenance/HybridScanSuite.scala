package io.hyperspace.maintenance

import java.io.File

import scala.util.Random

import org.apache.spark.sql.execution.{FileSourceScanExec, SortExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec

import io.hyperspace.execution.BucketUnionExec
import io.hyperspace.index.IndexConfig
import io.hyperspace.sources.SelectedFilesIndex
import io.hyperspace.testing.Fuzz

class HybridScanSuite extends MaintenanceTestSupport {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    enableHybridScan(maxRatio = 0.6)
    // Joins as on large data: sort-merge, so the bucketing matters.
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
  }

  private def create(name: String, dir: File, lineage: Boolean = true): Unit =
    hs.createIndex(read(dir), IndexConfig(name, Seq("id"), Seq("name", "day"), lineage = Some(lineage)))

  private def appendedScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[SelectedFilesIndex] => s
  }

  /** The shuffles below `node`'s `i`-th child. */
  private def shufflesUnder(plan: SparkPlan): Int = plan.collect { case s: ShuffleExchangeExec => s }.size

  for (aqe <- Seq("false", "true")) {
    test(s"a join over a hybrid-scanned index shuffles only the appended files (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        val dir = newSource(s"join-$aqe", partitioned = false)
        create(s"join-$aqe", dir)
        append(dir, partitioned = false, 1000, 40)
        val other = newSource(s"join-other-$aqe", partitioned = false, rows = 300)
        def query = read(dir).select("id", "name").join(read(other).selectExpr("id", "name AS other"), "id")
        val plan = sameResult(query)
        assert(indexesUsed(plan) == Seq(s"join-$aqe"), plan.treeString)
        val union = plan.collectFirst { case u: BucketUnionExec => u }.getOrElse(fail(plan.treeString))
        val Seq(indexSide, appendedSide) = union.children
        assert(shufflesUnder(indexSide) == 0, s"the index side is never shuffled:\n${plan.treeString}")
        assert(shufflesUnder(appendedSide) == 1, plan.treeString)
        assert(appendedScans(plan).map(_.relation.location.inputFiles.length) == Seq(1))
        // The un-indexed side is shuffled to the index's buckets: two exchanges in all.
        assert(shuffles(plan) == 2, plan.treeString)

        // With the other side indexed too (up to date), the appended files are the only shuffle.
        create(s"join-other-idx-$aqe", other)
        val both = sameResult(query)
        assert(indexesUsed(both) == Seq(s"join-$aqe", s"join-other-idx-$aqe").sorted, both.treeString)
        assert(shuffles(both) == 1, both.treeString)
      }
    }
  }

  test("where Spark reports the index's sort order, the appended rows are merged in sorted, not re-sorted") {
    withConf("spark.sql.legacy.bucketedTableScan.outputOrdering" -> "true",
      "spark.sql.adaptive.enabled" -> "false") {
      val dir = newSource("merge", partitioned = false)
      create("merge", dir)
      append(dir, partitioned = false, 1000, 40)
      val other = newSource("merge-other", partitioned = false, rows = 300)
      val plan = sameResult(read(dir).select("id", "name").join(read(other).select("id", "amount"), "id"))
      val union = plan.collectFirst { case u: BucketUnionExec => u }.getOrElse(fail(plan.treeString))
      val Seq(indexSide, appendedSide) = union.children
      def sorts(p: SparkPlan) = p.collect { case s: SortExec => s }.size
      assert(sorts(indexSide) == 0 && sorts(appendedSide) == 1, plan.treeString)
      assert(union.outputOrdering.nonEmpty)
      // Only the other join side is sorted above the union level.
      assert(sorts(plan) == 2, plan.treeString)
    }
  }

  test("a broadcast join above a hybrid scan keeps the buckets aligned") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "10485760") {
      val dir = newSource("bhj", partitioned = false)
      create("bhj", dir)
      append(dir, partitioned = false, 1000, 40)
      val dim = spark.range(0, 2000, 7).selectExpr("id", "id % 5 AS tag")
      // Spark broadcasts dim, so the join itself is left to Spark (BroadcastJoinSuite); the
      // streamed side reads the index led by the key with the appended rows by a plain union ...
      val joined = sameResult(read(dir).select("id", "name").join(dim, "id").groupBy("id").count())
      assert(indexesUsed(joined) == Seq("bhj"), joined.treeString)
      assert(joined.collect { case u: BucketUnionExec => u }.isEmpty, joined.treeString)
      assert(joined.collect { case u: UnionExec => u }.size == 1, joined.treeString)
      // ... but an aggregation below it reads the index (with the appended rows bucketed in).
      val plan = sameResult(read(dir).select("id", "name").groupBy("id").count().join(dim, "id"))
      assert(indexesUsed(plan) == Seq("bhj"), plan.treeString)
      assert(plan.collect { case u: BucketUnionExec => u }.size == 1, plan.treeString)
    }
  }

  test("filter queries read the index plus the appended files through a plain union") {
    val dir = newSource("filter", partitioned = true)
    create("filter", dir)
    append(dir, partitioned = true, 1000, 40)
    val plan = sameResult(read(dir).where("id IN (3, 1005, 1039)").select("id", "name", "day"))
    assert(indexesUsed(plan) == Seq("filter"))
    assert(plan.collect { case u: UnionExec => u }.size == 1, plan.treeString)
    assert(appendedScans(plan).size == 1)
    sameResult(read(dir).where("id > 390").select("id", "day"))
  }

  test("rows of deleted and rewritten files never appear") {
    val dir = newSource("deleted", partitioned = false)
    create("deleted", dir)
    val gone = deleteFile(dir, 0)
    rewriteFile(dir, 0) // the (new) first file: half its rows go, the rest come back as appended
    def query = read(dir).where("id < 1000").select("id", "name")
    val plan = sameResult(query)
    assert(indexesUsed(plan) == Seq("deleted"), plan.treeString)
    val ids = withHyperspace(on = true)(query.collect().map(_.getLong(0)).toSet)
    val report = hs.explain(query)
    assert(report.contains("Hybrid scan: 1 appended source file(s)") &&
        report.contains("rows of 2 deleted source file(s)"), report)
    assert(ids.intersect(gone).isEmpty)
    assert(ids.size == read(dir).count())
  }

  test("a stale index is ignored when hybrid scan is off or the changes exceed the ratios") {
    val dir = newSource("ratios", partitioned = false)
    create("ratios", dir)
    val indexed = dataFiles(dir)
    append(dir, partitioned = false, 1000, 60)
    def query = read(dir).where("id = 1010").select("id", "name")
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "false") {
      assert(indexesUsed(sameResult(query)).isEmpty)
      assert(hs.whyNot(query, "ratios").contains("enable hybrid scan"), hs.whyNot(query, "ratios"))
    }
    withConf("spark.hyperspace.index.hybridscan.maxAppendedRatio" -> "0.01") {
      assert(indexesUsed(sameResult(query)).isEmpty)
      assert(hs.whyNot(query, "ratios").contains("maxAppendedRatio"))
    }
    assert(indexesUsed(sameResult(query)) == Seq("ratios"))
    assert(indexed.head.delete())
    withConf("spark.hyperspace.index.hybridscan.maxDeletedRatio" -> "0.05") {
      assert(indexesUsed(sameResult(query)).isEmpty)
      assert(hs.whyNot(query, "ratios").contains("maxDeletedRatio"))
    }
  }

  test("without lineage, hybrid scan serves appends but not deletes") {
    val dir = newSource("no-lineage", partitioned = false)
    create("no-lineage", dir, lineage = false)
    val indexed = dataFiles(dir)
    append(dir, partitioned = false, 1000, 20)
    def query = read(dir).where("id IN (5, 1005)").select("id", "name")
    assert(indexesUsed(sameResult(query)) == Seq("no-lineage"))
    assert(indexed.head.delete())
    assert(indexesUsed(sameResult(query)).isEmpty)
    assert(hs.whyNot(query, "no-lineage").contains("without lineage"))
  }

  test("after a quick refresh the recorded lists are used, with hybrid scan off") {
    val dir = newSource("quick", partitioned = true)
    create("quick", dir)
    append(dir, partitioned = true, 1000, 30)
    deleteFile(dir, 1)
    hs.refreshIndex("quick", "quick")
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "false") {
      val plan = sameResult(read(dir).where("id IN (2, 1002, 350)").select("id", "name", "day"))
      assert(indexesUsed(plan) == Seq("quick"))
      sameResult(read(dir).select("id", "name").join(spark.range(0, 2000, 3).toDF("id"), "id"))
      // A further change invalidates the recorded lists: the index is not used without hybrid scan.
      append(dir, partitioned = true, 3000, 5)
      assert(indexesUsed(sameResult(read(dir).where("id = 2").select("id", "name"))).isEmpty)
    }
  }

  test("random sequences of changes and refreshes: every query equals the source (differential)") {
    val seed = Fuzz.seed(20261121L)
    val random = new Random(seed)
    val dir = newSource("random", partitioned = true, rows = 300, files = 3)
    create("random", dir)
    var nextId = 10000L
    for (round <- 0 until 6) {
      random.nextInt(4) match {
        case 0 | 1 =>
          append(dir, partitioned = true, nextId, 10 + random.nextInt(40)); nextId += 100
        case 2 if dataFiles(dir).size > 2 => deleteFile(dir, random.nextInt(dataFiles(dir).size))
        case _ => rewriteFile(dir, random.nextInt(dataFiles(dir).size))
      }
      random.nextInt(4) match {
        case 0 => hs.refreshIndex("random", "incremental")
        case 1 => hs.refreshIndex("random", "quick")
        case 2 if round % 3 == 2 => hs.optimizeIndex("random", "full")
        case _ => // stay stale: hybrid scan
      }
      val key = random.nextInt(300)
      withClue(s"seed $seed, round $round: ") {
        sameResult(read(dir).where(s"id = $key OR id > ${nextId - 60}").select("id", "name", "day"))
        sameResult(read(dir).select("id", "name").join(spark.range(0, 20000, 7).toDF("id"), "id"))
        sameResult(read(dir).groupBy("id").count().where("count > 0"))
      }
    }
  }
}
