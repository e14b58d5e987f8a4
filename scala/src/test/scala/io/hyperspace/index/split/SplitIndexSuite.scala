package io.hyperspace.index.split

import scala.util.Random

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.{And, EqualTo, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.IntegerType

import io.hyperspace.HyperspaceException
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.LogEntry
import io.hyperspace.rules.{AuditFailure, RuleTestSupport, SplitSeekAudit}
import io.hyperspace.testing.Fuzz

class SplitIndexSuite extends RuleTestSupport {

  private val Rows = 6000
  private val AuditKey = "spark.hyperspace.audit.sampleRate"
  private val DriverReadKey = "spark.hyperspace.index.split.driverRead.maxBytes"

  // Small row groups, so each source file has many and a seek has something to choose among.
  private val smallRowGroups = Map("parquet.block.size" -> "4096", "parquet.page.size.row.check.min" -> "10",
    "parquet.page.size.row.check.max" -> "50", "parquet.page.size" -> "1024")

  /**
   * `id`; `k` an int key (a tenth NULL, each other value on about three rows, spread over all
   * files and row groups); `s` a string key of 300 values; wide padding columns, so `SELECT *`
   * is what a covering index would have to copy.
   */
  private def frame(from: Long, until: Long): DataFrame =
    spark.range(from, until, 1, 3).selectExpr(
      "id",
      "CASE WHEN id % 10 = 0 THEN NULL ELSE CAST(pmod(hash(id), 1800) AS INT) END AS k",
      "CONCAT('s', pmod(hash(id, 7), 300)) AS s",
      "CAST(pmod(hash(id, 3), 100000) AS DOUBLE) / 100 AS x",
      "REPEAT(CAST(id AS STRING), 5) AS pad")

  private def write(df: DataFrame, path: String, mode: String = "error"): Unit =
    df.write.mode(mode).options(smallRowGroups).parquet(path)

  private lazy val points: String = {
    val path = newDir("split").getAbsolutePath + "/data"
    write(frame(0, Rows), path)
    path
  }

  private def df: DataFrame = spark.read.parquet(points)

  /**
   * The split index on `k` of `points` that the tests which only read one share: built once, where
   * each of them built (and dropped) the same index of its own before. The tests that change an
   * index, or need theirs to be the only one of its source, build their own (over `pointsCopy`
   * when they need these rows).
   */
  private lazy val shared: String = {
    hs.createIndex(df, SplitIndexConfig("sShared", Seq("k")))
    "sShared"
  }

  /** The same rows as `points`, in a directory of their own (no shared index over them). */
  private lazy val pointsCopy: String = {
    val path = newDir("split-copy").getAbsolutePath + "/data"
    write(frame(0, Rows), path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(AuditKey, "1.0")
  }

  private def latest(name: String): LogEntry = logOf(name).latestStable.get

  private def seekScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.fileFormat.isInstanceOf[SplitSeekParquetFormat] => s
  }

  private def rowGroupsOf(file: String): Seq[(Int, Long, Long, Long, Long)] =
    SplitIndex.footerRowGroups(new Path(file), spark.sessionState.newHadoopConf())

  /**
   * The rows a seek for `filter` must read: those of every row group holding a row the filter
   * keeps, from the files' footers and Spark's own row indexes (no Hyperspace).
   */
  private def rowsInMatchingGroups(source: DataFrame, filter: String): (Long, Int) = {
    val hits = withHyperspace(on = false)(source.where(filter)
        .selectExpr("_metadata.file_path", "_metadata.row_index").collect())
      .map(r => (r.getString(0), r.getLong(1)))
    val groups = hits.groupBy(_._1).toSeq.flatMap { case (file, rows) =>
      val rgs = rowGroupsOf(new Path(new java.net.URI(file)).toString)
      rows.map { case (_, row) => rgs.find(g => row >= g._2 && row < g._2 + g._3).get }.distinct.map(g => (file, g))
    }
    (groups.map(_._2._3).sum, groups.size)
  }

  private def sourceRowGroups(path: String): Int =
    new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).map(f => rowGroupsOf(f.getPath).size).sum

  test("a build writes keys and locations, bucketed, with one row per source row") {
    val entry = latest(shared)
    assert(entry.index.kind == "SplitIndex")
    assert(indexRow(shared).getAs[String]("kindAbbr") == "SI")
    assert(sourceRowGroups(points) > 30, "the source needs many row groups for these tests")
    assert(entry.index.kindVersion == 3)
    val data = readIndexData(shared)
    // Kind version 3: a coarse row position; the row group's bytes in the row group table.
    assert(data.columns.toSeq == Seq("k", "_data_file_id", "_row_group", "_row_position"))
    assert(data.count() == Rows)
    val table = RowGroupTable.ofEntry(spark, entry)
    val per = SplitIndex.rowsPerPosition(entry.index).get
    // Every stored location is its row's: the row's key is at that position of that row group
    // (read from the source by Spark with its own row indexes), and the table agrees with the footer.
    val byId = entry.source.files.map(f => f.id -> f.path).toMap
    val sample = data.where("k IS NOT NULL").orderBy("k").limit(100).collect()
    // One read per source file of the sample's keys (not one job per sampled row).
    sample.groupBy(_.getLong(1)).foreach { case (fileId, located) =>
      val rgs = rowGroupsOf(byId(fileId))
      val rowsOfKey = withHyperspace(on = false)(spark.read.parquet(byId(fileId))
          .where(s"k IN (${located.map(_.getInt(0)).distinct.mkString(", ")})")
          .selectExpr("k", "_metadata.row_index").collect())
        .groupBy(_.getInt(0)).map { case (k, rows) => k -> rows.map(_.getLong(1)).toSeq }
      located.foreach { r =>
        val g = rgs(r.getInt(2))
        val info = table((fileId, r.getInt(2)))
        assert(info == RowGroupInfo(fileId, g._1, g._2, g._3, g._4, g._5), (info, g))
        val rows = rowsOfKey.getOrElse(r.getInt(0), Nil)
        assert(rows.exists(i => i >= g._2 && i < g._2 + g._3 && (i - g._2) / per == r.getInt(3)), (r, g, rows))
      }
    }
    // zstd-compressed index files.
    val file = entry.content.pathOf(entry.content.files.head).toString
    val footer = org.apache.parquet.hadoop.ParquetFileReader.open(
      org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(new Path(file), spark.sessionState.newHadoopConf()))
    try assert(footer.getFooter.getBlocks.get(0).getColumns.get(0).getCodec.name == "ZSTD")
    finally footer.close()
  }

  test("=, IN and a small range read only the row groups holding matches (counted rows, pushdown off)") {
    shared
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try {
      val total = df.count()
      for {
        filter <- Seq("k = 17", "k IN (3, 77, 1500, 1799)", "k BETWEEN 100 AND 102", "k = 17 AND x > 10")
        // The row groups holding matches, from the footers: once per filter, for both reads.
        (expectedRows, groups) = rowsInMatchingGroups(df, filter)
        inDriver <- Seq(false, true)
      } withConf(DriverReadKey -> (if (inDriver) "32m" else "0")) {
        val plan = sameResult(df.where(filter))
        val scans = seekScans(plan)
        assert(scans.size == 1, s"$filter: ${plan.treeString}")
        assert(groups > 0)
        // Only those row groups were read: the scan, or the driver-side read of it, produced
        // exactly their rows.
        val rowsRead = driverReads(plan) match {
          case Seq(read) => read.metrics("rowsRead").value
          case Nil => scans.head.metrics("numOutputRows").value
        }
        assert(driverReads(plan).size == (if (inDriver) 1 else 0), plan.treeString)
        assert(rowsRead == expectedRows, filter)
        assert(expectedRows < total / 5, filter)
        val format = scans.head.relation.fileFormat.asInstanceOf[SplitSeekParquetFormat]
        assert(format.rowGroups.values.map(_.size).sum == groups, filter)
      }
    } finally {
      spark.conf.unset("spark.sql.parquet.filterPushdown")
    }
  }

  test("a seek collected to the driver reads its row groups there, without a job; else as planned") {
    shared
    spark.conf.set(AuditKey, "0") // the audit counts rows with jobs
    try {
      def query = df.where("k IN (3, 77, 1500)")
      val plan = sameResult(query)
      val Seq(read) = driverReads(plan)
      val Seq(scan) = seekScans(plan)
      val seek = scan.relation.location.asInstanceOf[SplitSeekFileIndex].plan
      assert(read.metrics("numFiles").value == seek.filesRead.size)
      assert(read.metrics("filesSize").value == seek.bytesToRead)
      assert(read.metrics("numOutputRows").value == query.collect().length)
      assert(read.toString.contains("DriverIndexRead"), "explain names the driver-side read")
      // Each query created and planned before its jobs are counted (reading a schema may take a job).
      def jobs[T](q: DataFrame)(action: DataFrame => T): Int = {
        val p = planned(q)
        jobsDuring(action(p))
      }
      withHyperspace(on = true) {
        assert(jobs(query)(_.collect()) == 0)
        // Nor a broadcast of the Hadoop configuration, neither the lookup's (while planning) nor the
        // read's. (Created first: reading the source's schema broadcasts one.)
        val q = query
        assert(broadcastsDuring(q.collect()) == 0)
        assert(jobs(query.select("id", "pad"))(_.first()) == 0)
        assert(jobs(query.limit(2))(_.collect()) == 0)
        // Anything else runs the seek as a job: an operator above the scan, a non-deterministic
        // expression, file metadata the driver-side read does not produce.
        assert(jobs(query.orderBy("x"))(_.collect()) > 0)
        assert(driverReads(executed(query.selectExpr("id", "rand(1) AS r"))).isEmpty)
        assert(driverReads(executed(query.selectExpr("id", "_metadata.row_index"))).isEmpty)
      }
      sameResult(query.selectExpr("id", "k", "_metadata.row_index"))
      // The limit bounds the row groups' bytes (not the files'); 0 turns it off.
      withConf(DriverReadKey -> seek.bytesToRead.toString)(assert(driverReads(sameResult(query)).size == 1))
      withConf(DriverReadKey -> (seek.bytesToRead - 1).toString) {
        val plan = sameResult(query)
        assert(driverReads(plan).isEmpty && seekScans(plan).size == 1, plan.treeString)
      }
      withConf(DriverReadKey -> "0")(assert(driverReads(sameResult(query)).isEmpty))
      // More matching rows than driverRead.maxRows: the read stops and the seek runs as a job.
      withConf("spark.hyperspace.index.driverRead.maxRows" -> "2") {
        withHyperspace(on = true)(assert(jobs(query)(_.collect()) > 0))
        sameResult(query)
      }
    } finally {
      spark.conf.set(AuditKey, "1.0")
    }
  }

  /** `q`, planned: the jobs its collection starts are then its own, not the planning's. */
  private def planned(q: DataFrame): DataFrame = { q.queryExecution.executedPlan; q }

  test("differential: generated filters incl. NULLs, duplicates, strings and non-selective ones") {
    shared
    hs.createIndex(df, SplitIndexConfig("sDiffS", Seq("s")))
    try {
      val random = new Random(Fuzz.seed(19L))
      val count = Fuzz.queries(20)
      var seeks = 0
      var plain = 0
      var inDriver = 0
      (1 to count).foreach { _ =>
        val v = random.nextInt(1900) - 50
        val filter = random.nextInt(9) match {
          case 0 => s"k = $v"
          case 1 => s"k IN (${Seq.fill(1 + random.nextInt(6))(random.nextInt(1900)).mkString(", ")}, NULL)"
          case 2 => s"k BETWEEN $v AND ${v + random.nextInt(4)}"
          case 3 => "k IS NULL"
          case 4 => s"k <=> $v OR k <=> NULL"
          case 5 => s"s = 's${random.nextInt(320)}'"
          case 6 => s"k > $v" // mostly not selective: the plain scan
          case 7 => s"k = $v AND s > 's1'"
          case _ => s"k = $v OR x < 2"
        }
        val plan = sameResult(df.where(filter))
        if (seekScans(plan).nonEmpty) seeks += 1 else plain += 1
        if (driverReads(plan).nonEmpty) inDriver += 1
      }
      assert(seeks > count / 4 && plain > count * 3 / 40, s"$seeks seeks, $plain plain scans")
      assert(inDriver > count / 8, s"$inDriver of $seeks seeks read in the driver")
    } finally drop("sDiffS")
  }

  private def seekPlanOf(plan: SparkPlan): Option[SeekPlan] =
    seekScans(plan).headOption.map(_.relation.location.asInstanceOf[SplitSeekFileIndex].plan)

  test("the seek reads its locations from the index files directly; differential over filter shapes and key types") {
    val path = newDir("direct").getAbsolutePath + "/data"
    write(frame(0, Rows).selectExpr("*",
        "DATE_ADD(DATE'2020-01-01', CAST(pmod(hash(id, 11), 1500) AS INT)) AS d",
        "CAST(pmod(hash(id, 13), 1700) / 4 AS DECIMAL(10, 2)) AS m"), path)
    val source = spark.read.parquet(path)
    hs.createIndex(source, SplitIndexConfig("sDirK", Seq("k")))
    hs.createIndex(source, SplitIndexConfig("sDirS", Seq("s")))
    hs.createIndex(source, SplitIndexConfig("sDirKS", Seq("k", "s")))
    hs.createIndex(source, SplitIndexConfig("sDirD", Seq("d")))
    hs.createIndex(source, SplitIndexConfig("sDirM", Seq("m")))
    try {
      val filters = Seq(
        "k = 17", "k = 1799", "k = 5000", "k = NULL", "k IN (3, 77, 1500)", "k IN (4, NULL, 900)",
        "k BETWEEN 40 AND 42", "k IS NULL", "k <=> 33", "k <=> NULL", "k = 8 OR k = 1200", "k < 3",
        "k = 17 AND id > 100", "k = 17 AND s = 's5'", "k IN (17, 18) AND s > 's2'", "k = 17 AND s IS NOT NULL",
        "s = 's17'", "s IN ('s1', 's299', 'nope')", "s BETWEEN 's100' AND 's1001'", "s LIKE 's12%'", "s = ''",
        "d = DATE'2020-03-01'", "d BETWEEN DATE'2021-01-01' AND DATE'2021-01-02'", "d IN (DATE'2020-01-01')",
        "m = 12.25", "m IN (1.50, 2.25, 300.75)", "m BETWEEN 10 AND 10.5", "m > 424.5")
      val seeks = filters.map { filter =>
        val plan = sameResult(source.where(filter))
        seekPlanOf(plan).foreach(seek => assert(seek.directLookup, s"$filter: index not read directly"))
        filter -> seekPlanOf(plan).isDefined
      }
      val sought = seeks.filter(_._2).map(_._1)
      assert(sought.size >= 20, s"seeks for only: ${sought.mkString("; ")}")
      Seq("k IN (3, 77, 1500)", "s = 's17'", "k = 17 AND s = 's5'", "d = DATE'2020-03-01'", "m = 12.25")
        .foreach(f => assert(sought.contains(f), f))
      // The seek's location names the path taken.
      val location = seekScans(sameResult(source.where("k = 17"))).head.relation.location.toString
      assert(location.contains("index read directly"), location)
      // More index bytes than a driver-side read takes: the lookup runs as a query over the index,
      // with the same results (and no marker). In CI a filter of each key type and shape; every
      // filter under `make test-full`.
      val overJob = if (Fuzz.allSettings) filters
      else Seq("k = 5000", "k IN (4, NULL, 900)", "k IS NULL", "k = 17 AND s = 's5'", "s LIKE 's12%'",
        "d = DATE'2020-03-01'", "m > 424.5")
      withConf("spark.hyperspace.index.driverRead.maxBytes" -> "0") {
        overJob.foreach { filter =>
          val plan = sameResult(source.where(filter))
          // (A filter the logged key ranges rule out reads no index file at all, in neither path.)
          seekPlanOf(plan).foreach(seek => assert(!seek.directLookup || seek.rowGroups.isEmpty, filter))
          assert(seekPlanOf(plan).isDefined == sought.contains(filter), filter)
        }
      }
    } finally drop("sDirK", "sDirS", "sDirKS", "sDirD", "sDirM")
  }

  test("a direct lookup bounds its rows by maxLocations and fails on a missing index file") {
    // The index whose files this test deletes is the only one of its source.
    def df = spark.read.parquet(pointsCopy)
    hs.createIndex(df, SplitIndexConfig("sDirB", Seq("k")))
    try {
      assert(seekPlanOf(sameResult(df.where("k IN (3, 77)"))).exists(_.directLookup))
      withConf("spark.hyperspace.index.split.maxLocations" -> "2") {
        assert(seekPlanOf(sameResult(df.where("k IN (3, 77)"))).isEmpty)
        assert(hs.whyNot(df.where("k IN (3, 77)"), "sDirB").contains("maxLocations"))
      }
      val entry = latest("sDirB")
      val Some(buckets) = io.hyperspace.index.covering.IndexFileIndex.bucketsToRead(entry,
        Seq(EqualTo(df.queryExecution.analyzed.output.find(_.name == "k").get, Literal(3))))
      val files = entry.content.files.filter(f =>
        io.hyperspace.index.covering.CoveringIndex.bucketOf(f).forall(buckets.contains))
      assert(files.nonEmpty)
      files.foreach(f => assert(new java.io.File(new Path(entry.content.pathOf(f)).toUri.getPath).delete()))
      val plan = sameResult(df.where("k = 3"))
      assert(seekPlanOf(plan).isEmpty, plan.treeString)
      assert(hs.whyNot(df.where("k = 3"), "sDirB").contains("failed"))
    } finally drop("sDirB")
  }

  test("a lookup setting changed between two identical queries of one session decides the next one") {
    // Planning reuses a lookup for the same index, filter and listing: the settings it depends
    // on are part of what it is reused for, so each query below follows the settings of its own.
    shared
    // One analyzed filter planned again (as a catalog table's relation keeps its attributes):
    // the same condition, so the same lookup unless a setting differs.
    val filtered = df.where("k IN (3, 77)")
    val query = () => filtered.select("*")
    val maxLocations = "spark.hyperspace.index.split.maxLocations"
    withConf(maxLocations -> "2")(assert(seekPlanOf(sameResult(query())).isEmpty))
    assert(seekPlanOf(sameResult(query())).exists(_.directLookup))
    withConf(maxLocations -> "2")(assert(seekPlanOf(sameResult(query())).isEmpty))
    // No direct read of the index files above the index's driver-side read limit: a job looks them up.
    withConf("spark.hyperspace.index.driverRead.maxBytes" -> "0")(
      assert(seekPlanOf(sameResult(query())).exists(!_.directLookup)))
    assert(seekPlanOf(sameResult(query())).exists(_.directLookup))
    // A fraction of the source's bytes below what the located row groups read refuses the seek.
    val bytes = seekPlanOf(sameResult(query())).get.bytesToRead
    val sourceBytes = latest(shared).source.sizeInBytes
    withConf("spark.hyperspace.index.split.maxReadFraction" -> (bytes.toDouble / sourceBytes / 2).toString)(
      assert(seekPlanOf(sameResult(query())).isEmpty))
    assert(seekPlanOf(sameResult(query())).exists(_.directLookup))
  }

  test("a refresh between two queries of one session is seen by the next lookup") {
    val path = newDir("direct-refresh").getAbsolutePath + "/data"
    write(frame(0, 3000), path)
    val source = () => spark.read.parquet(path)
    hs.createIndex(source(), SplitIndexConfig("sDirR", Seq("k")))
    try {
      val query = () => source().where("k = 77777")
      assert(sameResult(query()).isInstanceOf[SparkPlan] && rowsOf(query()).isEmpty)
      (1 to 2).foreach { round =>
        write(frame(3000 * round, 3000 * round + 40).coalesce(1).selectExpr("id", "77777 AS k", "s", "x", "pad"), path,
          "append")
        hs.refreshIndex("sDirR", "incremental")
        val entry = latest("sDirR")
        val plan = sameResult(query())
        val seek = seekPlanOf(plan)
        assert(seek.exists(s => s.directLookup && s.wholeFiles.isEmpty), plan.treeString)
        // Every appended file holding the key is located by the refreshed version, none read whole.
        assert(seek.get.rowGroups.size == round, seek.get.rowGroups.keys)
        assert(withHyperspace(on = true)(query().count()) == 40 * round)
        assert(entry.id == latest("sDirR").id)
      }
    } finally drop("sDirR")
  }

  test("planning looks the index up once per filter, also when the seek does not pay") {
    shared
    spark.conf.set(AuditKey, "0")
    try withHyperspace(on = true) {
        // The optimizer runs the rule to a fixed point, several times; the lookup runs once.
        for (filter <- Seq("k = 17", "k > 10")) {
          // At most one job: a lookup of a few small index files is read in the driver, without one.
          assert(jobsWhilePlanning(df.where(filter)) <= 1, filter)
        }
      }
    finally spark.conf.set(AuditKey, "1.0")
  }

  private def splitConjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => splitConjuncts(a) ++ splitConjuncts(b)
    case other => Seq(other)
  }

  /** Jobs run while `query` is optimized (where the split index is looked up). */
  private def jobsWhilePlanning(query: DataFrame): Int = jobsDuring(query.queryExecution.optimizedPlan)

  test("a filter estimated to reach too many row groups runs no lookup; a selective one still seeks") {
    spark.conf.set(AuditKey, "0")
    try {
      val entry = latest(shared)
      val located = entry.content.files.map(_.stats.flatMap(_.locations))
      assert(located.forall(_.isDefined), entry.content.files)
      assert(entry.content.files.flatMap(_.stats).map(_.rowCount).sum == Rows)
      // 1800 keys (and NULL) over the buckets, about 3 rows each in as many row groups.
      val keys = located.flatten.map(_.keys).sum
      assert(keys > 1700 && keys < 1900, keys)
      val perKey = located.flatten.map(_.keyRowGroups).sum.toDouble / keys
      assert(perKey > 1.5 && perKey < 3.5, perKey)

      val wide = s"k IN (${(0 until 1800 by 6).mkString(", ")})"
      val narrow = "k IN (3, 77)"
      withHyperspace(on = true) {
        assert(jobsWhilePlanning(df.where(wide)) == 0, "the unselective IN-list looked the index up")
        jobsWhilePlanning(df.where(narrow))
      }
      assert(seekScans(sameResult(df.where(wide))).isEmpty)
      val why = hs.whyNot(df.where(wide), shared)
      assert(why.contains("estimated to read") && why.contains("300 key value(s)") &&
          why.contains("the index was not read"), why)
      assert(seekScans(sameResult(df.where(narrow))).size == 1)
      // Ranges of the int key: the keys in range from each index file's key range and key count.
      withHyperspace(on = true) {
        assert(jobsWhilePlanning(df.where("k > 10")) == 0, "the unselective range looked the index up")
      }
      val wideRange = hs.whyNot(df.where("k > 10"), shared)
      assert(wideRange.contains("estimated to read") && wideRange.contains("the index was not read"), wideRange)
      assert(seekScans(sameResult(df.where("k BETWEEN 100 AND 102"))).size == 1)
      def rangeEstimate(filter: String): SeekEstimate = SeekEstimate.of(entry, Seq("k"),
        df.where(filter).queryExecution.optimizedPlan.collectFirst { case Filter(c, _) => c }.toSeq
          .flatMap(splitConjuncts), spark.sessionState.conf.resolver, 1000000L, 0L).get
      // 1800 keys evenly over [0, 1799]: about 3 in [100, 102], 900 below 900, 1789 above 10.
      assert(rangeEstimate("k BETWEEN 100 AND 102").keys <= 10)
      val below = rangeEstimate("k < 900 AND 5 <= k").keys
      assert(below > 800 && below < 1000, below)
      assert(rangeEstimate("k > 10").keys > 1600)

      // A log written before the statistics (no `locations`) gives no estimate: the lookup decides.
      val old = entry.copy(content = entry.content.copy(files = entry.content.files.map(f =>
        f.copy(stats = f.stats.map(_.copy(locations = None))))))
      val onKeys = df.where(wide).queryExecution.analyzed.collectFirst { case Filter(c, _) => c }.toSeq
      val resolver = spark.sessionState.conf.resolver
      assert(SeekEstimate.of(old, Seq("k"), onKeys, resolver, 1000000L, 0L).isEmpty)
      val estimate = SeekEstimate.of(entry, Seq("k"), onKeys, resolver, 1000000L, 0L).get
      assert(estimate.keys == 300 && estimate.fraction > 0.9, estimate)
      // Files the index does not cover are read whole, and `= NULL` matches no row group.
      val k = df.queryExecution.analyzed.output.find(_.name == "k").get
      val nullKey = Seq(EqualTo(k, Literal(null, IntegerType)))
      assert(SeekEstimate.of(entry, Seq("k"), nullKey, resolver, 3000L, 1000L).map(_.fraction).contains(0.25))
    } finally spark.conf.set(AuditKey, "1.0")
  }

  test("non-selective filters keep the plain scan, and whyNot says why") {
    shared
    assert(seekScans(sameResult(df.where("k > 10"))).isEmpty)
    assert(hs.whyNot(df.where("k > 10"), shared).contains("spark.hyperspace.index.split.maxReadFraction"))
    assert(hs.whyNot(df.where("x > 10"), shared).contains("no condition on the key columns"))
    spark.conf.set("spark.hyperspace.index.split.maxLocations", "2")
    try {
      assert(seekScans(sameResult(df.where("k IN (1, 2, 3, 4, 5)"))).isEmpty)
      assert(hs.whyNot(df.where("k IN (1, 2, 3, 4, 5)"), shared).contains("more than 2 index rows"))
    } finally spark.conf.unset("spark.hyperspace.index.split.maxLocations")
  }

  test("an index of kind version 1 (with `_row_index`) still seeks, refreshes and optimizes") {
    val path = newDir("v1").getAbsolutePath + "/data"
    write(frame(0, 3000), path)
    val source = () => spark.read.parquet(path)
    hs.createIndex(source(), SplitIndexV1Config("sV1", Seq("k")))
    try {
      val entry = latest("sV1")
      assert(entry.index.kind == "SplitIndex" && entry.index.kindVersion == 1)
      def data = readIndexData("sV1")
      assert(data.columns.contains("_row_index") && data.where("_row_index IS NULL").count() == 0)
      val query = () => source().where("k IN (5, 600, 1200) OR k = 77")
      assert(seekScans(sameResult(query())).size == 1)
      write(frame(3000, 3600), path, "append")
      hs.refreshIndex("sV1", "incremental")
      // The appended rows' files hold the row index too: one schema for every file of the index.
      assert(data.count() == source().count() && data.where("_row_index IS NULL").count() == 0)
      assert(seekScans(sameResult(query())).size == 1)
      hs.optimizeIndex("sV1", "full")
      assert(data.columns.contains("_row_index") && data.count() == source().count())
      assert(seekScans(sameResult(query())).size == 1)
      assert(indexRow("sV1").getAs[String]("kindAbbr") == "SI")
    } finally drop("sV1")
  }

  test("an index of kind version 2 (row group bytes per row) still seeks, refreshes and optimizes") {
    val path = newDir("v2").getAbsolutePath + "/data"
    write(frame(0, 3000), path)
    val source = () => spark.read.parquet(path)
    hs.createIndex(source(), SplitIndexV2Config("sV2", Seq("k")))
    try {
      val entry = latest("sV2")
      assert(entry.index.kind == "SplitIndex" && entry.index.kindVersion == 2)
      assert(SplitIndex.rowsPerPosition(entry.index).isEmpty)
      def data = readIndexData("sV2")
      assert(data.columns.toSeq == Seq("k", "_data_file_id", "_row_group", "_row_group_start", "_row_group_bytes"))
      val query = () => source().where("k IN (5, 600, 1200) OR k = 77")
      def check(): Unit = {
        val plan = sameResult(query())
        val Seq(scan) = seekScans(plan)
        val format = scan.relation.fileFormat.asInstanceOf[SplitSeekParquetFormat]
        assert(format.positioned == 0, "version 2 has no positions: whole row groups")
        driverReads(plan).foreach(r => assert(r.metrics("rowGroupsByPages").value == 0))
      }
      check()
      write(frame(3000, 3600), path, "append")
      hs.refreshIndex("sV2", "incremental")
      assert(data.count() == source().count() && data.where("_row_group_bytes IS NULL").count() == 0)
      check()
      hs.optimizeIndex("sV2", "full")
      assert(data.columns.contains("_row_group_bytes") && data.count() == source().count())
      check()
    } finally drop("sV2")
  }

  // Row groups of thousands of rows in pages of at most 200 rows: a located row's 1,024-row range
  // lies in a few of a row group's pages.
  private val smallPages = Map("parquet.block.size" -> "262144", "parquet.page.row.count.limit" -> "200",
    "parquet.page.size" -> "8192")

  private def pagedFrame(from: Long, until: Long): DataFrame =
    spark.range(from, until, 1, 2).selectExpr(
      "id",
      "CASE WHEN id % 10 = 0 THEN NULL ELSE CAST(pmod(hash(id), 50000) AS INT) END AS k",
      "CONCAT('s', pmod(hash(id, 7), 300)) AS s",
      "CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(pmod(hash(id, 3), 100000) AS DOUBLE) / 100 END AS x",
      "DATE_ADD(DATE'2020-01-01', CAST(pmod(id, 1000) AS INT)) AS d",
      "CASE WHEN id % 5 = 0 THEN NULL ELSE CAST(pmod(hash(id, 5), 1000000) AS DECIMAL(15, 2)) / 100 END AS dec",
      "TIMESTAMP_SECONDS(1600000000 + id * 37) AS ts",
      "REPEAT(CAST(id AS STRING), 3) AS pad")

  test("kind version 3: a driver-side seek reads only the pages of its located rows; differential") {
    val path = newDir("pages").getAbsolutePath + "/data"
    pagedFrame(0, 60000).write.options(smallPages).parquet(path)
    val source = () => spark.read.parquet(path)
    val files = new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).sortBy(_.getName)
    val groups = files.toSeq.map(f => rowGroupsOf(f.getPath))
    assert(groups.forall(_.size >= 2) && groups.flatten.forall(_._3 >= 4096), s"the test needs big row groups: $groups")
    hs.createIndex(source(), SplitIndexConfig("sPages", Seq("k")))
    // About ten row groups: a seek of a key (one or two rows) reads a tenth or a fifth of them.
    spark.conf.set("spark.hyperspace.index.split.maxReadFraction", "0.5")
    try {
      val random = new Random(Fuzz.seed(23L))
      val count = Fuzz.queries(12)
      def filters(n: Int): Seq[String] = Seq.fill(n) {
        val v = random.nextInt(50100) - 50
        random.nextInt(6) match {
          case 0 => s"k = $v"
          case 1 => s"k IN (${Seq.fill(1 + random.nextInt(2))(random.nextInt(50000)).mkString(", ")}, NULL)"
          case 2 => s"k = $v AND x IS NULL"
          case 3 => s"k <=> $v"
          case 4 => s"k BETWEEN $v AND ${v + 1}"
          case _ => s"k = $v AND d > DATE'2020-06-01'"
        }
      }
      /** (row groups read by pages, row groups read whole) over `fs`, each compared with Spark's result. */
      def run(fs: Seq[String]): (Long, Long) = fs.map { filter =>
        val plan = sameResult(source().where(filter))
        driverReads(plan) match {
          case Seq(read) =>
            val (byPages, whole) = (read.metrics("rowGroupsByPages").value, read.metrics("rowGroupsWhole").value)
            val seek = seekScans(plan).head.relation.location.asInstanceOf[SplitSeekFileIndex].plan
            if (whole == 0 && seek.wholeFiles.isEmpty) {
              // Exactly the rows of the located ranges were decoded, not their row groups.
              val ranges = seek.rowGroups.values.flatten.flatMap(_.rows).map { case (a, b) => b - a + 1 }.sum
              assert(read.metrics("rowsRead").value == ranges, filter)
              assert(ranges == 0 || ranges < seek.rowGroups.values.flatten.size * 4096L, filter)
            }
            (byPages, whole)
          case _ => (0L, 0L)
        }
      }.foldLeft((0L, 0L)) { case ((a, b), (c, d)) => (a + c, b + d) }
      val (byPages, whole) = run(filters(count))
      assert(byPages > count * 10 / 24, s"$byPages row groups read by pages, $whole whole")
      // The format's description says the rows were located within their row groups.
      val present = withHyperspace(on = false)(source().where("k IS NOT NULL").first().getAs[Int]("k"))
      val Seq(scan) = seekScans(sameResult(source().where(s"k = $present")))
      assert(scan.relation.fileFormat.toString.contains("only their pages"), scan.relation.fileFormat.toString)
      // The audit reads the located pages too: a position pointing at the wrong rows is caught.
      val optimized = withHyperspace(on = true)(source().where(s"k = $present").queryExecution.optimizedPlan)
      val (condition, sought) = optimized.collectFirst {
        case Filter(c, r: LogicalRelation) if seekLocation(r).isDefined => (c, r)
      }.getOrElse(fail(optimized.treeString))
      val location = seekLocation(sought).get
      val seekFs = sought.relation.asInstanceOf[HadoopFsRelation]
      val plainFs = seekFs.copy(location = location.delegate, fileFormat = new ParquetFileFormat)(spark)
      val plain = sought.copy(relation = plainFs)
      SplitSeekAudit.check(spark, plain, plainFs, sought, condition, location.plan, location.entry)
      val moved = location.plan.rowGroups.map { case (f, gs) =>
        f -> gs.map(g => g.copy(rows = g.rows.map { case (a, _) => if (a >= 2048) (0L, 1023L) else (2048L, 3071L) }))
      }
      val broken = location.plan.copy(rowGroups = moved)
      val brokenScan = sought.copy(relation = seekFs.copy(
        location = new SplitSeekFileIndex(location.delegate, broken, location.entry,
          () => spark.sessionState.newHadoopConf()),
        fileFormat = new SplitSeekParquetFormat(broken.rowGroups))(spark))
      val e = intercept[AuditFailure](
        SplitSeekAudit.check(spark, plain, plainFs, brokenScan, condition, broken, location.entry))
      assert(e.getMessage.contains("sPages") && e.getMessage.contains("by pages"), e.getMessage)
      // With the driver-side read off, a job reads the whole row groups: same rows.
      withConf(DriverReadKey -> "0")(
        filters(4).foreach(f => assert(driverReads(sameResult(source().where(f))).isEmpty)))

      // Appends and a delete: hybrid scan reads appended files whole, the rest by pages.
      pagedFrame(60000, 61000).write.mode("append").options(smallPages).parquet(path)
      assert(files.last.delete())
      // After each step fewer queries than above, of the same shapes; each step's still read some
      // row groups by pages.
      val after = if (Fuzz.allSettings) 10 else 5
      withHybridScan(run(filters(after)))
      hs.refreshIndex("sPages", "incremental")
      assert(readIndexData("sPages").count() == source().count())
      assert(run(filters(after))._1 > 0)
      hs.optimizeIndex("sPages", "full")
      assert(run(filters(after))._1 > 0)
      hs.refreshIndex("sPages", "full")
      assert(run(filters(after))._1 > 0)
    } finally {
      spark.conf.unset("spark.hyperspace.index.split.maxReadFraction")
      drop("sPages")
    }
  }

  test("a page read falls back to the whole row group when pages do not pay or the row group is not the one located") {
    val path = newDir("pagesFallback").getAbsolutePath + "/data"
    pagedFrame(0, 20000).coalesce(1).write.options(smallPages).parquet(path)
    val file = new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).head.getPath
    val Seq((ordinal, _, rows, start, bytes), _*) = rowGroupsOf(file)
    val schema = spark.read.parquet(path).schema
    val format = new SplitSeekParquetFormat(Map.empty)
    val conf = spark.sessionState.newHadoopConf()
    // Configures `conf` for the schema, as the driver-side read has it configured.
    format.buildReaderWithPartitionValues(spark, schema, new org.apache.spark.sql.types.StructType(), schema, Nil,
      Map(org.apache.spark.sql.execution.datasources.FileFormat.OPTION_RETURNING_BATCH -> "false"), conf)
    def readRows(group: RowGroupRange): (PageReadCounts, Seq[Long]) = {
      val counts = new PageReadCounts
      val out = SplitPageRead.reader(spark.sessionState.conf, Map.empty, schema, conf, counts)(
        new Path(file), Seq(group), _ => Iterator.empty).map(_.getLong(0)).toSeq
      (counts, out)
    }
    def read(group: RowGroupRange): (PageReadCounts, Int) = {
      val (counts, out) = readRows(group)
      (counts, out.size)
    }
    // The file's ids in row order (the first row group's first): a range's rows are known by their ids.
    assert(ordinal == 0 && rows > 2012, rowGroupsOf(file))
    val ids = spark.read.parquet(file).select("id").collect().map(_.getLong(0)).toSeq
    // Some rows of one page: by pages, those rows (and no more than the range).
    val (few, fewRows) = readRows(RowGroupRange(start, bytes, ordinal, Seq((10L, 20L))))
    assert(few.byPages == 1 && few.whole == 0 && few.rowsDecoded == 11 && fewRows == ids.slice(10, 21))
    // Overlapping ranges: each row once. Ranges on different pages: each range's own rows.
    assert(readRows(RowGroupRange(start, bytes, ordinal, Seq((10L, 20L), (15L, 25L))))._2 == ids.slice(10, 26))
    assert(readRows(RowGroupRange(start, bytes, ordinal, Seq((2010L, 2011L), (5L, 6L))))._2 ==
      ids.slice(5, 7) ++ ids.slice(2010, 2012))
    // Most of the row group: not worth it, read whole.
    val (most, _) = read(RowGroupRange(start, bytes, ordinal, Seq((0L, rows - 2))))
    assert(most.byPages == 0 && most.whole == 1)
    // A footer that no longer has that row group at that ordinal: whole (Spark's reader by bytes).
    val (moved, _) = read(RowGroupRange(start + 1, bytes, ordinal, Seq((10L, 20L))))
    assert(moved.byPages == 0 && moved.whole == 1)
  }

  test("lifecycle: refresh after append and delete (and hybrid scan before it), optimize, vacuum") {
    val path = newDir("lifecycle").getAbsolutePath + "/data"
    write(frame(0, 3000), path)
    val source = () => spark.read.parquet(path)
    hs.createIndex(source(), SplitIndexConfig("sLife", Seq("k")))
    try {
      val files = new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).sortBy(_.getName)
      write(frame(3000, 3150), path, "append") // small: appended files are read whole
      assert(files.head.delete())
      val query = () => source().where("k IN (5, 600, 1200)")
      // Stale: without hybrid scan the index is not used; with it, appended files are read whole.
      assert(seekScans(sameResult(query())).isEmpty)
      withHybridScan {
        val plan = sameResult(query())
        val seek = seekScans(plan)
        assert(seek.size == 1, plan.treeString)
        assert(seek.head.relation.location.asInstanceOf[SplitSeekFileIndex].plan.wholeFiles.nonEmpty)
        // The appended files, read whole, are read in the driver too.
        assert(driverReads(plan).size == 1, plan.treeString)
        withConf(DriverReadKey -> "0")(assert(driverReads(sameResult(query())).isEmpty))
      }
      hs.refreshIndex("sLife", "incremental")
      val refreshed = latest("sLife")
      assert(readIndexData("sLife").count() == source().count())
      assert(!refreshed.source.files.exists(_.path.endsWith(files.head.getName)))
      val after = seekScans(sameResult(query()))
      assert(after.size == 1 && after.head.relation.location.asInstanceOf[SplitSeekFileIndex].plan.wholeFiles.isEmpty)

      hs.optimizeIndex("sLife", "full")
      assert(latest("sLife").operation == "OPTIMIZE")
      assert(seekScans(sameResult(query())).size == 1)
      hs.refreshIndex("sLife", "full")
      assert(seekScans(sameResult(query())).size == 1)
      hs.deleteIndex("sLife")
      assert(seekScans(sameResult(query())).isEmpty)
      hs.restoreIndex("sLife")
      assert(seekScans(sameResult(query())).size == 1)
      drop("sLife")
      assert(!indexDir("sLife").exists() || versionDirs("sLife").isEmpty)
    } finally if (indexDir("sLife").exists() && hs.indexes.collect().exists(_.getAs[String]("name") == "sLife")) {
        drop("sLife")
      }
  }

  test("a covering index that covers the query wins; the split index serves SELECT *") {
    shared
    hs.createIndex(df, IndexConfig("cRank", Seq("k"), Seq("id")))
    try {
      val covered = sameResult(df.where("k = 42").select("id", "k"))
      assert(indexesUsed(covered) == Seq("cRank") && seekScans(covered).isEmpty)
      val all = sameResult(df.where("k = 42"))
      assert(indexesUsed(all).isEmpty && seekScans(all).size == 1)
      assert(hs.whyNot(df.where("k = 42"), "cRank").contains("pad"))
    } finally drop("cRank")
  }

  test("SQL and JSON build one through USING KIND; the log entry reads back") {
    val json = """{"name": "sSql", "indexedColumns": ["k"]}"""
    // Over the copy of the rows: the seek below is this index's, the only one of its source.
    spark.sql(s"CREATE HYPERSPACE INDEX sSql ON parquet.`$pointsCopy` USING KIND 'SplitIndex' CONFIG '$json'")
    try {
      val entry = latest("sSql")
      assert(entry.index.kind == "SplitIndex" && entry.index.lineage)
      assert(LogEntry.fromJson(entry.toJson, "test") == entry)
      assert(SplitIndexConfig.fromJson(json) == SplitIndexConfig("sSql", Seq("k")))
      assert(seekScans(sameResult(spark.read.parquet(pointsCopy).where("k = 9"))).size == 1)
    } finally drop("sSql")
  }

  test("the audit passes a correct seek and fails one that lost a matching row group, naming the index") {
    shared
    val query = df.where("k IN (77, 78, 79)")
    // The audit is on (sampleRate 1.0) for the whole suite: a correct seek plans and runs.
    val optimized = withHyperspace(on = true)(query.queryExecution.optimizedPlan)
    val (condition, sought) = optimized.collectFirst {
      case Filter(c, r: LogicalRelation) if seekLocation(r).isDefined => (c, r)
    }.getOrElse(fail(optimized.treeString))
    val location = seekLocation(sought).get
    val seekFs = sought.relation.asInstanceOf[HadoopFsRelation]
    val plainFs = seekFs.copy(location = location.delegate, fileFormat = new ParquetFileFormat)(spark)
    val plain = sought.copy(relation = plainFs)
    SplitSeekAudit.check(spark, plain, plainFs, sought, condition, location.plan, location.entry)
    // A seek that lost one matching row group (as a stale or damaged index would) is caught.
    val (file, groups) = location.plan.rowGroups.head
    val broken = location.plan.copy(rowGroups = location.plan.rowGroups.updated(file, groups.drop(1)))
    val brokenScan = sought.copy(relation = seekFs.copy(
      location = new SplitSeekFileIndex(location.delegate, broken, location.entry,
        () => spark.sessionState.newHadoopConf()),
      fileFormat = new SplitSeekParquetFormat(broken.rowGroups))(spark))
    val e = intercept[AuditFailure](
      SplitSeekAudit.check(spark, plain, plainFs, brokenScan, condition, broken, location.entry))
    assert(e.getMessage.contains(shared) && e.getMessage.contains("skipped rows"), e.getMessage)
  }

  private def seekLocation(r: LogicalRelation): Option[SplitSeekFileIndex] = r.relation match {
    case fs: HadoopFsRelation => Some(fs.location).collect { case s: SplitSeekFileIndex => s }
    case _ => None
  }

  test("bad input is refused with the index and column named, and nothing is written") {
    def refused(config: SplitIndexConfig, source: DataFrame = df): String = {
      val e = intercept[HyperspaceException](hs.createIndex(source, config))
      assert(!indexDir(config.name).exists() || versionDirs(config.name).isEmpty, e.getMessage)
      e.getMessage
    }
    val missing = refused(SplitIndexConfig("sBad1", Seq("nope")))
    assert(missing.contains("sBad1") && missing.contains("nope"), missing)
    val none = refused(SplitIndexConfig("sBad2", Nil))
    assert(none.contains("sBad2") && none.contains("at least one indexed column"), none)
    val text = newDir("text").getAbsolutePath + "/data"
    spark.range(10).selectExpr("CAST(id AS STRING) AS value").write.text(text)
    val format = refused(SplitIndexConfig("sBad3", Seq("value")), spark.read.text(text))
    assert(format.contains("sBad3") && format.contains("text") && format.contains("Parquet"), format)
    val clash = newDir("clash").getAbsolutePath + "/data"
    spark.range(10).selectExpr("id", "id AS _row_index").write.parquet(clash)
    val named = refused(SplitIndexConfig("sBad4", Seq("id")), spark.read.parquet(clash))
    assert(named.contains("sBad4") && named.contains("_row_index"), named)
    val bad = intercept[HyperspaceException](SplitIndexConfig.fromJson("""{"name": "x", "indexedColumns": "k"}"""))
    assert(bad.getMessage.contains("indexedColumns"))
  }
}
