package io.hyperspace.index.split

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.functions.col

import io.hyperspace.rules.RuleTestSupport

class SplitJoinPruningSuite extends RuleTestSupport {

  private val AuditKey = "spark.hyperspace.audit.sampleRate"
  private val EnabledKey = "spark.hyperspace.index.split.joinPruning.enabled"
  private val MaxKeysKey = "spark.hyperspace.index.split.joinPruning.maxKeys"

  private val smallRowGroups = Map("parquet.block.size" -> "4096", "parquet.page.size.row.check.min" -> "10",
    "parquet.page.size.row.check.max" -> "50", "parquet.page.size" -> "1024")

  /** The big side: `k` about one row per key (a tenth NULL) in random order, many row groups. */
  private lazy val bigPath: String = {
    val path = newDir("join-big").getAbsolutePath + "/data"
    spark.range(0, 20000, 1, 4).selectExpr(
      "id",
      "CASE WHEN id % 10 = 0 THEN NULL ELSE CAST(pmod(hash(id), 20000) AS INT) END AS k",
      "REPEAT(CAST(id AS STRING), 4) AS pad").write.options(smallRowGroups).parquet(path)
    path
  }

  /**
   * The small side: `k2` every key once (and a NULL), `tag` a tenth of them each, `name` one per
   * row. Its filters below are on `name` and `tag`: a filter on `k2` itself would be inferred onto
   * the big side's `k` by Spark (through the join's equality), and the filter seek would serve it.
   */
  private lazy val dimPath: String = {
    val path = newDir("join-dim").getAbsolutePath + "/data"
    spark.range(0, 20001, 1, 1).selectExpr(
      "CASE WHEN id = 20000 THEN NULL ELSE CAST(id AS INT) END AS k2",
      "CAST(id % 10 AS INT) AS tag", "CONCAT('n', id) AS name").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(AuditKey, "1.0")
    spark.conf.set(EnabledKey, "true")
  }

  private def big: DataFrame = spark.read.parquet(bigPath)
  private def dim: DataFrame = spark.read.parquet(dimPath)

  /** `big` joined on `k = k2` with `small` (the big side on the right when `swapped`). */
  private def joined(small: DataFrame, how: String = "inner", swapped: Boolean = false): DataFrame = {
    val b = big
    if (swapped) small.join(b, b("k") === small("k2"), how) else b.join(small, b("k") === small("k2"), how)
  }

  private def names(keys: Seq[Int]): String = keys.map(k => s"'n$k'").mkString(", ")

  /** Whether the optimized plan (before adaptive execution may drop an empty side) seeks. */
  private def prunes(df: DataFrame): Boolean = withHyperspace(on = true)(df.queryExecution.optimizedPlan.exists {
    case r: org.apache.spark.sql.execution.datasources.LogicalRelation =>
      r.relation match {
        case fs: org.apache.spark.sql.execution.datasources.HadoopFsRelation =>
          fs.location.isInstanceOf[SplitSeekFileIndex]
        case _ => false
      }
    case _ => false
  })

  /** Whether the optimized plan reads `dimPath` (rather than its rows, collected while planning). */
  private def readsDim(df: DataFrame): Boolean = withHyperspace(on = true)(df.queryExecution.optimizedPlan.exists {
    case r: org.apache.spark.sql.execution.datasources.LogicalRelation =>
      r.relation match {
        case fs: org.apache.spark.sql.execution.datasources.HadoopFsRelation =>
          fs.location.rootPaths.exists(_.toString.contains("join-dim"))
        case _ => false
      }
    case _ => false
  })

  private def seekScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.fileFormat.isInstanceOf[SplitSeekParquetFormat] => s
  }

  private def withIndex(name: String)(body: => Unit): Unit = {
    hs.createIndex(big, SplitIndexConfig(name, Seq("k")))
    try body
    finally {
      hs.deleteIndex(name)
      vacuumNow(name)
    }
  }

  test("an inner join with a small filtered side reads only the row groups that can hold its keys") {
    withIndex("jInner") {
      val small = dim.where(s"name IN (${names(Seq(17, 4242, 9000, 15555, 20000))})")
      val plan = sameResult(joined(small))
      val scans = seekScans(plan)
      assert(scans.size == 1, plan.treeString)
      // The big side was pruned (audit on for the suite: the pruned files were re-read and agreed).
      assert(scans.head.metrics("numOutputRows").value < 20000 / 10, plan.treeString)
      val stats = withHyperspace(on = true)(hs.skippingStats(joined(small)))
      assert(stats.exists(s => s.filter.contains("join key(s) of the other side") && s.bytesSkipped > 0), stats)
      val explained = withHyperspace(on = true)(hs.explain(joined(small)))
      assert(explained.contains("jInner") && explained.contains("SplitSeek"), explained)
      // The small side ran once, while planning: its rows replace it, so it is not run again.
      assert(!readsDim(joined(small)))
      // Off: the same join without pruning.
      spark.conf.set(EnabledKey, "false")
      try assert(seekScans(sameResult(joined(small))).isEmpty)
      finally spark.conf.set(EnabledKey, "true")
    }
  }

  test("differential: generated small sides and join types; pruning only where the big side is not preserved") {
    withIndex("jDiff") {
      val random = new Random(19)
      val prunable = Set("inner", "left_semi", "inner_swapped", "left_outer_swapped", "right_outer")
      var pruned = 0
      (1 to 24).foreach { i =>
        val keys = Seq.fill(1 + random.nextInt(5))(random.nextInt(20500))
        val small = random.nextInt(3) match {
          case 0 => dim.where(s"name IN (${names(keys)})")
          case 1 => dim.where(s"name IN (${names(keys)}) OR name = 'n20000'") // with the NULL key
          case _ => dim.where(s"name IN (${names(keys)}) AND tag < ${random.nextInt(10)}") // maybe no row
        }
        val joinType = Seq("inner", "left_semi", "left_anti", "left_outer", "full_outer", "right_outer",
          "inner_swapped", "left_outer_swapped")(i % 8)
        val query = () =>
          joinType match {
            case "inner_swapped" => joined(small, "inner", swapped = true)
            case "left_outer_swapped" => joined(small, "left_outer", swapped = true)
            case t => joined(small, t)
          }
        sameResult(query())
        if (prunable(joinType)) {
          // Or the big side is not read at all: a small side without rows becomes an empty local
          // relation, and Spark drops a join with it.
          val plan = withHyperspace(on = true)(query().queryExecution.optimizedPlan)
          assert(prunes(query()) || plan.collectLeaves().forall(_.isInstanceOf[LocalRelation]), plan.treeString)
          pruned += 1
        } else assert(!prunes(query()), s"$joinType must not prune the preserved side")
      }
      assert(pruned == 15)
    }
  }

  test("too many small-side keys or a big small side: no pruning, and whyNot names the limit") {
    withIndex("jLimit") {
      val small = dim.where(s"name IN (${names(0 until 40)})")
      // 40 rows: deduplicated in the driver under 10 keys (80 rows at most), by a distinct under 2.
      for (max <- Seq(10, 2)) {
        spark.conf.set(MaxKeysKey, max.toString)
        try {
          assert(seekScans(sameResult(joined(small))).isEmpty)
          val why = hs.whyNot(joined(small), "jLimit")
          assert(why.contains(s"more than $max distinct join keys") && why.contains(MaxKeysKey), why)
        } finally spark.conf.unset(MaxKeysKey)
      }
      // 40 keys are within a limit of 40, but not within what pays: a seek for them is estimated
      // to read more than maxReadFraction of the big side. Its rows still replace the small side.
      spark.conf.set(MaxKeysKey, "40")
      try {
        assert(seekScans(sameResult(joined(small))).isEmpty)
        val why = hs.whyNot(joined(small), "jLimit")
        assert(!why.contains("more than 40 distinct join keys"), why)
        assert(why.contains("has 40 distinct join keys; a seek for more than") &&
            why.contains("is estimated to read over 25%"), why)
        assert(!readsDim(joined(small)))
      } finally spark.conf.unset(MaxKeysKey)
      spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
      try assert(seekScans(sameResult(joined(small))).isEmpty)
      finally spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
      // Many keys reaching most row groups: the estimate refuses the seek before any lookup.
      val wide = dim.where(s"name IN (${names(0 until 900)})")
      assert(seekScans(sameResult(joined(wide))).isEmpty)
      assert(hs.whyNot(joined(wide), "jLimit").contains("estimated to read"))
    }
  }

  test("cost check: a big side where one key reaches too much is not pruned, and the small side is not run") {
    // Two files, one row group each: any key's seek reads at least half the bytes.
    val path = newDir("join-coarse").getAbsolutePath + "/data"
    spark.range(0, 2000, 1, 2).selectExpr("id", "CAST(pmod(hash(id), 2000) AS INT) AS k").write.parquet(path)
    val coarse = spark.read.parquet(path)
    hs.createIndex(coarse, SplitIndexConfig("jCoarse", Seq("k")))
    try {
      val small = dim.where(s"name IN (${names(Seq(3, 5))})")
      def query = spark.read.parquet(path).join(small, col("k") === col("k2"))
      assert(seekScans(sameResult(query)).isEmpty)
      val why = hs.whyNot(query, "jCoarse")
      assert(why.contains("a seek for even one join key is estimated to read") && why.contains("was not run"), why)
      // Nothing ran while planning: neither the small side nor a lookup.
      val planned = query
      assert(withHyperspace(on = true)(jobsDuring(planned.queryExecution.optimizedPlan)) == 0)
      assert(readsDim(query))
    } finally {
      hs.deleteIndex("jCoarse")
      vacuumNow("jCoarse")
    }
  }

  test("a small side with more rows than a broadcast local relation holds is not collected") {
    withIndex("jRows") {
      // Under a 200 KB threshold (the side's own size estimate is about 180 KB) at most a few
      // thousand rows are collected; `tag < 5` keeps 10,000.
      val small = dim.where("tag < 5")
      val dimBytes = withHyperspace(on = false)(dim.queryExecution.optimizedPlan.stats.sizeInBytes)
      spark.conf.set("spark.sql.autoBroadcastJoinThreshold", (dimBytes + 1024).toString)
      try {
        assert(seekScans(sameResult(joined(small))).isEmpty)
        val why = hs.whyNot(joined(small), "jRows")
        assert(why.contains("more than") && why.contains("rows, more than a local relation"), why)
        assert(readsDim(joined(small)))
      } finally spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    }
  }

  test("an inferred `key IS NOT NULL` alone is not looked up") {
    withIndex("jNotNull") {
      spark.conf.set(EnabledKey, "false")
      try {
        // Spark infers `k IS NOT NULL` on the big side of the join; a lookup for it would be a job.
        val small = dim.where(s"name IN (${names(Seq(1, 2))})")
        val query = joined(small).where(s"id >= ${-1 - Random.nextInt(1000)}")
        assert(withHyperspace(on = true)(jobsDuring(query.queryExecution.optimizedPlan)) == 0)
        assert(hs.whyNot(big.where("k IS NOT NULL"), "jNotNull").contains("no condition on the key columns"))
      } finally spark.conf.set(EnabledKey, "true")
    }
  }

  test("a small side rewritten in place (same file name) prunes for its new keys, not the keys seen before") {
    withIndex("jInPlace") {
      val dir = newDir("join-in-place")
      val staging = newDir("join-in-place-staging")
      // One file whose name stays while its keys change, as a copy over it would leave it.
      def writeKeys(keys: Seq[Int]): Unit = {
        val out = new java.io.File(staging, s"v${keys.head}").getAbsolutePath
        spark.createDataFrame(keys.map(k => (k, s"n$k"))).toDF("k2", "name").coalesce(1).write.parquet(out)
        val part = new java.io.File(out).listFiles().find(_.getName.endsWith(".parquet")).get
        val target = new java.io.File(dir, "small.parquet")
        java.nio.file.Files.copy(part.toPath, target.toPath, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
        // Past the file system's timestamp resolution, and a size of its own, so the listing tells.
        assert(target.setLastModified(System.currentTimeMillis() + 5000L * keys.size))
      }
      def query: DataFrame = joined(spark.read.parquet(dir.getAbsolutePath))
      writeKeys(Seq(17, 4242))
      assert(prunes(query))
      sameResult(query)
      writeKeys(Seq(9001, 9002, 9003, 15555, 77))
      // The new keys match big-side rows: keys remembered from the old file would prune them away.
      assert(withHyperspace(on = false)(query.count()) > 0)
      assert(prunes(query))
      sameResult(query)
    }
  }

  test("audit mode re-reads what the join pruned") {
    withIndex("jAudit") {
      val small = dim.where(s"name IN (${names(Seq(5, 6, 7))})")
      def jobs(rate: String): Int = {
        spark.conf.set(AuditKey, rate)
        withHyperspace(on = true) {
          // A fresh filter each time, so no cached lookup hides the audit's reads.
          val query = joined(small).where(s"id >= ${-1 - Random.nextInt(1000)}")
          jobsDuring(query.queryExecution.optimizedPlan)
        }
      }
      // The first run also collects the small side's keys (cached after it).
      try {
        jobs("0")
        val off = jobs("0")
        assert(jobs("1.0") > off)
      } finally spark.conf.set(AuditKey, "1.0")
    }
  }
}
