package io.hyperspace.dataskipping

import java.io.File

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.{EqualTo, Literal}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.functions.col

import io.hyperspace.index.dataskipping._
import io.hyperspace.index.split.{SplitIndexConfig, SplitSeekParquetFormat}
import io.hyperspace.rules.{AuditFailure, DataSkippingAudit, DataSkippingRule}
import io.hyperspace.shims.FileRelation
import io.hyperspace.testing.Fuzz

/**
 * Join pruning by data skipping sketches: the files of a join's big side whose sketches on the
 * join key rule out every key of the broadcast side are left out at run time. The audit is on
 * (every skipped file re-read) in the whole suite.
 */
class SketchJoinPruningSuite extends DataSkippingTestSupport {

  private val AuditKey = "spark.hyperspace.audit.sampleRate"
  private val EnabledKey = "spark.hyperspace.index.dataskipping.joinPruning.enabled"
  private val MaxKeysKey = "spark.hyperspace.index.dataskipping.joinPruning.maxKeys"

  /** 40 files of 50 contiguous ids (0 to 1999): `id`, `cat` and `name`'s prefix clustered by file. */
  private lazy val bigDir: File = clusteredSource("join-big")

  /** The small side: `id2` 0 to 2099 (a hundred keys the big side lacks) and a NULL; `dname` one per row. */
  private lazy val dimPath: String = {
    val path = newDir("join-dim").getAbsolutePath + "/data"
    spark.range(0, 2101, 1, 1).selectExpr(
      "CASE WHEN id = 2100 THEN NULL ELSE id END AS id2",
      "CONCAT('n', id) AS dname", "CAST(id % 10 AS INT) AS tag").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(AuditKey, "1.0") // join pruning is on by default
  }

  private def big: DataFrame = read(bigDir)
  private def dim: DataFrame = spark.read.parquet(dimPath)

  /**
   * The small side filtered on its names, not on its key: a filter on `id2` would be inferred onto
   * the big side's `id` through the join's equality, and planning's data skipping would serve it.
   */
  private def dimOf(keys: Seq[Int]): DataFrame = dim.where(s"dname IN (${keys.map(k => s"'n$k'").mkString(", ")})")

  private def joined(small: DataFrame, how: String = "inner", bigSide: DataFrame = big): DataFrame =
    bigSide.join(small, col("id") === col("id2"), how)

  private def bigScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.rootPaths.exists(_.toString.contains("join-big")) => s
  }

  /** The statistics of the big side's scan when join pruning narrowed it at run time. */
  private def joinPruned(plan: SparkPlan): Option[RelationSkippingStats] =
    bigScans(plan).map(_.relation.location).collectFirst {
      case d: DataSkippingFileIndex if d.stats.filter.contains("join key") => d.stats
    }

  private def bigFilesRead(plan: SparkPlan): Long = bigScans(plan).map(_.metrics("numFiles").value).sum

  /** The big side's files holding a row with one of `keys` that `filter` keeps (Hyperspace off). */
  private def filesHolding(keys: Seq[Int], filter: String = "true"): Set[String] =
    if (keys.isEmpty) Set.empty
    else filesWithRows(big.where(s"id IN (${keys.mkString(", ")}) AND ($filter)"))

  private def withIndex(name: String, sketches: Sketch*)(body: => Unit): Unit = {
    hs.createIndex(big, DataSkippingIndexConfig(name, sketches.head, sketches.tail: _*))
    try body
    finally drop(name)
  }

  test("an inner join with a small side reads only the files whose sketches can hold its keys") {
    for ((sketch, exact) <- Seq(MinMaxSketch("id") -> true, ValueListSketch("id") -> true,
        BloomFilterSketch("id") -> false)) {
      withIndex("sjInner", sketch) {
        val keys = Seq(17, 1234, 2050) // 2050: in no file of the big side
        val plan = sameResult(joined(dimOf(keys)))
        val stats = joinPruned(plan).getOrElse(fail(s"$sketch: not pruned\n${plan.treeString}"))
        assert(stats.filter.startsWith("id IN (the 3 join key(s) of the other side)"), stats.filter)
        assert(stats.indexes.map(_.index) == Seq("sjInner"), stats)
        val holding = filesHolding(keys)
        assert(holding.size == 2)
        if (exact) assert(bigFilesRead(plan) == 2 && stats.filesSkipped == 38, s"$sketch: $stats")
        else assert(bigFilesRead(plan) >= 2 && bigFilesRead(plan) < 10, s"$sketch: $stats")
        if (exact && sketch.isInstanceOf[MinMaxSketch]) {
          // The session's last query statistics report the pruning done at run time.
          withHyperspace(on = true)(joined(dimOf(keys)).collect())
          val Seq(last) = hs.lastQuerySkippingStats
          assert(last.filesRead == 2 && last.filter.contains("join key"), last)
          // whyNot: used while planning (for the key's inferred IS NOT NULL), and what it decides at run time.
          val why = withHyperspace(on = true)(hs.whyNot(joined(dimOf(keys)), "sjInner"))
          assert(why.contains("decides at run time") && why.contains("sketches") && why.contains(MaxKeysKey), why)
          // A scan pruned for the join is not pruned again when adaptive execution optimizes the
          // rest of the query after a later stage (the sketches are not evaluated again), even for
          // a condition that would leave out more.
          val prunedScan = bigScans(plan).map(_.relation.location).collectFirst { case d: DataSkippingFileIndex =>
            d
          }.get
          assert(prunedScan.forJoin)
          val (relation, fs) = big.queryExecution.analyzed.collectFirst { case FileRelation(r, fs) => (r, fs) }.get
          val narrower = EqualTo(relation.output.find(_.name == "id").get, Literal(17L))
          val entries = Seq(logOf("sjInner").latestStable.get)
          val fresh = DataSkippingRule.pruneForJoin(spark, entries, narrower, Nil, relation, "id = 17")
          assert(fresh.isDefined) // from the plain listing: 39 of 40 files left out
          val again = FileRelation.withLocation(relation, fs, prunedScan)
          assert(DataSkippingRule.pruneForJoin(spark, entries, narrower, Nil, again, "id = 17").isEmpty)
        }
      }
    }
  }

  test("off, without adaptive execution, without a broadcast or with more keys than allowed: no pruning") {
    withIndex("sjOff", MinMaxSketch("id")) {
      val small = dimOf(Seq(3, 777, 1500))
      assert(joinPruned(sameResult(joined(small))).isDefined)
      def unpruned(conf: (String, String)*): Unit = withConf(conf: _*) {
        val plan = sameResult(joined(small))
        assert(joinPruned(plan).isEmpty && bigFilesRead(plan) == 40, s"$conf\n${plan.treeString}")
      }
      unpruned(EnabledKey -> "false")
      unpruned("spark.sql.adaptive.enabled" -> "false")
      unpruned("spark.sql.autoBroadcastJoinThreshold" -> "-1")
      unpruned(MaxKeysKey -> "2")
      withConf(MaxKeysKey -> "3")(assert(joinPruned(sameResult(joined(small))).isDefined))
      // Many keys reaching every file: nothing left out, the scan left as planned.
      val plan = sameResult(joined(dim.where("tag = 3")))
      assert(joinPruned(plan).isEmpty && bigFilesRead(plan) == 40, plan.treeString)
    }
  }

  test("differential: generated small sides, big-side filters and join types; files read are those holding keys") {
    withIndex("sjDiff", MinMaxSketch("id"), ValueListSketch("cat"), BloomFilterSketch("name")) {
      val random = new Random(Fuzz.seed(29L))
      val count = Fuzz.queries(12)
      val prunable = Set("inner", "left_semi", "inner_swapped")
      val joinTypes = Seq("inner", "left_semi", "left_anti", "left_outer", "full_outer", "right_outer",
        "inner_swapped", "left_outer_swapped")
      // Filters over the big side: one no sketch helps, one planning's data skipping serves first
      // (join pruning then prunes again from the full listing, under both), none.
      // Each with the part of it the sketches see (no sketch on score).
      val filters = Seq("true" -> "true", "score > 20" -> "true", "cat IN ('B', 'C', 'H')" -> "cat IN ('B', 'C', 'H')")
      var pruned = 0
      var prunableJoins = 0
      (1 to count).foreach { i =>
        // Up to 15 keys: more than 10 go to the sketches as a set, not an IN list.
        val keys = Seq.fill(1 + random.nextInt(if (i % 3 == 0) 15 else 4))(random.nextInt(2150))
        val small = if (i % 4 == 1) dimOf(keys).union(dim.where("id2 IS NULL")) else dimOf(keys)
        val (filter, seen) = filters(i % filters.size)
        val bigSide = big.where(filter)
        val joinType = joinTypes(i % joinTypes.size)
        val query = () =>
          joinType match {
            case "inner_swapped" => small.join(bigSide, col("id") === col("id2"))
            case "left_outer_swapped" => small.join(bigSide, col("id") === col("id2"), "left_outer")
            case t => joined(small, t, bigSide)
          }
        val plan = sameResult(query())
        if (prunable(joinType)) {
          prunableJoins += 1
          val holding = filesHolding(keys, seen)
          joinPruned(plan) match {
            case Some(stats) =>
              pruned += 1
              // MinMax on clustered ids, one cat per file: exactly the files holding a key's row the sketched
              // part of the filter keeps.
              assert(bigFilesRead(plan) == holding.size && stats.filesRead == holding.size,
                s"$joinType, $filter, keys $keys: $stats, holding $holding")
            case None =>
              // Adaptive execution drops a join with an empty side; else nothing was left to skip.
              assert(bigScans(plan).isEmpty || holding.size == bigFilesRead(plan), s"$joinType $filter $keys")
          }
        } else assert(joinPruned(plan).isEmpty, s"$joinType must not prune the preserved side")
      }
      assert(pruned > prunableJoins / 2, s"$pruned of $prunableJoins joins pruned")
    }
  }

  test("a split index on the join key prunes instead of the sketches") {
    hs.createIndex(big, DataSkippingIndexConfig("sjBoth", MinMaxSketch("id")))
    hs.createIndex(big, SplitIndexConfig("sjSplit", Seq("id")))
    try {
      val plan = sameResult(joined(dimOf(Seq(42, 1999))))
      assert(joinPruned(plan).isEmpty, plan.treeString)
      assert(bigScans(plan).exists(_.relation.fileFormat.isInstanceOf[SplitSeekParquetFormat]), plan.treeString)
    } finally drop("sjBoth", "sjSplit")
  }

  test("the audit fails a pruning that left out a file holding a matching row, naming the index") {
    withIndex("sjAudit", MinMaxSketch("id")) {
      val entry = logOf("sjAudit").latestStable.get
      val (relation, fs) = big.queryExecution.analyzed.collectFirst { case FileRelation(r, fs) => (r, fs) }.get
      val condition = EqualTo(relation.output.find(_.name == "id").get, Literal(1234L))
      val files = fs.location.inputFiles.toSeq.map(f => new org.apache.hadoop.fs.Path(f).toString)
      val holding = filesHolding(Seq(1234)).head
      val (withRow, without) = files.partition(f => normalize(f) == holding)
      // Leaving out only files without the key passes; one with it fails, naming the index.
      DataSkippingAudit.check(spark, relation, fs, condition, "id = 1234", without, Seq(entry))
      val e = intercept[AuditFailure](
        DataSkippingAudit.check(spark, relation, fs, condition, "id = 1234", without.take(3) ++ withRow, Seq(entry)))
      assert(e.getMessage.contains("sjAudit") && e.getMessage.contains("id = 1234"), e.getMessage)
      // Off: nothing is read.
      withConf(AuditKey -> "0") {
        DataSkippingAudit.check(spark, relation, fs, condition, "id = 1234", withRow, Seq(entry))
      }
    }
  }
}
