package io.hyperspace.index.covering

import java.io.File

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.{In, Literal}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.functions.col

import io.hyperspace.dataskipping.DataSkippingTestSupport
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.RelationSkippingStats
import io.hyperspace.rules.{AuditFailure, CoveringJoinAudit}
import io.hyperspace.shims.FileRelation
import io.hyperspace.testing.Fuzz

/**
 * Join pruning by a covering index's buckets: the big side of a join with a broadcast reads only
 * the source files that the index (led by the join key, with lineage) names for the broadcast's
 * keys, plus the files it does not cover. Four buckets, eight source files of 50 contiguous ids;
 * the audit is on (every file left out re-read) in the whole suite.
 */
class CoveringJoinPruningSuite extends DataSkippingTestSupport {

  private val AuditKey = "spark.hyperspace.audit.sampleRate"
  private val EnabledKey = "spark.hyperspace.index.covering.joinPruning.enabled"
  private val MaxKeysKey = "spark.hyperspace.index.covering.joinPruning.maxKeys"
  private val MaxReadKey = "spark.hyperspace.index.covering.joinPruning.maxReadFraction"

  /** Eight files of 50 contiguous ids (0 to 399), `k` a few values, `pad` wide (the scan outweighs the small side). */
  private def writeBig(name: String): File = {
    val dir = new File(newDir(name), "data")
    spark.range(0, 400, 1, 8).selectExpr("id", "CAST(id % 7 AS INT) AS k",
      "CONCAT(sha2(CAST(id AS STRING), 256), sha2(CAST(id + 1 AS STRING), 256)) AS pad")
      .write.parquet(dir.getAbsolutePath)
    dir
  }

  private lazy val bigDir: File = writeBig("cover-big")

  /** The small side: `id2` 0 to 449 (fifty keys the big side lacks) and a NULL, `dname` one per row. */
  private lazy val dimPath: String = {
    val path = newDir("cover-dim").getAbsolutePath + "/data"
    spark.range(0, 451, 1, 1).selectExpr(
      "CASE WHEN id = 450 THEN NULL ELSE id END AS id2", "CONCAT('n', id) AS dname").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(AuditKey, "1.0") // join pruning is on by default
    // Over 8 files the default (0.25) allows 2 keys (the first test checks it); the generated joins take more.
    spark.conf.set(MaxReadKey, "1.0")
  }

  private def dim: DataFrame = spark.read.parquet(dimPath)

  /** The small side filtered on its names: a filter on `id2` would be inferred onto the big side's `id`. */
  private def dimOf(keys: Seq[Int]): DataFrame = dim.where(s"dname IN (${keys.map(k => s"'n$k'").mkString(", ")})")

  private def joined(big: DataFrame, small: DataFrame, how: String = "inner"): DataFrame =
    big.join(small, col("id") === col("id2"), how)

  private def bigScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.rootPaths.exists(_.toString.contains("cover-big")) => s
  }

  /** The statistics of the big side's scan when a covering index's buckets pruned it at run time. */
  private def bucketPruned(plan: SparkPlan): Option[RelationSkippingStats] =
    bigScans(plan).map(_.relation.location).collectFirst { case c: CoveringJoinFileIndex => c.stats }

  private def bigFilesRead(plan: SparkPlan): Long = bigScans(plan).map(_.metrics("numFiles").value).sum

  /** The files of `big` holding a row with one of `keys` (Hyperspace off). */
  private def filesHolding(big: DataFrame, keys: Seq[Int]): Set[String] =
    if (keys.isEmpty) Set.empty else filesWithRows(big.where(s"id IN (${keys.mkString(", ")})"))

  private def withIndex(name: String, big: DataFrame, lineage: Boolean = true, included: Seq[String] = Seq("k"))(
      body: => Unit): Unit = {
    hs.createIndex(big, IndexConfig(name, Seq("id"), included, numBuckets = Some(4), lineage = Some(lineage)))
    try body
    finally drop(name)
  }

  test("an inner join reads only the source files the index's buckets name for the broadcast's keys") {
    val big = read(bigDir)
    withIndex("cjInner", big) {
      val keys = Seq(17, 260, 430) // 430: in no file of the big side
      val plan = sameResult(joined(big, dimOf(keys)))
      // The session's last query (sameResult's run with Hyperspace on) reports the pruning done at run time.
      val Seq(last) = hs.lastQuerySkippingStats
      assert(last.filesRead == 2 && last.filter.contains("join key"), last)
      val stats = bucketPruned(plan).getOrElse(fail(s"not pruned\n${plan.treeString}"))
      assert(filesHolding(big, keys).size == 2)
      assert(bigFilesRead(plan) == 2 && stats.filesRead == 2 && stats.filesSkipped == 6, stats)
      assert(stats.filter.startsWith("id IN (the 3 join key(s) of the other side)"), stats.filter)
      assert(stats.indexes.map(_.index) == Seq("cjInner"), stats)
      // The executed plan names the file index; its description, what pruned it.
      assert(plan.treeString.contains("Location: CoveringJoinFileIndex"), plan.treeString)
      assert(bigScans(plan).head.relation.location.toString ==
        "CoveringJoinFileIndex(2 of 8 files; join keys by the buckets of cjInner)")
      val why = withHyperspace(on = true)(hs.whyNot(joined(big, dimOf(keys)), "cjInner"))
      assert(why.contains("decides at run time") && why.contains("buckets") && why.contains(MaxKeysKey), why)
      // Off, more keys than allowed, or an index read costing more than allowed: no pruning (the
      // rows of these runs are the plain scan's; the differential test below compares rows).
      def unpruned(conf: (String, String)*): Unit = withConf(conf: _*) {
        val p = withHyperspace(on = true) {
          val df = joined(big, dimOf(keys))
          df.collect()
          executed(df)
        }
        assert(bucketPruned(p).isEmpty && bigFilesRead(p) == 8, s"$conf\n${p.treeString}")
      }
      unpruned(EnabledKey -> "false")
      unpruned(MaxKeysKey -> "2")
      unpruned(MaxReadKey -> "0.0")
      // At the default fraction 3 keys are expected to keep more than a quarter of the 8 files; 2 are not.
      unpruned(MaxReadKey -> "0.25")
      withConf(MaxReadKey -> "0.25") {
        val two = sameResult(joined(big, dimOf(Seq(17, 260))))
        assert(bigFilesRead(two) == 2, two.treeString)
        val many = withHyperspace(on = true)(hs.whyNot(joined(big, dimOf(keys)), "cjInner"))
        assert(many.contains("at most 2 distinct keys"), many)
      }
      withConf(MaxReadKey -> "0.1") {
        val why = withHyperspace(on = true)(hs.whyNot(joined(big, dimOf(keys)), "cjInner"))
        assert(why.contains("expected to keep more than"), why)
      }
      // Keys in every file: nothing left out, the scan left as planned.
      val everywhere = (0 until 8).map(_ * 50 + 3)
      val p = sameResult(joined(big, dimOf(everywhere)))
      assert(bucketPruned(p).isEmpty && bigFilesRead(p) == 8, p.treeString)
    }
  }

  test("differential: generated keys and join types; only where the big side is not preserved") {
    val big = read(bigDir)
    withIndex("cjDiff", big) {
      val random = new Random(Fuzz.seed(23L))
      val count = Fuzz.queries(8)
      // An outer join broadcasts its non-preserved side, here the big one: only inner and semi joins prune.
      val prunable = Set("inner", "left_semi", "inner_swapped")
      val joinTypes = Seq("inner", "left_semi", "left_anti", "left_outer", "full_outer", "right_outer",
        "inner_swapped", "left_outer_swapped")
      var pruned = 0
      var prunableJoins = 0
      (1 to count).foreach { i =>
        // Up to 14 keys: more than 10 are looked up as a set, not an IN list.
        val keys = Seq.fill(1 + random.nextInt(if (i % 3 == 0) 14 else 3))(random.nextInt(460))
        val small = if (i % 4 == 1) dimOf(keys).union(dim.where("id2 IS NULL")) else dimOf(keys)
        val joinType = joinTypes(i % joinTypes.size)
        val query = () =>
          joinType match {
            case "inner_swapped" => small.join(big, col("id") === col("id2"))
            case "left_outer_swapped" => small.join(big, col("id") === col("id2"), "left_outer")
            case t => joined(big, small, t)
          }
        val plan = sameResult(query())
        if (prunable(joinType)) {
          prunableJoins += 1
          val holding = filesHolding(big, keys)
          bucketPruned(plan) match {
            case Some(stats) =>
              pruned += 1
              assert(bigFilesRead(plan) == holding.size && stats.filesRead == holding.size,
                s"$joinType, keys $keys: $stats, holding $holding")
            case None =>
              // Adaptive execution drops a join with an empty side; else nothing was left out.
              assert(bigScans(plan).isEmpty || holding.size == 8, s"$joinType $keys\n${plan.treeString}")
          }
        } else assert(bucketPruned(plan).isEmpty, s"$joinType must not prune the preserved side")
      }
      assert(pruned > 0 && pruned >= prunableJoins / 2, s"$pruned of $prunableJoins joins pruned")
    }
  }

  test("no lineage: not pruned, and whyNot says why; an index the covering rules read instead is not probed") {
    val big = read(bigDir)
    val keys = Seq(5, 333)
    withIndex("cjNoLineage", big, lineage = false) {
      val plan = sameResult(joined(big, dimOf(keys)))
      assert(bucketPruned(plan).isEmpty && bigFilesRead(plan) == 8, plan.treeString)
      val why = withHyperspace(on = true)(hs.whyNot(joined(big, dimOf(keys)), "cjNoLineage"))
      assert(why.contains("no lineage") && why.contains("spark.hyperspace.index.lineage.enabled"), why)
    }
    withIndex("cjCovers", big) {
      // The covering rules read the index in place of the scan (the broadcast's probes in key order).
      val plan = sameResult(joined(big.select("id", "k"), dimOf(keys)))
      assert(bucketPruned(plan).isEmpty && indexesUsed(plan) == Seq("cjCovers"), plan.treeString)
      // A filter on another column: no covering rule reads the index (it is not led by `k`), the buckets prune.
      val filtered = sameResult(joined(big.where("k > 2").select("id", "k"), dimOf(keys)))
      assert(indexesUsed(filtered).isEmpty && bucketPruned(filtered).isDefined && bigFilesRead(filtered) == 2,
        filtered.treeString)
    }
  }

  test("files appended since the build are read, deleted ones are not listed") {
    val dir = writeBig("cover-big-changed")
    withIndex("cjChanged", read(dir)) {
      // Appended: ids 17 and 300 again in a file of their own, which the index does not cover.
      spark.range(0, 2, 1, 1).selectExpr("IF(id = 0, 17L, 300L) AS id", "CAST(id AS INT) AS k", "'appended' AS pad")
        .write.mode("append").parquet(dir.getAbsolutePath)
      // Deleted: the file of ids 100 to 149.
      val deleted = dataFiles(dir).find(f => filesHolding(read(dir), Seq(120)).contains(normalize(f.getPath))).get
      assert(deleted.delete())
      val keys = Seq(17, 120, 300)
      val big = read(dir)
      val plan = withHybridScan(sameResult(joined(big, dimOf(keys))))
      val stats = bucketPruned(plan).getOrElse(fail(s"not pruned\n${plan.treeString}"))
      // The files of 17 and 300, and the appended one; 8 - 1 + 1 listed.
      assert(filesHolding(big, keys).size == 3)
      assert(bigFilesRead(plan) == 3 && stats.filesTotal == 8 && stats.filesSkipped == 5, stats)
      // Without hybrid scan too: the pruning does not use the index in place of the source.
      assert(bucketPruned(sameResult(joined(big, dimOf(keys)))).isDefined)
    }
  }

  test("the audit fails a pruning that left out a file holding a matching row, naming the index") {
    val big = read(bigDir)
    withIndex("cjAudit", big) {
      val entry = logOf("cjAudit").latestStable.get
      val (relation, fs) = big.queryExecution.analyzed.collectFirst { case FileRelation(r, fs) => (r, fs) }.get
      val condition = In(relation.output.find(_.name == "id").get, Seq(Literal(123L)))
      val files = fs.location.inputFiles.toSeq.map(f => new org.apache.hadoop.fs.Path(f).toString)
      val holding = filesHolding(big, Seq(123)).head
      val (withRow, without) = files.partition(f => normalize(f) == holding)
      CoveringJoinAudit.check(spark, relation, fs, condition, "id IN (123)", without, entry)
      val e = intercept[AuditFailure](
        CoveringJoinAudit.check(spark, relation, fs, condition, "id IN (123)", without.take(2) ++ withRow, entry))
      assert(e.getMessage.contains("cjAudit") && e.getMessage.contains("id IN (123)"), e.getMessage)
      withConf(AuditKey -> "0")(CoveringJoinAudit.check(spark, relation, fs, condition, "id IN (123)", withRow, entry))
    }
  }
}
