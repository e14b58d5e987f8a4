package io.hyperspace.sources

import java.io.File

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.{EqualTo, Literal}
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.functions.col

import io.hyperspace.HyperspaceException
import io.hyperspace.dataskipping.SkippingStatsSupport
import io.hyperspace.index.dataskipping.{BloomFilterSketch, DataSkippingIndexConfig, DataSkippingStats, MinMaxSketch, RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.rules.DataSkippingRule
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.delta.DeltaReads

/**
 * Data skipping indexes over Delta tables: the files a query reads are the table's files at the
 * scanned version, minus what Delta's own pruning leaves out, minus what the sketches rule out,
 * with deletion vectors applied by Delta; the statistics report both prunings. Differentially
 * over appends, deletes with deletion vectors, updates, OPTIMIZE and time travel.
 */
class DeltaDataSkippingSuite extends SkippingStatsSupport {

  override protected def withDelta: Boolean = true

  private val TableFormatsKey = "spark.hyperspace.index.dataskipping.joinPruning.tableFormats.enabled"

  // Off by default (docs/configuration.md says why); the first join test checks the default.
  override protected def sessionConfig: Map[String, String] = Map(TableFormatsKey -> "true")

  // Generated queries per table version in the differential test: 2 in CI, 22 over its eleven
  // versions (`make test-full`: 4).
  private val checksPerVersion = sys.env.get("HYPERSPACE_DELTA_FUZZ_CHECKS").map(_.toInt).getOrElse(2)

  /**
   * A Delta table of 8 files of 50 rows, ids contiguous per file; `t` (= 10 * id) and `name`
   * follow the id, `k` does not. Delta keeps statistics of the first column (`id`) only.
   */
  private def table(name: String): String = {
    val dir = newDir(name).getAbsolutePath + "/table"
    spark.range(0, 400, 1, 8)
      .selectExpr("id", "CAST(id * 10 AS INT) AS t", "CONCAT('n', id) AS name", "CAST(pmod(hash(id), 23) AS INT) AS k")
      .write.format("delta")
      .option("delta.enableDeletionVectors", "true")
      .option("delta.dataSkippingNumIndexedCols", "1")
      .save(dir)
    dir
  }

  private def delta(path: String, version: Option[Long] = None): DataFrame =
    version.fold(spark.read.format("delta"))(v => spark.read.format("delta").option("versionAsOf", v)).load(path)

  private def skipping(name: String): DataSkippingIndexConfig =
    DataSkippingIndexConfig(name, MinMaxSketch("t"), BloomFilterSketch("name"))

  /**
   * The table and its index that the tests which only query them share, (table path, index name):
   * written and built once, as each of them wrote and indexed the same table of its own before.
   * The tests that change a table, or index it otherwise, have their own.
   */
  private lazy val shared: (String, String) = {
    val path = table("shared")
    hs.createIndex(delta(path), skipping("dds_shared"))
    (path, "dds_shared")
  }

  /** The small side of a join on `t`: `t2` = 0, 10, ..., 4490 (one Parquet file), `dname` one per row. */
  private lazy val dimPath: String = {
    val dim = newDir("join-dim").getAbsolutePath + "/data"
    spark.range(0, 450, 1, 1).selectExpr("CAST(id * 10 AS INT) AS t2", "CONCAT('d', id) AS dname").write.parquet(dim)
    dim
  }

  /**
   * `big` joined on `t` with the rows of the small side holding `ts`, filtered on its names: a
   * filter on `t2` would be inferred onto `t`, and planning's data skipping would serve it.
   */
  private def joinedOn(big: DataFrame, ts: Seq[Int], how: String = "inner"): DataFrame = {
    val small = spark.read.parquet(dimPath).where(s"dname IN (${ts.map(t => s"'d${t / 10}'").mkString(", ")})")
    big.join(small, col("t") === col("t2"), how)
  }

  /** The files the executed plan read of the table at `path`. */
  private def tableFilesRead(plan: SparkPlan, path: String): Long = plan.collect {
    case s: FileSourceScanExec if s.relation.location.rootPaths.exists(_.toString.contains(path)) =>
      s.metrics("numFiles").value
  }.sum

  /** The statistics of the table's scan when join pruning narrowed it at run time. */
  private def joinPruned(plan: SparkPlan): Option[RelationSkippingStats] = plan.collectFirst {
    case s: FileSourceScanExec if joinPruned(s).isDefined => joinPruned(s).get
  }

  private def joinPruned(scan: FileSourceScanExec): Option[RelationSkippingStats] = scan.relation.location match {
    case d: SkippedFilesIndex if d.forJoin => Some(d.stats)
    case _ => None
  }

  test("a join with a broadcast side reads only the Delta files whose sketches can hold its keys, " +
    "through Delta's scan, on top of Delta's pruning") {
    val (path, index) = shared
    // t = 10 * id, 50 ids per file: 1200 and 1300 are in file 2, 3300 in file 6, 4400 in none.
    val keys = Seq(1200, 1300, 3300, 4400)
    // What adaptive execution optimizes again at run time: Delta's PrepareDeltaScan has replaced the
    // table's file index with its pruning for the scan's filters (here `isnotnull(t)`).
    val prepared = withHyperspace(on = true)(joinedOn(delta(path), keys).queryExecution.optimizedPlan)
      .collectFirst {
        case FileRelation(_, fs) if fs.location.rootPaths.exists(_.toString.contains(path)) => fs.location
      }
    assert(prepared.exists(_.getClass.getSimpleName == "PreparedDeltaFileIndex"), prepared)
    // Off (the default), the Delta scan is left as planned, and whyNot promises nothing at run time.
    withConf(TableFormatsKey -> "false") {
      val unpruned = sameResult(joinedOn(delta(path), keys))
      assert(joinPruned(unpruned).isEmpty && tableFilesRead(unpruned, path) == 8, unpruned.treeString)
      val why = withHyperspace(on = true)(hs.whyNot(joinedOn(delta(path), keys), index))
      assert(!why.contains("decides at run time"), why)
    }
    val plan = sameResult(joinedOn(delta(path), keys))
    val stats = joinPruned(plan).getOrElse(fail(s"not pruned\n${plan.treeString}"))
    assert(tableFilesRead(plan, path) == 2, plan.treeString)
    assert(stats.filter.startsWith("t IN (the 4 join key(s) of the other side)"), stats.filter)
    assert(stats.formatPruning.exists(f => f.format == "delta" && f.filesPruned == 0 && f.filesSkippedAfter == 6),
      stats)
    // The scan is Delta's own file index (deletion vectors, column mapping), pruned for the join.
    assert(plan.collect { case s: FileSourceScanExec => s.relation.location }
        .exists(_.isInstanceOf[org.apache.spark.sql.delta.files.TahoeFileIndex]))
    // After the query ran, the session's statistics report it; whyNot says what happens at run time.
    withHyperspace(on = true)(joinedOn(delta(path), keys).collect())
    val Seq(last) = hs.lastQuerySkippingStats
    assert(last.filesRead == 2 && last.filter.contains("join key") && last.formatPruning.isDefined, last)
    val why = withHyperspace(on = true)(hs.whyNot(joinedOn(delta(path), keys), index))
    assert(why.contains("decides at run time") && why.contains("sketches"), why)
    // A scan pruned for the join is not pruned again when adaptive execution optimizes the rest of
    // the query after a later stage, even for a condition that would leave out more.
    val forJoin = plan.collectFirst { case s: FileSourceScanExec if joinPruned(s).isDefined => s.relation.location }.get
    val (relation, fs) = delta(path).queryExecution.analyzed.collectFirst { case FileRelation(r, fs) => (r, fs) }.get
    val narrower = EqualTo(relation.output.find(_.name == "t").get, Literal(1200))
    val entries = Seq(logOf(index).latestStable.get)
    assert(DataSkippingRule.pruneForJoin(spark, entries, narrower, Nil, relation, "t = 1200").isDefined)
    val again = FileRelation.withLocation(relation, fs, forJoin)
    assert(DataSkippingRule.pruneForJoin(spark, entries, narrower, Nil, again, "t = 1200").isEmpty)

    // A scan pruned while planning (t < 3000 by the sketches; Delta's own min/max of id >= 100
    // leaves out files 0 and 1) is pruned again from the whole table for the join: file 2 only.
    val planned = sameResult(joinedOn(delta(path).where("id >= 100 AND t < 3000"), keys))
    val fromPlanned = joinPruned(planned).getOrElse(fail(s"not pruned\n${planned.treeString}"))
    assert(tableFilesRead(planned, path) == 1, planned.treeString)
    assert(fromPlanned.formatPruning.exists(f => f.filesPruned == 2 && f.filesSkippedAfter == 5), fromPlanned)
  }

  test("join pruning over a Delta table reads the files changed since the index was built") {
    val path = table("join-dv")
    hs.createIndex(delta(path), skipping("dds_join_dv"))
    // New deletion vectors on files 1 (t = 600) and 2 (t = 1200), and one file appended (t 4000 to 4490).
    spark.sql(s"DELETE FROM delta.`$path` WHERE id IN (60, 120)")
    spark.range(400, 450, 1, 1).selectExpr("id", "CAST(id * 10 AS INT) AS t", "CONCAT('n', id) AS name",
      "CAST(pmod(hash(id), 23) AS INT) AS k").write.format("delta").mode("append").save(path)
    val keys = Seq(1200, 1300, 3300, 4100)
    val plan = sameResult(joinedOn(delta(path), keys))
    assert(joinPruned(plan).isDefined, plan.treeString)
    // Files 1 and 2 (another deletion vector than indexed), 6 (3300) and the appended file (4100).
    assert(tableFilesRead(plan, path) == 4, plan.treeString)
    // The deleted row stays deleted: 1200 joins with nothing.
    withHyperspace(on = true)(assert(joinedOn(delta(path), keys).where("t = 1200").count() == 0))
    // Time travel to the version the index was built from: pruned as it was then (files 2 and 6).
    val before = sameResult(joinedOn(delta(path, Some(0)), keys))
    assert(joinPruned(before).isDefined && tableFilesRead(before, path) == 2, before.treeString)
  }

  test("join pruning leaves a Delta scan alone for joins that keep its unmatched rows, and for too many keys") {
    val (path, _) = shared
    val keys = Seq(1200, 3300)
    def unpruned(how: String): Unit = {
      val plan = sameResult(joinedOn(delta(path), keys, how))
      assert(joinPruned(plan).isEmpty && tableFilesRead(plan, path) == 8, s"$how\n${plan.treeString}")
    }
    Seq("full_outer", "left_anti", "left_outer").foreach(unpruned)
    assert(joinPruned(sameResult(joinedOn(delta(path), keys, "left_semi"))).isDefined)
    withConf("spark.hyperspace.index.dataskipping.joinPruning.maxKeys" -> "1")(unpruned("inner"))
  }

  test("a Delta table's scan skips, beyond Delta's own pruning, the files the sketches rule out; both reported") {
    val (path, index) = shared

    // Delta keeps no statistics of t: it prunes nothing, the index 7 of the 8 files (ids 100-140 are in file 2).
    val r = pruned(delta(path).where("t BETWEEN 1000 AND 1400"), index)
    assert(r.filesTotal == 8 && r.filesSkipped == 7 && r.filesRead == 1, r.describe)
    assert(r.formatPruning.exists(f => f.format == "delta" && f.filesPruned == 0 && f.filesSkippedAfter == 7), r)

    // Delta prunes the files of id < 200 by its own min/max; of the other four, the index skips t >= 2500.
    val both = pruned(delta(path).where("id >= 200 AND t < 2500"), index)
    assert(both.formatPruning.exists(f => f.filesPruned == 4 && f.filesSkippedAfter == 3), both)
    assert(both.filesRead == 1, both.describe)

    // A point lookup through the bloom filter.
    assert(pruned(delta(path).where("name = 'n123'"), index).filesRead == 1)

    // The same files through the Python-facing JSON.
    assert(RelationSkippingStats.toJson(Seq(both)).contains("\"formatPruning\":{\"format\":\"delta\""))

    // When Delta's own pruning already leaves out every file the index would skip, the scan stays Delta's.
    val same = delta(path).where("id < 100 AND t < 1000")
    assert(statsOf(same).isEmpty)
    assert(hs.whyNot(same, index).contains("already leaves out every file"), hs.whyNot(same, index))
  }

  test("a MinMax sketch over a column Delta keeps min/max for is refused; other sketches on it are not") {
    val path = table("refuse")
    val e = intercept[HyperspaceException](
      hs.createIndex(delta(path), DataSkippingIndexConfig("dds_refuse", MinMaxSketch("id"), MinMaxSketch("t"))))
    assert(e.getMessage.contains("dds_refuse") && e.getMessage.contains("'id'"), e.getMessage)
    hs.createIndex(delta(path), DataSkippingIndexConfig("dds_bloom_id", BloomFilterSketch("id")))
    sameResult(delta(path).where("id = 77"))
  }

  test("files with deletion vectors are skipped by their sketches and read with their deletion vectors") {
    val path = table("dvs")
    spark.sql(s"DELETE FROM delta.`$path` WHERE t % 30 = 0") // every file gets a deletion vector
    assert(DeltaLog.forTable(spark, path).update().allFiles.collect().forall(_.deletionVector != null))
    hs.createIndex(delta(path), skipping("dds_dvs"))
    def q = delta(path).where("t BETWEEN 1200 AND 1300")
    val stats = pruned(q, "dds_dvs")
    assert(stats.filesSkipped == 7, stats.describe)
    // The deleted rows of the file read stay deleted: t = 1200 and 1290 were deleted.
    withHyperspace(on = true)(assert(q.where("t IN (1200, 1290)").count() == 0))
    // Another delete changes a file's deletion vector: that file is read whatever its sketch says.
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 5")
    val after = pruned(delta(path).where("t BETWEEN 1200 AND 1300"), "dds_dvs")
    assert(after.filesSkipped == 6, after.describe)
  }

  test("differential: generated filters over a Delta table through appends, deletes, updates, OPTIMIZE, " +
    "refresh and time travel") {
    val path = table("diff")
    hs.createIndex(delta(path), skipping("dds_diff"))
    val random = new Random(16)
    def filter(): String = random.nextInt(5) match {
      case 0 => val lo = random.nextInt(5000); s"t BETWEEN $lo AND ${lo + random.nextInt(800)}"
      case 1 => s"name = 'n${random.nextInt(500)}'"
      case 2 => s"name IN ('n${random.nextInt(500)}', 'n${random.nextInt(500)}') OR t > ${random.nextInt(6000)}"
      case 3 => s"id >= ${random.nextInt(400)} AND t < ${random.nextInt(5000)} AND k <> ${random.nextInt(23)}"
      case _ => s"NOT (t >= ${random.nextInt(4000)}) AND name LIKE 'n1%'"
    }
    var used = 0
    def check(version: Option[Long]): Unit = (1 to checksPerVersion).foreach { _ =>
      val f = filter()
      val stats = statsOf(delta(path, version).where(f).select("id", "t", "name"))
      used += stats.size
      stats.foreach(s => assert(s.formatPruning.isDefined, s"$f: ${s.describe}"))
    }
    check(None)
    val steps: Seq[String => Unit] = Seq(
      p =>
        spark.range(400, 500, 1, 2).selectExpr("id", "CAST(id * 10 AS INT) AS t", "CONCAT('n', id) AS name",
          "CAST(pmod(hash(id), 23) AS INT) AS k").write.format("delta").mode("append").save(p),
      p => spark.sql(s"DELETE FROM delta.`$p` WHERE k = 3 AND id < 250"),
      p => spark.sql(s"UPDATE delta.`$p` SET name = CONCAT(name, '!') WHERE id % 9 = 0 AND id >= 300"),
      _ => hs.refreshIndex("dds_diff", "incremental"),
      p => spark.sql(s"DELETE FROM delta.`$p` WHERE t BETWEEN 500 AND 800"),
      p => spark.sql(s"OPTIMIZE delta.`$p`"),
      _ => hs.refreshIndex("dds_diff", "incremental"))
    steps.foreach { step =>
      withHyperspace(on = true)(step(path))
      check(None)
    }
    val latest = DeltaLog.forTable(spark, path).update().version
    Seq(0L, latest / 2, latest - 1).foreach(v => check(Some(v)))
    assert(used > 5, s"the index pruned only $used of the queries")
  }

  test("the pruned scan is Delta's own file index, so Delta's planning (deletion vectors) still applies") {
    val path = table("index-class")
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 120")
    hs.createIndex(delta(path), skipping("dds_class"))
    withHyperspace(on = true) {
      val q = delta(path).where("t BETWEEN 1100 AND 1300")
      val location = q.queryExecution.optimizedPlan.collectFirst { case FileRelation(_, fs) => fs.location }.get
      assert(location.isInstanceOf[SkippedFilesIndex] &&
          location.isInstanceOf[org.apache.spark.sql.delta.files.TahoeFileIndex], location)
      assert(q.where("id = 120").count() == 0)
    }
  }

  test("the pruned scan reuses the pruning Delta did for the rule: running it plans no other scan of the snapshot") {
    // A filter no other test of the shared table plans (Delta's pruning for a filter is kept).
    val (path, _) = shared
    withHyperspace(on = true) {
      val before = DeltaReads.scansPlanned
      // Spark infers isnotnull(name) after the rule pruned the scan for name = 'n321'.
      val q = delta(path).where("name = 'n321'")
      assert(q.collect().map(_.getAs[Long]("id")).toSeq == Seq(321L))
      assert(DataSkippingStats.of(q.queryExecution).map(_.filesRead) == Seq(1))
      // The rule's own question only: the scan's files are those Delta kept for it, minus the skipped.
      assert(DeltaReads.scansPlanned - before == 1, DeltaReads.scansPlanned - before)
    }
  }

  test("refresh reads the table's changes from the Delta log's commits since the indexed version") {
    val path = table("fresh")
    hs.createIndex(delta(path),
      io.hyperspace.index.IndexConfig("dfresh", Seq("k"), Seq("id", "name"),
        lineage = Some(true)))
    spark.range(400, 450, 1, 1).selectExpr("id", "CAST(id * 10 AS INT) AS t", "CONCAT('n', id) AS name",
      "CAST(pmod(hash(id), 23) AS INT) AS k").write.format("delta").mode("append").save(path) // version 1
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 7") // version 2: a deletion vector on file 0
    val entry = logOf("dfresh").latestStable.get
    val listed = FileSource.of(delta(path), "dfresh").currentFiles
    val expected = SourceChanges.between(entry.source.files, listed)

    val result = hs.refreshIndex("dfresh", "incremental")
    assert(result.message.contains("from 2 commit(s) of the delta log (versions 1 to 2)"), result.message)
    assert(
      result.appendedFiles == expected.appended.size && result.deletedFiles == expected.deleted.size &&
        expected.appended.size == 2 && expected.deleted.size == 1, (result, expected.describe))
    // The refreshed entry records exactly the table's files, as a listing gives them.
    assert(logOf("dfresh").latestStable.get.source.files.map(_.key).sortBy(_.path) == listed.sortBy(_.path))
    val plan = sameResult(delta(path).where("k = 4").select("id", "name"))
    assert(indexesUsed(plan) == Seq("dfresh"), plan.treeString)

    // Quick refresh too, and the pending changes: from the commits.
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 130")
    val quick = hs.refreshIndex("dfresh", "quick")
    assert(quick.message.contains("from 1 commit(s) of the delta log (versions 3 to 3)"), quick.message)
  }

  test("refresh lists the table when the log's commits since the indexed version were cleaned up") {
    val path = table("cleaned")
    hs.createIndex(delta(path),
      io.hyperspace.index.IndexConfig("dclean", Seq("k"), Seq("id", "name"),
        lineage = Some(true)))
    spark.sql(s"DELETE FROM delta.`$path` WHERE id < 30") // 1
    spark.sql(s"UPDATE delta.`$path` SET name = 'x' WHERE id = 200") // 2
    val log = DeltaLog.forTable(spark, path)
    log.checkpoint(log.update())
    // What Delta's log cleanup does once the commits are older than delta.logRetentionDuration.
    val logDir = new File(path, "_delta_log")
    logDir.listFiles().filter(f => f.getName.matches("0+[01]\\.(json|crc)")).foreach(f => assert(f.delete()))
    DeltaLog.clearCache()
    val entry = logOf("dclean").latestStable.get
    val expected = SourceChanges.between(entry.source.files, FileSource.of(delta(path), "dclean").currentFiles)
    val result = hs.refreshIndex("dclean", "incremental")
    assert(result.message.contains("listed from the table's snapshot") && result.message.contains("cleaned up"),
      result.message)
    assert(result.appendedFiles == expected.appended.size && result.deletedFiles == expected.deleted.size)
    val plan = sameResult(delta(path).where("k = 4").select("id", "name"))
    assert(indexesUsed(plan) == Seq("dclean"), plan.treeString)
  }
}
