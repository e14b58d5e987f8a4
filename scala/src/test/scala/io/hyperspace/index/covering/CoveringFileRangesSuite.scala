package io.hyperspace.index.covering

import java.time.LocalDate

import scala.util.Random

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{max, min}

import io.hyperspace.index.{CatalogVersion, IndexConfig}
import io.hyperspace.log.LogEntry
import io.hyperspace.rules.RuleTestSupport

/**
 * A covering index records each data file's range of its indexed columns in the log, and a scan
 * of the index opens only the files whose ranges can satisfy the query's filter. The ranges pay
 * once the index holds files written at different times, e.g. after incremental refreshes of
 * time-ordered appends: each refresh's files hold only the new values.
 */
class CoveringFileRangesSuite extends RuleTestSupport {

  private val Buckets = 4

  /** `Rows` rows for day offsets [from, until) of 2024: `id`, a day `d`, `k` an int with NULLs, `s`. */
  private def batch(from: Int, until: Int, rowsPerDay: Int = 20): DataFrame =
    spark.range(from.toLong * rowsPerDay, until.toLong * rowsPerDay, 1, 2).selectExpr(
      "id",
      s"DATE_ADD(DATE'2024-01-01', CAST(id DIV $rowsPerDay AS INT)) AS d",
      "CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(id % 1000 AS INT) END AS k",
      "CONCAT('s', id % 13) AS s")

  /** A source of three appends (January, February, March), indexed after the first, refreshed after each other. */
  private def refreshedThreeTimes(name: String, indexed: Seq[String]): (String, LogEntry) = {
    val path = newDir(name).getAbsolutePath + "/data"
    batch(0, 31).write.parquet(path)
    hs.createIndex(spark.read.parquet(path), IndexConfig(name, indexed, Seq("id", "s"), numBuckets = Some(Buckets)))
    batch(31, 60).write.mode("append").parquet(path)
    hs.refreshIndex(name, "incremental")
    batch(60, 91).write.mode("append").parquet(path)
    hs.refreshIndex(name, "incremental")
    (path, logOf(name).latestStable.get)
  }

  test("every covering index file has its row count and its range of each indexed column in the log") {
    val (path, entry) = refreshedThreeTimes("ranged", Seq("d", "k"))
    try {
      assert(entry.content.files.map(_.dataVersion).distinct.size == 3, entry.content.files)
      val stats = entry.content.files.map(f => f -> f.stats.getOrElse(fail(s"no stats for ${f.path}")))
      assert(stats.map(_._2.rowCount).sum == spark.read.parquet(path).count())
      val actual = spark.read.parquet(entry.content.files.map(entry.content.pathOf): _*)
        .selectExpr("_metadata.file_name AS f", "DATEDIFF(d, DATE'1970-01-01') AS day", "k")
        .groupBy("f").agg(Map("day" -> "min", "k" -> "count"))
        .collect().map(r => r.getString(0) -> r).toMap
      stats.foreach { case (f, s) =>
        assert(s.columns.keySet == Set("d", "k"))
        // Dates are written as days since 1970-01-01.
        assert(s.columns("d").min == Option(actual(f.name).get(1)).map(_.toString))
        assert(s.columns("k").nullCount == s.rowCount - actual(f.name).getLong(2))
      }
      // Each refresh's files hold only their month.
      val byVersion = stats.groupBy(_._1.dataVersion).values.map(_.flatMap(_._2.columns("d").max).map(_.toLong).max)
      assert(byVersion.toSeq.sorted == Seq("2024-01-31", "2024-02-29", "2024-03-31").map(LocalDate.parse(_).toEpochDay))
    } finally {
      hs.deleteIndex("ranged")
      vacuumNow("ranged")
    }
  }

  test("a range on an indexed column opens only the files whose ranges can match") {
    val (path, entry) = refreshedThreeTimes("months", Seq("d"))
    try {
      // The files whose rows span days overlapping [from, to], from the index data itself.
      val spans = spark.read.parquet(entry.content.files.map(entry.content.pathOf): _*)
        .selectExpr("_metadata.file_name AS f", "d").groupBy("f").agg(min("d"), max("d"))
      def overlapping(from: String, to: String): Long =
        spans.toDF("f", "lo", "hi").where(s"hi >= DATE'$from' AND lo <= DATE'$to'").count()
      val versions = entry.content.files.flatMap(_.dataVersion).distinct.sorted
      val march = sameResult(spark.read.parquet(path).where("d >= DATE'2024-03-05'").select("id", "d", "s"))
      assert(indexFilesRead(march) == overlapping("2024-03-05", "9999-12-31"), march)
      assert(overlapping("2024-03-05", "9999-12-31") <= entry.content.files.count(_.dataVersion.contains(versions(2))))
      val februaryToMarch = sameResult(
        spark.read.parquet(path).where("d BETWEEN DATE'2024-02-20' AND DATE'2024-03-02'").select("id", "s"))
      assert(indexFilesRead(februaryToMarch) == overlapping("2024-02-20", "2024-03-02"))
      assert(overlapping("2024-02-20", "2024-03-02") < entry.content.files.size)
      // Nothing in the index can match: no file is opened.
      assert(indexFilesRead(sameResult(spark.read.parquet(path).where("d > DATE'2025-01-01'").select("id"))) == 0)
      // An equality selects its bucket and, of that bucket, the files of its month.
      val bucket = spark.sql(s"SELECT pmod(hash(DATE'2024-02-10'), $Buckets)").head().getInt(0)
      val expected = entry.content.files.count(f =>
        f.dataVersion.contains(versions(1)) && CoveringIndex.bucketOf(f).contains(bucket))
      assert(indexFilesRead(sameResult(spark.read.parquet(path).where("d = DATE'2024-02-10'").select("id"))) ==
        expected)
    } finally {
      hs.deleteIndex("months")
      vacuumNow("months")
    }
  }

  test("a sort-merge join of indexes whose files the ranges filter returns Spark's rows without a shuffle") {
    val (path, _) = refreshedThreeTimes("joined", Seq("d"))
    val dims = newDir("dims").getAbsolutePath + "/data"
    spark.range(0, 91).selectExpr("DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS d", "id % 5 AS weekday")
      .write.parquet(dims)
    hs.createIndex(spark.read.parquet(dims), IndexConfig("dims", Seq("d"), Seq("weekday"), numBuckets = Some(Buckets)))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try {
      val plan = sameResult(spark.read.parquet(path).where("d >= DATE'2024-03-01'").select("id", "d")
          .join(spark.read.parquet(dims), "d"))
      assert(indexesUsed(plan) == Seq("dims", "joined"), plan)
      assert(shuffles(plan) == 0, plan)
    } finally {
      spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
      Seq("joined", "dims").foreach { n => hs.deleteIndex(n); vacuumNow(n) }
    }
  }

  test("generated filters on two indexed columns return Spark's rows whatever files the ranges skip") {
    val (path, entry) = refreshedThreeTimes("generated", Seq("k", "d"))
    val random = new Random(18)
    def day: String = s"DATE'2024-${"%02d".format(1 + random.nextInt(4))}-${"%02d".format(1 + random.nextInt(28))}'"
    def k: Int = random.nextInt(1100) - 50
    val shapes: Seq[() => String] = Seq(
      () => s"k = $k",
      () => s"k IN ($k, $k, NULL)",
      () => s"k BETWEEN $k AND ${k + 40}",
      () => s"k < $k OR d > $day",
      () => s"k IS NULL AND d < $day",
      () => s"NOT (k > $k) AND d >= $day",
      () => s"d = $day",
      () => s"d IN ($day, $day)",
      () => s"CAST(k AS BIGINT) > ${k}L AND d <= $day",
      () => s"k <=> NULL OR d BETWEEN $day AND $day")
    var (used, skipping) = (0, 0)
    // Scans only, so every use of the index shows in the plan's scans.
    spark.conf.set("spark.hyperspace.index.driverRead.maxBytes", "0")
    try {
      (1 to 40).foreach { i =>
        val where = shapes(i % shapes.size)()
        val plan = withClue(where)(sameResult(spark.read.parquet(path).where(where).select("id", "k", "d", "s")))
        if (indexesUsed(plan).nonEmpty) {
          used += 1
          if (indexFilesRead(plan) < entry.content.files.size) skipping += 1
        }
      }
      assert(used >= 20 && skipping >= 10, s"of 40 filters, $used used the index and $skipping skipped a file")
    } finally {
      spark.conf.unset("spark.hyperspace.index.driverRead.maxBytes")
      hs.deleteIndex("generated")
      vacuumNow("generated")
    }
  }

  test("an entry without per-file ranges (an older log) reads every file it must") {
    val (path, current) = refreshedThreeTimes("older", Seq("d"))
    try {
      val log = logOf("older")
      val old = current.copy(id = log.nextId,
        content = current.content.copy(files = current.content.files.map(_.copy(stats = None))))
      assert(log.tryAppend(old))
      log.setLatestStable(old.id)
      CatalogVersion.bump(new Path(systemPath.getAbsolutePath), spark.sessionState.newHadoopConf())
      val plan = sameResult(spark.read.parquet(path).where("d >= DATE'2024-03-05'").select("id", "d"))
      assert(indexFilesRead(plan) == current.content.files.size)
    } finally {
      hs.deleteIndex("older")
      vacuumNow("older")
    }
  }
}
