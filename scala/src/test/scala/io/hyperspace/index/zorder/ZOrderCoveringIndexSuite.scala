package io.hyperspace.index.zorder

import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.expr

import io.hyperspace.HyperspaceException
import io.hyperspace.execution.DriverIndexReadExec
import io.hyperspace.index.{CatalogVersion, IndexConfig, IndexDataFiles}
import io.hyperspace.log.LogEntry
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.testing.Fuzz

class ZOrderCoveringIndexSuite extends RuleTestSupport {

  private val TargetKey = "spark.hyperspace.index.zorder.targetFileSize"
  private val PageRowsKey = "spark.hyperspace.index.zorder.pageRows"
  private val DriverReadKey = "spark.hyperspace.index.driverRead.maxBytes"
  private val Rows = 6000

  /**
   * `id`; `a` skewed (half the rows 7, a tenth NULL, the rest spread over 0..999); `b` a double
   * spread over 0..1000; `s` a string of 500 values; `d` a date in 2024.
   */
  private lazy val points: String = {
    val path = newDir("points").getAbsolutePath + "/data"
    pointsFrame(0, Rows).write.parquet(path)
    path
  }

  private def pointsFrame(from: Long, until: Long): DataFrame =
    spark.range(from, until, 1, 4).selectExpr(
      "id",
      "CASE WHEN id % 10 = 0 THEN NULL WHEN id % 2 = 0 THEN 7 ELSE CAST(pmod(hash(id), 1000) AS INT) END AS a",
      "CAST(pmod(hash(id, 1), 100000) AS DOUBLE) / 100 AS b",
      "CONCAT('s', pmod(hash(id, 2), 500)) AS s",
      "DATE_ADD(DATE'2024-01-01', CAST(pmod(hash(id, 3), 365) AS INT)) AS d")

  private def df: DataFrame = spark.read.parquet(points)

  /** Creates index `config` over `source` with files of about `target` bytes. */
  private def create(source: DataFrame, config: ZOrderCoveringIndexConfig, target: String = "4k"): Unit = {
    spark.conf.set(TargetKey, target)
    try hs.createIndex(source, config)
    finally spark.conf.unset(TargetKey)
  }

  private def latest(name: String): LogEntry = logOf(name).latestStable.get

  test("a build writes bounded files, each with the ranges of the indexed columns in the log") {
    create(df, ZOrderCoveringIndexConfig("zBuild", Seq("a", "b"), Seq("id", "s", "d")))
    try {
      val entry = latest("zBuild")
      assert(entry.index.kind == "ZOrderCoveringIndex")
      assert(entry.content.files.size > 5, entry.content.files)
      val stats = entry.content.files.map(f => f -> f.stats.getOrElse(fail(s"no stats for ${f.path}")))
      assert(stats.map(_._2.rowCount).sum == Rows)
      // The recorded ranges are the files' own: read every file back.
      val actual = spark.read.parquet(entry.content.files.map(entry.content.pathOf): _*)
        .groupBy("_metadata.file_name")
        .agg(expr("count(1)"), expr("min(a)"), expr("max(a)"), expr("count(a)"), expr("min(b)"), expr("max(b)"))
        .collect().map(r => r.getString(0) -> r).toMap
      assert(actual.keySet == entry.content.files.map(_.name).toSet)
      stats.foreach { case (f, s) =>
        val row = org.apache.spark.sql.Row.fromSeq(actual(f.name).toSeq.tail)
        assert(s.rowCount == row.getLong(0))
        assert(s.columns("a").min == Option(row.get(1)).map(_.toString))
        assert(s.columns("a").max == Option(row.get(2)).map(_.toString))
        assert(s.columns("a").nullCount == row.getLong(0) - row.getLong(3))
        assert(s.columns("b").min.map(_.toDouble) == Option(row.get(4)).map(_.asInstanceOf[Double]))
        assert(s.columns("b").max.map(_.toDouble) == Option(row.get(5)).map(_.asInstanceOf[Double]))
      }
      // Each file is one sorted stretch of the curve: its rows' ranks of b are far from spanning
      // every file's, so files overlap little in b (here: a file spans well under half of b's range).
      val widths = stats.flatMap { case (_, s) =>
        for (lo <- s.columns("b").min; hi <- s.columns("b").max) yield hi.toDouble - lo.toDouble
      }
      assert(widths.count(_ < 500) > widths.size / 2, widths)
      assert(entry.toJson.contains("\"stats\""))
      assert(indexRow("zBuild").getAs[String]("kindAbbr") == "ZCI")
    } finally drop("zBuild")
  }

  test("a range on one indexed column reads only the files whose ranges overlap it") {
    create(df, ZOrderCoveringIndexConfig("zOne", Seq("a", "b"), Seq("id")))
    try {
      val entry = latest("zOne")
      val plan = sameResult(df.where("b BETWEEN 100 AND 180").select("id", "b"))
      assert(indexesUsed(plan) == Seq("zOne"))
      val overlapping = entry.content.files.count { f =>
        val b = f.stats.get.columns("b")
        b.min.exists(_.toDouble <= 180) && b.max.exists(_.toDouble >= 100)
      }
      assert(indexFilesRead(plan) == overlapping, plan.treeString)
      assert(overlapping < entry.content.files.size / 2, entry.content.files.map(_.stats))
    } finally drop("zOne")
  }

  test("a range checks the files it reads: one gone keeps the index out of the queries reading it only") {
    create(df, ZOrderCoveringIndexConfig("zHoles", Seq("b"), Seq("id")))
    try {
      val entry = latest("zHoles")
      def overlaps(f: io.hyperspace.log.ContentFile, lo: Double, hi: Double): Boolean = {
        val b = f.stats.get.columns("b")
        b.min.exists(_.toDouble <= hi) && b.max.exists(_.toDouble >= lo)
      }
      def narrow = df.where("b BETWEEN 100 AND 101").select("id", "b") // a file or two: each checked by itself
      def wide = df.where("b >= 500").select("id", "b") // more files than are checked one by one: a listing
      val (narrowFiles, wideFiles) = (entry.content.files.filter(overlaps(_, 100, 101)),
        entry.content.files.filter(overlaps(_, 500, Double.MaxValue)))
      assert(narrowFiles.size <= IndexDataFiles.MaxFilesCheckedOneByOne &&
          wideFiles.size > IndexDataFiles.MaxFilesCheckedOneByOne, entry.content.files.map(_.stats))
      assert(indexesUsed(sameResult(narrow)) == Seq("zHoles") && indexesUsed(sameResult(wide)) == Seq("zHoles"))
      def remove(f: io.hyperspace.log.ContentFile): Unit = {
        val file = new java.io.File(new java.net.URI(entry.content.pathOf(f)))
        assert(file.delete())
        new java.io.File(file.getParentFile, s".${file.getName}.crc").delete()
      }
      // A file only the wide range reads: the narrow one still uses the index, the wide one not.
      remove(wideFiles.filterNot(narrowFiles.contains).head)
      assert(indexesUsed(sameResult(narrow)) == Seq("zHoles"))
      assert(indexesUsed(sameResult(wide)).isEmpty)
      // A file the narrow range reads, overwritten with other bytes (another size): not used either.
      val victim = new java.io.File(new java.net.URI(entry.content.pathOf(narrowFiles.head)))
      java.nio.file.Files.write(victim.toPath, Array[Byte](1, 2, 3))
      new java.io.File(victim.getParentFile, s".${victim.getName}.crc").delete()
      assert(indexesUsed(sameResult(narrow)).isEmpty)
      assert(hs.whyNot(narrow, "zHoles").contains(victim.getName))
    } finally drop("zHoles")
  }

  /** The most rows in one page of any column of `entry`'s files, from the files' offset indexes. */
  private def maxPageRows(entry: LogEntry): Long = {
    val conf = spark.sessionState.newHadoopConf()
    entry.content.files.map { f =>
      val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(entry.content.pathOf(f)), conf))
      try {
        reader.getFooter.getBlocks.asScala.flatMap { block =>
          block.getColumns.asScala.flatMap { column =>
            val pages = reader.readOffsetIndex(column)
            assert(pages != null, s"no page index in ${f.path}")
            (0 until pages.getPageCount).map(i =>
              pages.getLastRowIndex(i, block.getRowCount) - pages.getFirstRowIndex(i) + 1)
          }
        }.max(Ordering.Long)
      } finally reader.close()
    }.max(Ordering.Long)
  }

  test("a range reads only the pages of a file that can match, in the driver and in a job, after refresh too") {
    val path = newDir("pages").getAbsolutePath + "/data"
    pointsFrame(0, 4000).write.parquet(path)
    val source = () => spark.read.parquet(path)
    spark.conf.set(PageRowsKey, "100")
    try {
      // One file: whatever is skipped is skipped inside it.
      create(source(), ZOrderCoveringIndexConfig("zPages", Seq("b"), Seq("id", "a"), lineage = Some(true)), "1g")
      def query = source().where("b BETWEEN 100 AND 180").select("id", "a", "b")
      def check(): Unit = {
        val entry = latest("zPages")
        assert(maxPageRows(entry) <= 100)
        val rows = entry.content.files.flatMap(_.stats).map(_.rowCount).sum
        val inDriver = sameResult(query)
        assert(indexesUsed(inDriver) == Seq("zPages"))
        val driverRead = inDriver.collect { case d: DriverIndexReadExec => d.metrics("rowsRead").value }
        assert(driverRead.size == 1 && driverRead.head < rows / 4, (driverRead, rows))
        spark.conf.set(DriverReadKey, "0")
        try {
          val inJob = sameResult(query)
          assert(indexesUsed(inJob) == Seq("zPages"))
          assert(inJob.collect { case d: DriverIndexReadExec => d }.isEmpty)
          val scanned = indexScans(inJob).map(_.metrics("numOutputRows").value).sum
          assert(scanned > 0 && scanned < rows / 4, (scanned, rows))
        } finally spark.conf.unset(DriverReadKey)
      }
      assert(latest("zPages").content.files.size == 1)
      check()
      // Appends add a layout of their own, deletes lay every kept row out again: both paged so.
      pointsFrame(4000, 6000).write.mode("append").parquet(path)
      hs.refreshIndex("zPages", "incremental")
      check()
      val victim = new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).minBy(_.getName)
      assert(victim.delete())
      hs.refreshIndex("zPages", "incremental")
      check()
    } finally {
      spark.conf.unset(PageRowsKey)
      drop("zPages")
    }
  }

  test("a two-column box reads fewer files than either of its ranges alone") {
    create(df, ZOrderCoveringIndexConfig("zTwo", Seq("b", "d"), Seq("id")))
    try {
      val total = latest("zTwo").content.files.size
      val onB = indexFilesRead(sameResult(df.where("b BETWEEN 100 AND 300").select("id")))
      val onD = indexFilesRead(sameResult(df.where("d BETWEEN DATE'2024-03-01' AND DATE'2024-05-01'").select("id")))
      val box = sameResult(df.where("b BETWEEN 100 AND 300 AND d BETWEEN DATE'2024-03-01' AND DATE'2024-05-01'")
          .select("id", "b", "d"))
      assert(indexesUsed(box) == Seq("zTwo"))
      assert(indexFilesRead(box) < math.min(onB, onD), s"box ${indexFilesRead(box)}, b $onB, d $onD of $total")
      assert(onB < total && onD < total)
      val stats = withHyperspace(on = true)(hs.skippingStats(df.where("b BETWEEN 100 AND 300 AND " +
            "d BETWEEN DATE'2024-03-01' AND DATE'2024-05-01'").select("id")))
      assert(stats.exists(s => s.relation == "index zTwo" && s.filesSkipped == total - indexFilesRead(box)), stats)
      withHyperspace(on = true) {
        val text = df.where("b < 50").select("id").queryExecution.explainString(
          org.apache.spark.sql.execution.ExtendedMode)
        assert(text.contains("Type: ZCI, Name: zTwo"), text)
        assert(text.contains("Location: ZOrderFileIndex"), text)
      }
    } finally drop("zTwo")
  }

  test("differential: generated filters with NULLs, skew, casts and strings give Spark's rows") {
    create(df, ZOrderCoveringIndexConfig("zAB", Seq("a", "b"), Seq("id", "s", "d")))
    create(df, ZOrderCoveringIndexConfig("zSD", Seq("s", "d"), Seq("id", "a", "b")))
    try {
      val random = new Random(Fuzz.seed(18L))
      def pick[T](xs: T*): T = xs(random.nextInt(xs.size))
      def leaf(): String = {
        val (x, y) = (random.nextInt(1000), random.nextInt(1000))
        val (lo, hi) = (math.min(x, y), math.max(x, y))
        pick(
          s"a = $x", "a = 7", s"a BETWEEN $lo AND $hi", "a IS NULL", "a IS NOT NULL", s"a IN ($x, $y, 7)",
          s"a < $x", s"a >= $x", s"CAST(a AS BIGINT) > $x", s"a <=> $x", s"NOT (a > $x)", "a = NULL",
          s"b BETWEEN $lo AND ${lo + 40}", s"b > $hi", s"b <= ${x / 7.0}", s"b = ${x / 100.0}",
          s"s = 's$x'", s"s >= 's$lo' AND s < 's$hi'", s"s LIKE 's${x % 50}%'", s"s IN ('s$x', 's$y')",
          s"d BETWEEN DATE_ADD(DATE'2024-01-01', ${x % 365}) AND DATE_ADD(DATE'2024-01-01', ${x % 365 + 20})",
          s"d > DATE'2024-11-01'", s"id < $x")
      }
      val used = scala.collection.mutable.Set.empty[String]
      var skipped = 0L
      // 40 generated filters in CI, 160 under `make test-full`.
      (1 to Fuzz.queries(40, full = 160)).foreach { _ =>
        val filter = pick(1, 2, 3) match {
          case 1 => leaf()
          case 2 => s"(${leaf()}) AND (${leaf()})"
          case _ => s"(${leaf()}) OR (${leaf()})"
        }
        val columns = pick(Seq("id", "a", "b"), Seq("id", "s", "d"), Seq("a", "b", "s", "d", "id"))
        val plan = sameResult(df.where(filter).select(columns.head, columns.tail: _*))
        used ++= indexesUsed(plan)
        indexesUsed(plan).headOption.foreach(used => skipped += latest(used).content.files.size - indexFilesRead(plan))
      }
      assert(used == Set("zAB", "zSD"), used)
      assert(skipped > 0)
    } finally drop("zAB", "zSD")
  }

  test("lifecycle: incremental refresh with appends and deletes, optimize, delete, restore, vacuum") {
    val path = newDir("lifecycle").getAbsolutePath + "/data"
    pointsFrame(0, 3000).write.parquet(path)
    val source = () => spark.read.parquet(path)
    create(source(), ZOrderCoveringIndexConfig("zLife", Seq("a", "b"), Seq("id"), lineage = Some(true)))
    try {
      val victim = new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).minBy(_.getName)
      pointsFrame(3000, 4000).write.mode("append").parquet(path)
      assert(victim.delete())
      spark.conf.set(TargetKey, "4k")
      try hs.refreshIndex("zLife", "incremental")
      finally spark.conf.unset(TargetKey)
      val refreshed = latest("zLife")
      assert(refreshed.content.files.forall(_.stats.isDefined))
      assert(refreshed.content.files.flatMap(_.stats).map(_.rowCount).sum == source().count())
      assert(refreshed.content.files.map(_.dataVersion).distinct.size == 1, "deletes lay every kept row out again")
      val query = () => source().where("b BETWEEN 200 AND 260").select("id", "a", "b")
      assert(indexesUsed(sameResult(query())) == Seq("zLife"))

      // Appends alone keep the old files and add a layout of the new rows; optimize merges both.
      pointsFrame(4000, 4500).write.mode("append").parquet(path)
      hs.refreshIndex("zLife", "incremental")
      assert(latest("zLife").content.files.map(_.dataVersion).distinct.size == 2)
      assert(indexesUsed(sameResult(query())) == Seq("zLife"))
      hs.optimizeIndex("zLife", "full")
      val optimized = latest("zLife")
      assert(optimized.operation == "OPTIMIZE")
      assert(optimized.content.files.map(_.dataVersion).distinct.size == 1)
      assert(optimized.content.files.forall(_.stats.isDefined))
      assert(indexesUsed(sameResult(query())) == Seq("zLife"))

      hs.deleteIndex("zLife")
      assert(indexesUsed(sameResult(query())).isEmpty)
      hs.restoreIndex("zLife")
      assert(indexesUsed(sameResult(query())) == Seq("zLife"))
      drop("zLife")
      assert(!indexDir("zLife").exists() || versionDirs("zLife").isEmpty)
    } finally spark.conf.unset(TargetKey)
  }

  test("hybrid scan: appended source files are read beside the pruned index files") {
    val path = newDir("hybrid").getAbsolutePath + "/data"
    pointsFrame(0, 3000).write.parquet(path)
    create(spark.read.parquet(path),
      ZOrderCoveringIndexConfig("zHybrid", Seq("b"), Seq("id", "a"),
        lineage = Some(true)))
    try {
      pointsFrame(3000, 3300).write.mode("append").parquet(path)
      withHybridScan {
        val plan = sameResult(spark.read.parquet(path).where("b < 120").select("id", "b"))
        assert(indexesUsed(plan) == Seq("zHybrid"))
        assert(indexFilesRead(plan) < latest("zHybrid").content.files.size)
      }
      // Without hybrid scan a stale index is not used.
      assert(indexesUsed(sameResult(spark.read.parquet(path).where("b < 120").select("id", "b"))).isEmpty)
    } finally drop("zHybrid")
  }

  test("an entry without per-file ranges (an older log) is read, and every file is kept") {
    create(df, ZOrderCoveringIndexConfig("zOld", Seq("b"), Seq("id")))
    try {
      val log = logOf("zOld")
      val current = log.latestStable.get
      val old = current.copy(id = log.nextId,
        content = current.content.copy(files = current.content.files.map(_.copy(stats = None))))
      assert(!old.toJson.contains("\"stats\""))
      assert(log.tryAppend(old))
      log.setLatestStable(old.id)
      CatalogVersion.bump(new Path(systemPath.getAbsolutePath), spark.sessionState.newHadoopConf())
      assert(LogEntry.fromJson(old.toJson, "test").content.files.forall(_.stats.isEmpty))
      val plan = sameResult(df.where("b < 100").select("id", "b"))
      assert(indexesUsed(plan) == Seq("zOld"))
      assert(indexFilesRead(plan) == current.content.files.size)
    } finally drop("zOld")
  }

  test("ranking: the index reading fewer bytes for the filter wins, bucket or range pruning") {
    create(df, ZOrderCoveringIndexConfig("zRank", Seq("b"), Seq("id", "a")))
    hs.createIndex(df, IndexConfig("cRank", Seq("b"), Seq("id", "a"), numBuckets = Some(4)))
    try {
      // A narrow range: the covering index cannot prune it (4 files), the Z-order index reads one
      // or two of its small files (each file is counted with Spark's open cost, 4 MB).
      def range = df.where("b BETWEEN 10 AND 20").select("id", "b")
      assert(indexesUsed(sameResult(range)) == Seq("zRank"))
      assert(withHyperspace(on = true)(hs.whyNot(range, "cRank")).contains("zRank"))
    } finally drop("zRank", "cRank")
    // One Z-order file against one bucket of four: an equality reads less through the bucket.
    create(df, ZOrderCoveringIndexConfig("zBig", Seq("a", "b"), Seq("id")), target = "1g")
    hs.createIndex(df, IndexConfig("cSmall", Seq("a"), Seq("id", "b"), numBuckets = Some(4)))
    try {
      assert(latest("zBig").content.files.size == 1)
      def lookup = df.where("a = 123").select("id", "b")
      assert(indexesUsed(sameResult(lookup)) == Seq("cSmall"))
      assert(withHyperspace(on = true)(hs.whyNot(lookup, "zBig")).contains("cSmall"))
    } finally drop("zBig", "cSmall")
  }

  test("SQL builds one through USING KIND, and the filter rule reads it") {
    val json = """{"name": "zSql", "indexedColumns": ["b"], "includedColumns": ["id"]}"""
    spark.sql(s"CREATE HYPERSPACE INDEX zSql ON parquet.`$points` USING KIND 'ZOrderCoveringIndex' CONFIG '$json'")
    try {
      assert(latest("zSql").index.kind == "ZOrderCoveringIndex")
      assert(indexesUsed(sameResult(df.where("b > 990").select("id"))) == Seq("zSql"))
    } finally drop("zSql")
  }

  test("joins and aggregations do not read a Z-order index") {
    create(df, ZOrderCoveringIndexConfig("zJoin", Seq("a"), Seq("id")))
    try {
      spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
      // The other side without the skewed key (a = 7 on even ids): a join of thousands of rows,
      // not of millions.
      val join = sameResult(df.select("a", "id").join(df.where("id % 2 = 1").selectExpr("a", "id AS other"), "a"))
      assert(indexesUsed(join).isEmpty)
      assert(indexesUsed(sameResult(df.groupBy("a").count())).isEmpty)
    } finally {
      spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
      drop("zJoin")
    }
  }

  test("bad columns are refused with the index and column named, and nothing is written") {
    def refused(config: ZOrderCoveringIndexConfig, source: DataFrame = df): String = {
      val e = intercept[HyperspaceException](hs.createIndex(source, config))
      assert(!indexDir(config.name).exists() || versionDirs(config.name).isEmpty, e.getMessage)
      e.getMessage
    }
    val missing = refused(ZOrderCoveringIndexConfig("zBad1", Seq("nope"), Seq("id")))
    assert(missing.contains("zBad1") && missing.contains("nope"), missing)
    val none = refused(ZOrderCoveringIndexConfig("zBad2", Nil, Seq("id")))
    assert(none.contains("zBad2") && none.contains("at least one indexed column"), none)
    val arrays = spark.range(10).selectExpr("id", "array(id) AS xs")
    val arrayPath = newDir("arrays").getAbsolutePath + "/data"
    arrays.write.parquet(arrayPath)
    val typed = refused(ZOrderCoveringIndexConfig("zBad3", Seq("xs"), Seq("id")), spark.read.parquet(arrayPath))
    assert(typed.contains("zBad3") && typed.contains("xs"), typed)
    val binaryPath = newDir("binary").getAbsolutePath + "/data"
    spark.range(10).selectExpr("id", "CAST(CAST(id AS STRING) AS BINARY) AS bin").write.parquet(binaryPath)
    val binary = refused(ZOrderCoveringIndexConfig("zBad4", Seq("bin"), Seq("id")), spark.read.parquet(binaryPath))
    assert(binary.contains("zBad4") && binary.contains("bin") && binary.contains("Z-order"), binary)
    val json = ZOrderCoveringIndexConfig.fromJson(
      """{"name": "zJson", "indexedColumns": ["a"], "includedColumns": ["b"], "lineage": null}""")
    assert(json == ZOrderCoveringIndexConfig("zJson", Seq("a"), Seq("b")))
    assert(intercept[HyperspaceException](ZOrderCoveringIndexConfig.fromJson("""{"indexedColumns": "a"}"""))
        .getMessage.contains("indexedColumns"))
  }
}
