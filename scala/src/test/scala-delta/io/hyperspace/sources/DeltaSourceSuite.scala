package io.hyperspace.sources

import java.io.File

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.delta.DeltaLog

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.sources.delta.DeltaReads
import io.hyperspace.testing.Fuzz

/**
 * Delta tables as first-class sources, differentially: after appends, deletes (with and without
 * deletion vectors), updates, merges, OPTIMIZE and time travel, every query returns the same
 * rows with Hyperspace on and off, and the index is used where it can serve the table.
 */
class DeltaSourceSuite extends RuleTestSupport {

  override protected def withDelta: Boolean = true

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.hyperspace.index.numBuckets", "4")
    spark.range(0, 60).selectExpr("CAST(id AS INT) AS k", "CONCAT('new', id) AS v")
      .createOrReplaceTempView("updates")
  }

  /** Generated rows (fixed seed): ids from `from`, k spread over 0..22 in every file. */
  private def rows(from: Long, n: Long, files: Int): DataFrame =
    spark.range(from, from + n, 1, files)
      .selectExpr("id", "CAST(pmod(hash(id, 7), 23) AS INT) AS k", "CONCAT('v', id) AS v")

  /** A Delta table of 4 files, with deletion vectors on or off. */
  private def table(name: String, dvs: Boolean): String = {
    val dir = newDir(name).getAbsolutePath + "/table"
    rows(0, 400, 4).write.format("delta").option("delta.enableDeletionVectors", dvs.toString).save(dir)
    dir
  }

  private def delta(path: String): DataFrame = spark.read.format("delta").load(path)

  private def lookup(df: DataFrame): DataFrame = df.where("k = 3").select("id", "v")

  private def createIndex(name: String, path: String, lineage: Boolean = true): Unit =
    hs.createIndex(delta(path), IndexConfig(name, Seq("k"), Seq("v", "id"), lineage = Some(lineage)))

  test("an index over a Delta table records the log's files and version, and serves its reads") {
    val path = table("basic", dvs = false)
    // Copy-on-write DELETE: the rewritten file stays in the directory, but not in the table.
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 5")
    createIndex("d_basic", path)
    val entry = logOf("d_basic").latestStable.get
    val snapshot = DeltaLog.forTable(spark, path).update()
    assert(entry.signature.provider == "DeltaVersion" && entry.signature.value == snapshot.version.toString)
    assert(entry.source.format == "delta")
    val logFiles = snapshot.allFiles.collect().map(f => new org.apache.hadoop.fs.Path(path, f.path).toUri.getPath)
    assert(entry.source.files.map(f => new org.apache.hadoop.fs.Path(f.path).toUri.getPath).sorted ==
      logFiles.toSeq.sorted)
    val dataFiles = new File(path).listFiles().count(_.getName.endsWith(".parquet"))
    assert(dataFiles > entry.source.files.size, "the test needs a removed file left in the directory")
    val plan = sameResult(lookup(delta(path)))
    assert(indexesUsed(plan) == Seq("d_basic"), plan.treeString)
  }

  test("an index created over an empty table refreshes: nothing changed, then its first rows") {
    val path = newDir("empty").getAbsolutePath + "/table"
    rows(0, 0, 1).write.format("delta").save(path) // a table of no data files
    assert(DeltaLog.forTable(spark, path).update().allFiles.isEmpty)
    createIndex("d_empty", path)
    for (mode <- Seq("incremental", "full", "quick")) {
      val result = hs.refreshIndex("d_empty", mode)
      assert(!result.changed && result.message.contains("up to date"), s"$mode: ${result.message}")
    }
    rows(0, 100, 2).write.format("delta").mode("append").save(path)
    assert(hs.refreshIndex("d_empty", "incremental").changed)
    val plan = sameResult(lookup(delta(path)))
    assert(indexesUsed(plan) == Seq("d_empty"), plan.treeString)
  }

  test("a Delta catalog table is indexed and served by name") {
    val path = table("named", dvs = false)
    spark.sql(s"CREATE TABLE d_named_t USING delta LOCATION '$path'")
    hs.createIndex(spark.table("d_named_t"), IndexConfig("d_named", Seq("k"), Seq("v", "id")))
    assert(logOf("d_named").latestStable.get.source.table.contains("spark_catalog.default.d_named_t") ||
      logOf("d_named").latestStable.get.source.table.exists(_.endsWith("d_named_t")))
    val plan = sameResult(lookup(spark.table("d_named_t")))
    assert(indexesUsed(plan) == Seq("d_named"), plan.treeString)
    spark.sql("INSERT INTO d_named_t VALUES (1000, 3, 'x')")
    hs.refreshIndex("d_named", "incremental")
    val after = sameResult(lookup(spark.table("d_named_t")))
    assert(indexesUsed(after) == Seq("d_named"), after.treeString)
  }

  // (label, command) run in turn on an indexed table; each changes rows of k = 3 (ids 0-99 are
  // the first of its four files, 100-199 the second, ...).
  private val commands: Seq[(String, String => Unit)] = Seq(
    "append" -> (p => rows(400, 100, 2).write.format("delta").mode("append").save(p)),
    "delete" -> (p => spark.sql(s"DELETE FROM delta.`$p` WHERE k = 3 AND id < 200")),
    "update" -> (p => spark.sql(s"UPDATE delta.`$p` SET v = CONCAT(v, '!') WHERE k = 3 AND id >= 200 AND id < 300")),
    "merge" ->
      (p =>
        spark.sql(
          s"""MERGE INTO delta.`$p` t USING updates s ON t.k = s.k AND t.id < 100
           |WHEN MATCHED AND s.k % 2 = 0 THEN DELETE
           |WHEN MATCHED THEN UPDATE SET v = s.v
           |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (1000 + s.k, s.k, s.v)""".stripMargin)),
    "optimize" -> (p => spark.sql(s"OPTIMIZE delta.`$p`")))

  for (dvs <- Seq(false, true)) {
    val mode = if (dvs) "with deletion vectors" else "without deletion vectors"
    test(s"Delta append, delete, update, merge and optimize $mode: same rows through a stale index, " +
      "hybrid scan and refresh; the commands leave the same table as without Hyperspace") {
      val (path, plain) = (table(s"dml-$dvs", dvs), table(s"dml-$dvs-off", dvs))
      val name = s"d_dml_$dvs"
      createIndex(name, path)
      // Without deletion vectors DELETE, UPDATE and MERGE all remove files and add their rewrites,
      // which the index meets the same way: in CI that mode runs the append, the delete and the
      // optimize, the mode with deletion vectors (where the three differ) every command; every
      // command in both under `make test-full`.
      val run = if (dvs || Fuzz.allSettings) commands
      else commands.filter { case (label, _) => Set("append", "delete", "optimize")(label) }
      for ((label, command) <- run) {
        // The command runs with Hyperspace on: its own reads are never served by the index.
        withHyperspace(on = true)(command(path))
        withHyperspace(on = false)(command(plain))
        assert(withHyperspace(on = false)(rowsOf(delta(path)) == rowsOf(delta(plain))), s"$label: other rows")
        val stale = sameResult(lookup(delta(path)))
        assert(indexesUsed(stale).isEmpty, s"$label: a stale index served the table without hybrid scan:\n$stale")
        withHybridScan {
          val hybrid = sameResult(lookup(delta(path)))
          assert(indexesUsed(hybrid) == Seq(name), s"$label: ${hybrid.treeString}")
        }
        hs.refreshIndex(name, "incremental")
        val refreshed = sameResult(lookup(delta(path)))
        assert(indexesUsed(refreshed) == Seq(name), s"$label: ${refreshed.treeString}")
      }
    }
  }

  test("an index built over a table whose files already carry deletion vectors keeps their rows deleted") {
    val path = table("dv-at-create", dvs = true)
    spark.sql(s"DELETE FROM delta.`$path` WHERE k = 3 AND id < 300")
    assert(DeltaLog.forTable(spark, path).update().allFiles.collect().exists(_.deletionVector != null))
    createIndex("d_dv_create", path, lineage = false)
    assert(logOf("d_dv_create").latestStable.get.source.files.exists(_.deletionVector.isDefined))
    val plan = sameResult(lookup(delta(path)))
    assert(indexesUsed(plan) == Seq("d_dv_create"), plan.treeString)
    // Another delete only adds to a deletion vector: the file is the same path, size and time.
    spark.sql(s"DELETE FROM delta.`$path` WHERE k = 3")
    withHybridScan {
      val after = sameResult(lookup(delta(path)))
      // Without lineage the index cannot drop the old rows of the re-masked files: not used.
      assert(indexesUsed(after).isEmpty, after.treeString)
    }
  }

  test("time travel uses the index version built from that table version, or an older one, never a newer") {
    val path = table("travel", dvs = true)
    createIndex("d_travel", path) // table version 0
    rows(400, 100, 2).write.format("delta").mode("append").save(path) // 1
    spark.sql(s"DELETE FROM delta.`$path` WHERE k = 3 AND id < 100") // 2
    hs.refreshIndex("d_travel", "incremental") // built from version 2
    rows(600, 50, 1).write.format("delta").mode("append").save(path) // 3
    val atCreate = logOf("d_travel").entries.filter(_.state == "ACTIVE").head.id
    val latest = logOf("d_travel").latestStable.get.id
    def at(version: Long) = lookup(spark.read.format("delta").option("versionAsOf", version).load(path))

    // Version 0: the entry built from it, exactly.
    assert(entriesUsed(sameResult(at(0))) == Seq(("d_travel", atCreate)))
    // Version 1: the older entry (version 0) with hybrid scan for the appended files, else none.
    assert(entriesUsed(sameResult(at(1))).isEmpty)
    withHybridScan(assert(entriesUsed(sameResult(at(1))) == Seq(("d_travel", atCreate))))
    // Version 2: the refreshed entry, exactly.
    assert(entriesUsed(sameResult(at(2))) == Seq(("d_travel", latest)))
    // Timestamp travel goes through the same version choice.
    val ts = DeltaLog.forTable(spark, path).history.getHistory(Some(10)).find(_.version.contains(2L)).get.timestamp
    def byTime = lookup(spark.read.format("delta").option("timestampAsOf", ts.toString).load(path))
    assert(entriesUsed(sameResult(byTime)) == Seq(("d_travel", latest)), hs.whyNot(byTime, "d_travel"))
    // The newest version: the refreshed entry with hybrid scan.
    withHybridScan(assert(entriesUsed(sameResult(lookup(delta(path)))) == Seq(("d_travel", latest))))

    // An index built only from version 3 never serves version 1, even with hybrid scan.
    createIndex("d_travel_new", path)
    withHybridScan {
      val old = sameResult(at(1))
      assert(!indexesUsed(old).contains("d_travel_new"), old.treeString)
    }
    assert(hs.whyNot(at(1), "d_travel_new").contains("newer than version 1"))
  }

  test(
    "issue 54 item 4: after DELETE and VACUUM RETAIN 0 HOURS the erased version fails as Delta's read does, and index vacuum drops its copy") {
    val path = table("erased", dvs = false)
    createIndex("d_erased", path) // table version 0, index data version 0
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 3") // 1: id 3's file rewritten without it
    hs.refreshIndex("d_erased", "full") // index data version 1
    // Delta lists the table for VACUUM in spark.sql.sources.parallelPartitionDiscovery.parallelism
    // tasks (10,000 by default, sized for big tables): a few for this one's few files.
    withConf("spark.databricks.delta.retentionDurationCheck.enabled" -> "false",
      "spark.sql.sources.parallelPartitionDiscovery.parallelism" -> "2") {
      spark.sql(s"VACUUM delta.`$path` RETAIN 0 HOURS").collect()
    }
    def erased = spark.read.format("delta").option("versionAsOf", 0).load(path).where("k = 3").select("id", "v")

    val plain = withHyperspace(on = false)(intercept[Exception](erased.collect()))
    val indexed = withHyperspace(on = true)(intercept[Exception](erased.collect()))
    assert(indexed.getClass == plain.getClass, s"${indexed.getMessage} vs ${plain.getMessage}")
    assert(hs.whyNot(erased, "d_erased").contains("erased"), hs.whyNot(erased, "d_erased"))
    // The newest version is served as before.
    assert(indexesUsed(sameResult(lookup(delta(path)))) == Seq("d_erased"))

    // The index's copy of version 0 goes with the table's, whatever the index's own retention.
    assert(versionDirs("d_erased") == Seq("v__=0", "v__=1"))
    spark.conf.set("spark.hyperspace.index.vacuum.retention", "168h")
    try hs.vacuumIndex("d_erased")
    finally spark.conf.unset("spark.hyperspace.index.vacuum.retention")
    assert(versionDirs("d_erased") == Seq("v__=1"))
    assert(rowsOf(lookup(delta(path))) == withHyperspace(on = false)(rowsOf(lookup(delta(path)))))
  }

  test("refresh after a quick refresh reads the Delta log's commits of the change, never every file of the table") {
    val path = table("cost", dvs = true)
    createIndex("d_cost", path)
    // What `body` gives, and the commit files and snapshot files it read from the Delta log.
    def read[T](body: => T): (T, Long, Long) = {
      val (commits, listed) = (DeltaReads.commitsRead, DeltaReads.snapshotFilesListed)
      val result = body
      (result, DeltaReads.commitsRead - commits, DeltaReads.snapshotFilesListed - listed)
    }
    rows(400, 40, 1).write.format("delta").mode("append").save(path) // version 1
    val (quick, quickCommits, quickListed) = read(hs.refreshIndex("d_cost", "quick").message)
    assert(quick.contains("from 1 commit(s) of the delta log (versions 1 to 1)"), quick)
    assert(quickCommits == 1 && quickListed == 0, s"$quickCommits commits, $quickListed files listed: $quick")
    spark.sql(s"DELETE FROM delta.`$path` WHERE id = 3") // version 2: a deletion vector on a file
    rows(500, 40, 1).write.format("delta").mode("append").save(path) // version 3
    // The file the quick refresh recorded is indexed now too: its AddFile comes from the commit
    // that added it (read again from the version the index's data was built from), not from a
    // listing of every file of the table.
    val (message, commits, listed) = read(hs.refreshIndex("d_cost", "incremental").message)
    assert(listed == 0 && commits == 3, s"$commits commits, $listed files listed: $message")
    assert(message.contains("3 appended and 1 deleted"), message)
    assert(message.contains("from 3 commit(s) of the delta log (versions 1 to 3)"), message)
    val entry = logOf("d_cost").latestStable.get
    assert(!entry.source.hasPendingChanges && !entry.extra.contains(FileSource.IndexedVersionKey))
    assert(entry.source.files.map(_.key).sortBy(_.path) == FileSource.of(delta(path), "d_cost").currentFiles)
    val plan = sameResult(lookup(delta(path)))
    assert(indexesUsed(plan) == Seq("d_cost"), plan.treeString)
  }

  test("a join of two Delta tables reads both indexes") {
    val (left, right) = (table("join-l", dvs = false), table("join-r", dvs = true))
    spark.sql(s"DELETE FROM delta.`$right` WHERE id % 5 = 0")
    createIndex("d_join_l", left)
    createIndex("d_join_r", right)
    val plan = sameResult(delta(left).select("k", "v").join(delta(right).select("k", "id"), "k"))
    assert(indexesUsed(plan) == Seq("d_join_l", "d_join_r"), plan.treeString)
    // The lakehouse bench's join and join_merge queries.
    assertBroadcastLeftToSparkUnlessMergeHinted(delta(left).select("k", "v"), delta(right).select("k", "id"), "k",
      Seq("d_join_l", "d_join_r"))
  }
}
