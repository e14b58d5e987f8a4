package io.hyperspace.index.split

import scala.util.Random

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

import io.hyperspace.rules.{AuditFailure, RuleTestSupport, SplitSeekAudit}
import io.hyperspace.testing.Fuzz

/**
 * The split index over CSV and JSON sources: file-level, its rows the distinct (key, file id)
 * pairs, a seek reading the located files whole with the scan's own format.
 */
class SplitIndexFileLevelSuite extends RuleTestSupport {

  private val AuditKey = "spark.hyperspace.audit.sampleRate"
  private val DriverReadKey = "spark.hyperspace.index.split.driverRead.maxBytes"
  private val Rows = 6000
  private val Files = 12

  /**
   * `k` clustered by file (file i of the first write holds keys 50 i to 50 i + 49, ten rows each;
   * every 97th row NULL), `r` in every file (40 values), `s` a string key clustered like `k`.
   */
  private def frame(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).selectExpr(
      "id",
      "CASE WHEN id % 97 = 0 THEN NULL ELSE CAST(id DIV 10 AS INT) END AS k",
      "CAST(pmod(hash(id), 40) AS INT) AS r",
      "CONCAT('s', CAST(id DIV 25 AS STRING)) AS s",
      "REPEAT(CAST(id AS STRING), 3) AS pad")

  private val Schema = "id BIGINT, k INT, r INT, s STRING, pad STRING"

  /** A source format: how to write a frame and read it back. */
  private case class Format(name: String, write: (DataFrame, String, String) => Unit, read: String => DataFrame)

  private val csv = Format("csv",
    (df, path, mode) => df.write.mode(mode).option("header", "true").csv(path),
    path => spark.read.schema(Schema).option("header", "true").csv(path))

  private val json = Format("json",
    (df, path, mode) => df.write.mode(mode).json(path),
    path => spark.read.schema(Schema).json(path))

  private def source(format: Format, rows: Long = Rows): String = {
    val path = newDir(s"split-${format.name}").getAbsolutePath + "/data"
    format.write(frame(0, rows, Files), path, "error")
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(AuditKey, "1.0")
  }

  private def seekScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[SplitSeekFileIndex] => s
  }

  private def seekPlanOf(scan: FileSourceScanExec): SeekPlan =
    scan.relation.location.asInstanceOf[SplitSeekFileIndex].plan

  private def fileName(path: String): String = new Path(new java.net.URI(path)).getName

  /** The names of the files holding a row `filter` keeps (Spark alone). */
  private def filesMatching(df: DataFrame, filter: String): Set[String] =
    withHyperspace(on = false)(df.where(filter).selectExpr("_metadata.file_path").distinct().collect())
      .map(r => fileName(r.getString(0))).toSet

  private def formatOf(df: DataFrame): Class[_] = df.queryExecution.analyzed.collectFirst {
    case r: LogicalRelation if r.relation.isInstanceOf[HadoopFsRelation] =>
      r.relation.asInstanceOf[HadoopFsRelation].fileFormat.getClass
  }.get

  private def seekRelation(r: LogicalRelation): Boolean = r.relation match {
    case fs: HadoopFsRelation => fs.location.isInstanceOf[SplitSeekFileIndex]
    case _ => false
  }

  private def dataFiles(path: String): Seq[java.io.File] =
    new java.io.File(path).listFiles().filter(f => !f.getName.startsWith(".") && !f.getName.startsWith("_")).toSeq

  test("a CSV or JSON build stores each (key, file) pair once; its table lists the files as whole units") {
    for (format <- Seq(csv, json)) {
      val path = source(format)
      val df = format.read(path)
      hs.createIndex(df, SplitIndexConfig("fBuild", Seq("k")))
      try {
        val entry = logOf("fBuild").latestStable.get
        assert(entry.index.kind == "SplitIndex" && SplitIndex.fileLevel(entry.index), format.name)
        val data = readIndexData("fBuild")
        assert(data.columns.toSeq == Seq("k", "_data_file_id"), format.name)
        val pairs = withHyperspace(on = false)(df.selectExpr("k", "_metadata.file_path").distinct().count())
        assert(data.count() == pairs && pairs < Rows / 5, format.name)
        // Every stored pair is true: the file with that id holds a row with that key.
        val byId = entry.source.files.map(f => f.id -> fileName(f.path)).toMap
        val stored = data.collect().map(r => (Option(r.get(0)).map(_.asInstanceOf[Int]), byId(r.getLong(1)))).toSet
        val actual = withHyperspace(on = false)(df.selectExpr("k", "_metadata.file_path").collect())
          .map(r => (Option(r.get(0)).map(_.asInstanceOf[Int]), fileName(r.getString(1)))).toSet
        assert(stored == actual, format.name)
        // One unit per source file, of its size; per-file location statistics for the estimate.
        assert(RowGroupTable.ofEntry(spark, entry).values.toSet ==
            entry.source.files.map(f => RowGroupInfo(f.id, 0, 0L, 0L, 0L, f.size)).toSet, format.name)
        assert(entry.content.files.forall(_.stats.exists(_.locations.exists(_.rowGroupBytes > 0))), format.name)
        assert(indexRow("fBuild").getAs[Map[String, String]]("additionalStats")("locations").contains("whole CSV"))
      } finally drop("fBuild")
    }
  }

  /** A filter over the frame's columns: on `k` or `s` alone (a seek when selective), or not. */
  private def generatedFilter(random: Random): String = {
    val v = random.nextInt(650) - 20
    random.nextInt(8) match {
      case 0 => s"k = $v"
      case 1 => s"k IN (${Seq.fill(1 + random.nextInt(3))(random.nextInt(620)).mkString(", ")}, NULL)"
      case 2 => s"k BETWEEN $v AND ${v + random.nextInt(30)}"
      case 3 => "k IS NULL"
      case 4 => s"s = 's${random.nextInt(250)}'"
      case 5 => s"r = ${random.nextInt(40)}" // no index on r: the plain scan
      case 6 => s"k = $v AND r > 10"
      case _ => s"k = $v OR r < 2" // not on the keys alone: the plain scan
    }
  }

  test("differential over CSV and JSON: generated filters; a seek reads exactly the files holding matches") {
    for (format <- Seq(csv, json)) {
      val df = format.read(source(format))
      hs.createIndex(df, SplitIndexConfig("fDiff", Seq("k")))
      hs.createIndex(df, SplitIndexConfig("fDiffS", Seq("s")))
      try {
        val random = new Random(Fuzz.seed(23L))
        // Per query: how it read the source ("plain", "job" or "driver"), checked on the way.
        val reads = (1 to Fuzz.queries(30)).map { i =>
          val filter = generatedFilter(random)
          withConf(DriverReadKey -> (if (i % 3 == 0) "0" else "32m")) {
            val plan = sameResult(df.where(filter))
            seekScans(plan) match {
              case Seq(scan) =>
                val seek = seekPlanOf(scan)
                assert(seek.rowGroups.isEmpty && scan.relation.fileFormat.getClass == formatOf(df), filter)
                // The files read are those holding a match (every file is indexed).
                assert(seek.wholeFiles.map(fileName) == filesMatching(df, filter), s"${format.name}: $filter")
                if (driverReads(plan).nonEmpty) "driver" else "job"
              case Nil => "plain"
              case more => fail(s"$filter: ${more.size} seeks in ${plan.treeString}")
            }
          }
        }
        val plain = reads.count(_ == "plain")
        assert(reads.size - plain > reads.size / 3 && plain > reads.size / 10, s"${format.name}: $reads")
        assert(reads.contains("driver") && reads.contains("job"), s"${format.name}: $reads")
      } finally drop("fDiff", "fDiffS")
    }
  }

  test("a filter reaching most files keeps the plain scan, and whyNot says why") {
    val df = csv.read(source(csv))
    hs.createIndex(df, SplitIndexConfig("fWide", Seq("r")))
    try {
      assert(seekScans(sameResult(df.where("r = 7"))).isEmpty)
      val why = hs.whyNot(df.where("r = 7"), "fWide")
      assert(why.contains("maxReadFraction"), why)
      // Three of the forty values still reach every file: the estimate refuses before the lookup.
      assert(seekScans(sameResult(df.where("r IN (1, 2, 3)"))).isEmpty)
    } finally drop("fWide")
  }

  test("join pruning reads only the CSV files holding the broadcast's keys") {
    val big = csv.read(source(csv))
    val dimPath = newDir("file-dim").getAbsolutePath + "/data"
    spark.range(0, 600).selectExpr("CAST(id AS INT) AS k2", "CONCAT('n', id) AS name").write.parquet(dimPath)
    hs.createIndex(big, SplitIndexConfig("fJoin", Seq("k")))
    try {
      val random = new Random(Fuzz.seed(7L))
      (1 to Fuzz.queries(6)).foreach { _ =>
        val keys = Seq.fill(1 + random.nextInt(3))(random.nextInt(600))
        val small = spark.read.parquet(dimPath).where(s"name IN (${keys.map(k => s"'n$k'").mkString(", ")})")
        val plan = sameResult(big.join(small, big("k") === small("k2")))
        val scans = seekScans(plan)
        assert(scans.size == 1, plan.treeString)
        // Audit on for the suite: the pruned files were re-read and agreed.
        assert(seekPlanOf(scans.head).wholeFiles.map(fileName) ==
            filesMatching(big, s"k IN (${keys.mkString(", ")})"), keys)
      }
    } finally drop("fJoin")
  }

  test("lifecycle over CSV: hybrid scan reads appended files whole; refresh, optimize, full refresh, restore") {
    val path = source(csv, 3000)
    val df = () => csv.read(path)
    hs.createIndex(df(), SplitIndexConfig("fLife", Seq("k")))
    try {
      val files = dataFiles(path).sortBy(_.getName)
      csv.write(frame(3000, 3100, 1), path, "append")
      assert(files.head.delete())
      val query = () => df().where("k IN (5, 120, 301)")
      assert(seekScans(sameResult(query())).isEmpty) // stale, hybrid scan off
      withHybridScan {
        val seek = seekScans(sameResult(query()))
        assert(seek.size == 1)
        val read = seekPlanOf(seek.head).wholeFiles.map(fileName)
        assert(read.size == 2 && !read.contains(files.head.getName), read) // k = 120's file and the new one
      }
      hs.refreshIndex("fLife", "incremental")
      val pairs = () => withHyperspace(on = false)(df().selectExpr("k", "_metadata.file_path").distinct().count())
      assert(readIndexData("fLife").count() == pairs())
      val after = seekScans(sameResult(query()))
      assert(after.size == 1 && seekPlanOf(after.head).wholeFiles.map(fileName) == filesMatching(df(),
        "k IN (5, 120, 301)"))
      hs.optimizeIndex("fLife", "full")
      assert(logOf("fLife").latestStable.get.operation == "OPTIMIZE")
      assert(readIndexData("fLife").count() == pairs())
      assert(seekScans(sameResult(query())).size == 1)
      // The optimized directory carries the files' units: the estimate still has its statistics.
      assert(RowGroupTable.ofEntry(spark, logOf("fLife").latestStable.get).size == dataFiles(path).size)
      hs.refreshIndex("fLife", "full")
      assert(seekScans(sameResult(query())).size == 1)
      hs.deleteIndex("fLife")
      assert(seekScans(sameResult(query())).isEmpty)
      hs.restoreIndex("fLife")
      assert(seekScans(sameResult(query())).size == 1)
    } finally drop("fLife")
  }

  test("the audit fails a file-level seek that lost a file holding a match, naming the index") {
    val path = source(json, 2000)
    val df = json.read(path)
    hs.createIndex(df, SplitIndexConfig("fAudit", Seq("k")))
    try {
      val optimized = withHyperspace(on = true)(df.where("k IN (7, 88)").queryExecution.optimizedPlan)
      val (condition, sought) = optimized.collectFirst {
        case Filter(c, r: LogicalRelation) if seekRelation(r) => (c, r)
      }.getOrElse(fail(optimized.treeString))
      val seekFs = sought.relation.asInstanceOf[HadoopFsRelation]
      val location = seekFs.location.asInstanceOf[SplitSeekFileIndex]
      assert(location.plan.wholeFiles.size == 2)
      val plainFs = seekFs.copy(location = location.delegate)(spark)
      val plain = sought.copy(relation = plainFs)
      SplitSeekAudit.check(spark, plain, plainFs, sought, condition, location.plan, location.entry)
      val broken = location.plan.copy(wholeFiles = location.plan.wholeFiles.drop(1))
      val brokenScan = sought.copy(relation = seekFs.copy(
        location = new SplitSeekFileIndex(location.delegate, broken, location.entry,
          () => spark.sessionState.newHadoopConf()))(spark))
      val e = intercept[AuditFailure](
        SplitSeekAudit.check(spark, plain, plainFs, brokenScan, condition, broken, location.entry))
      assert(e.getMessage.contains("fAudit") && e.getMessage.contains("skipped rows"), e.getMessage)
    } finally drop("fAudit")
  }

  test("formats without row groups or whole-file reads are refused, naming the index and the format") {
    val orc = newDir("orc").getAbsolutePath + "/data"
    spark.range(10).selectExpr("id", "id AS k").write.orc(orc)
    val e = intercept[io.hyperspace.HyperspaceException](
      hs.createIndex(spark.read.orc(orc), SplitIndexConfig("fOrc", Seq("k"))))
    assert(e.getMessage.contains("fOrc") && e.getMessage.contains("orc") && e.getMessage.contains("CSV"), e.getMessage)
    assert(!indexDir("fOrc").exists() || versionDirs("fOrc").isEmpty)
  }
}
