package io.hyperspace.index.split

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.hyperspace.KeptBroadcastExchangeExec
import org.apache.spark.sql.functions.col

import io.hyperspace.indexed.IndexedDataFrame
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.testing.Fuzz

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
    spark.conf.set(AuditKey, "1.0") // join pruning is on by default
  }

  private def big: DataFrame = spark.read.parquet(bigPath)
  private def dim: DataFrame = spark.read.parquet(dimPath)

  /** `big` joined on `k = k2` with `small` (the big side on the right when `swapped`). */
  private def joined(small: DataFrame, how: String = "inner", swapped: Boolean = false): DataFrame = {
    val b = big
    if (swapped) small.join(b, b("k") === small("k2"), how) else b.join(small, b("k") === small("k2"), how)
  }

  private def names(keys: Seq[Int]): String = keys.map(k => s"'n$k'").mkString(", ")

  /** Whether `plan` (an executed plan) reads `bigPath` at all; a join with an empty side may not. */
  private def readsBig(plan: SparkPlan): Boolean = plan.exists {
    case s: FileSourceScanExec => s.relation.location.rootPaths.exists(_.toString.contains("join-big"))
    case _ => false
  }

  /** The scans of `plan` (an executed plan) reading `dimPath`. */
  private def dimScans(plan: SparkPlan): Int = plan.collect {
    case s: FileSourceScanExec if s.relation.location.rootPaths.exists(_.toString.contains("join-dim")) => s
  }.size

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
      // The small side ran once, as Spark's broadcast, and nothing ran while planning.
      assert(dimScans(plan) == 1, plan.treeString)
      val planned = joined(small)
      assert(withHyperspace(on = true)(jobsDuring(planned.queryExecution.optimizedPlan)) == 0)
      val why = hs.whyNot(joined(small), "jInner")
      assert(why.contains("decides at run time") && why.contains("at most"), why)
      // Without adaptive execution there is no run-time step: no pruning, same rows.
      spark.conf.set("spark.sql.adaptive.enabled", "false")
      try assert(seekScans(sameResult(joined(small))).isEmpty)
      finally spark.conf.unset("spark.sql.adaptive.enabled")
      // Off: the same join without pruning.
      spark.conf.set(EnabledKey, "false")
      try assert(seekScans(sameResult(joined(small))).isEmpty)
      finally spark.conf.set(EnabledKey, "true")
    }
  }

  test("differential: generated small sides and join types; pruning only where the big side is not preserved") {
    withIndex("jDiff") {
      val random = new Random(Fuzz.seed(19L))
      val count = Fuzz.queries(24)
      // Where the big side is not preserved and the other side is broadcast: an outer join
      // broadcasts its inner side, here the big one, so only inner and left semi joins prune.
      val prunable = Set("inner", "left_semi", "inner_swapped")
      val joinTypes = Seq("inner", "left_semi", "left_anti", "left_outer", "full_outer", "right_outer",
        "inner_swapped", "left_outer_swapped")
      var prunableJoins = 0
      var pruned = 0
      (1 to count).foreach { i =>
        val keys = Seq.fill(1 + random.nextInt(5))(random.nextInt(20500))
        val small = random.nextInt(3) match {
          case 0 => dim.where(s"name IN (${names(keys)})")
          case 1 => dim.where(s"name IN (${names(keys)}) OR name = 'n20000'") // with the NULL key
          case _ => dim.where(s"name IN (${names(keys)}) AND tag < ${random.nextInt(10)}") // maybe no row
        }
        val joinType = joinTypes(i % joinTypes.size)
        val query = () =>
          joinType match {
            case "inner_swapped" => joined(small, "inner", swapped = true)
            case "left_outer_swapped" => joined(small, "left_outer", swapped = true)
            case t => joined(small, t)
          }
        val plan = sameResult(query())
        if (prunable(joinType)) {
          // Or the big side is not read at all: adaptive execution drops a join with an empty side.
          assert(seekScans(plan).nonEmpty || !readsBig(plan), plan.treeString)
          prunableJoins += 1
          if (seekScans(plan).nonEmpty) pruned += 1
        } else assert(seekScans(plan).isEmpty, s"$joinType must not prune the preserved side")
      }
      // Most small sides have rows: those joins read the big side pruned.
      assert(pruned > prunableJoins / 2, s"$pruned of $prunableJoins joins pruned")
    }
  }

  test("more small-side keys than pay, or no broadcast: no pruning, and whyNot names the limit") {
    withIndex("jLimit") {
      val small = dim.where(s"name IN (${names(0 until 40)})")
      for (max <- Seq(10, 2)) {
        spark.conf.set(MaxKeysKey, max.toString)
        try {
          assert(seekScans(sameResult(joined(small))).isEmpty)
          val why = hs.whyNot(joined(small), "jLimit")
          assert(why.contains(s"at most $max distinct keys") && why.contains(MaxKeysKey), why)
        } finally spark.conf.unset(MaxKeysKey)
      }
      // 40 keys are within a limit of 40, but not within what pays: a seek for them is estimated
      // to read more than maxReadFraction of the big side.
      spark.conf.set(MaxKeysKey, "40")
      try {
        val plan = sameResult(joined(small))
        assert(seekScans(plan).isEmpty && dimScans(plan) == 1, plan.treeString)
        val why = hs.whyNot(joined(small), "jLimit")
        assert(!why.contains("at most 40 distinct keys") && why.contains("estimated to read over"), why)
      } finally spark.conf.unset(MaxKeysKey)
      spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
      try assert(seekScans(sameResult(joined(small))).isEmpty)
      finally spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
      // Many keys reaching most row groups, and a non-selective side: no seek.
      assert(seekScans(sameResult(joined(dim.where(s"name IN (${names(0 until 900)})")))).isEmpty)
      assert(seekScans(sameResult(joined(dim.where("tag < 5")))).isEmpty)
    }
  }

  test("cost check: a big side where one key reaches too much is not pruned") {
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
      assert(why.contains("a seek for even one join key is estimated to read"), why)
      val planned = query
      assert(withHyperspace(on = true)(jobsDuring(planned.queryExecution.optimizedPlan)) == 0)
    } finally {
      hs.deleteIndex("jCoarse")
      vacuumNow("jCoarse")
    }
  }

  test("a string join key: the broadcast's keys are read unpacked") {
    val path = newDir("join-strings").getAbsolutePath + "/data"
    spark.range(0, 20000, 1, 4).selectExpr("id", "CONCAT('s', pmod(hash(id), 20000)) AS s")
      .write.options(smallRowGroups).parquet(path)
    hs.createIndex(spark.read.parquet(path), SplitIndexConfig("jString", Seq("s")))
    try {
      def query = spark.read.parquet(path)
        .join(dim.where(s"name IN (${names(Seq(3, 77, 123))})").selectExpr("CONCAT('s', k2) AS s2"),
          col("s") === col("s2"))
      val plan = sameResult(query)
      assert(seekScans(plan).size == 1, plan.treeString)
    } finally {
      hs.deleteIndex("jString")
      vacuumNow("jString")
    }
  }

  test("a small side that is a cached Indexed DataFrame prunes too, also when its broadcast was kept") {
    withIndex("jIndexed") {
      val source = dim.where(s"name IN (${names(Seq(17, 4242, 9000, 15555, 20000))})")
      val small = IndexedDataFrame.create(source, "k2", 4).cache()
      try {
        // The second run takes the broadcast the first one kept with the Indexed DataFrame.
        for (run <- 1 to 2) {
          val plan = sameResult(joined(small.toDF))
          assert(plan.exists(_.isInstanceOf[KeptBroadcastExchangeExec]), s"run $run:\n${plan.treeString}")
          val scans = seekScans(plan)
          assert(scans.size == 1, s"run $run:\n${plan.treeString}")
          assert(scans.head.metrics("numOutputRows").value < 20000 / 10, plan.treeString)
        }
        assert(small.memoryStats("keptBroadcastBytes") > 0)
      } finally small.unpersist()
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
      assert(seekScans(sameResult(query)).nonEmpty)
      writeKeys(Seq(9001, 9002, 9003, 15555, 77))
      // The new keys match big-side rows: keys remembered from the old file would prune them away.
      assert(withHyperspace(on = false)(query.count()) > 0)
      assert(seekScans(sameResult(query)).nonEmpty)
    }
  }

  test("audit mode re-reads what the join pruned") {
    withIndex("jAudit") {
      val small = dim.where(s"name IN (${names(Seq(5, 6, 7))})")
      def jobs(rate: String): Int = {
        spark.conf.set(AuditKey, rate)
        withHyperspace(on = true) {
          val query = joined(small).where(s"id >= ${-1 - Random.nextInt(1000)}")
          jobsDuring(query.collect())
        }
      }
      try {
        jobs("0")
        val off = jobs("0")
        assert(jobs("1.0") > off)
      } finally spark.conf.set(AuditKey, "1.0")
    }
  }
}
