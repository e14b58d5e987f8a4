package io.hyperspace.execution

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.expr

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.zorder.ZOrderCoveringIndexConfig
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.testing.Fuzz

/**
 * Generated filters, projections and aggregates over index reads done in the driver, each run with
 * Hyperspace off and on under generated settings of the driver read (threads, Spark's whole-stage
 * code, AQE, the row budget, the byte bound): the rows must be Spark's. Covers the ways a driver
 * read goes — one thread or several, the plan's compiled code over batches or rows one at a time,
 * a global aggregate's partial step per thread, the fall back to a job past the row budget — on
 * NULLs, NaN and -0.0, skewed keys, decimals, dates and non-ASCII strings. Seeded, so a failure
 * reproduces (`make fuzz` sets the seed and count for long runs).
 */
class DriverReadDifferentialSuite extends RuleTestSupport {

  private val seed = Fuzz.seed(20261127L)
  private val queryCount = Fuzz.queries(60)
  private val rnd = new Random(seed)

  private lazy val path: String = {
    val dir = newDir("driver-read-differential").getAbsolutePath + "/data"
    // Values from hashes of the id: a fixed data set whatever the seed; a third of the rows share a = 7.
    spark.range(0, 6000, 1, 8).selectExpr(
      "id",
      "CASE WHEN id % 17 = 0 THEN NULL WHEN id % 3 = 0 THEN 7 ELSE CAST(pmod(hash(id, 1), 60) - 10 AS INT) END AS a",
      "CASE WHEN id % 19 = 0 THEN NULL ELSE DATE_ADD(DATE'2024-01-01', CAST(pmod(hash(id, 2), 400) AS INT)) END AS d",
      "CASE WHEN id % 23 = 0 THEN NULL ELSE CONCAT(element_at(array('ü', 'a', 'Ωmega', '日本', '', 'z'), " +
        "CAST(pmod(hash(id, 3), 6) + 1 AS INT)), CAST(pmod(hash(id, 4), 20) AS STRING)) END AS s",
      "CASE WHEN id % 13 = 0 THEN NULL ELSE CAST((pmod(hash(id, 5), 200000) - 100000) / 1000.0 AS DECIMAL(12, 3)) END AS dec",
      "CASE WHEN id % 29 = 0 THEN NULL WHEN id % 31 = 0 THEN CAST('NaN' AS DOUBLE) WHEN id % 37 = 0 THEN -0.0D " +
        "ELSE (pmod(hash(id, 6), 100000) - 50000) / 77.0D END AS dbl",
      "CASE WHEN id % 11 = 0 THEN NULL ELSE id % 2 = 0 END AS flag").write.parquet(dir)
    dir
  }

  private def df: DataFrame = spark.read.parquet(path)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    // Files of a few KB: a range reads several of them, so a read has runs for several threads.
    spark.conf.set("spark.hyperspace.index.zorder.targetFileSize", "8k")
    try hs.createIndex(df, ZOrderCoveringIndexConfig("drZ", Seq("a", "d"), Seq("id", "s", "dec", "dbl", "flag")))
    finally spark.conf.unset("spark.hyperspace.index.zorder.targetFileSize")
    hs.createIndex(df, IndexConfig("drId", Seq("id"), Seq("a", "d", "s", "dec", "dbl", "flag"), numBuckets = Some(4)))
    hs.createIndex(df, IndexConfig("drS", Seq("s"), Seq("a", "dec", "dbl"), numBuckets = Some(3)))
  }

  private def pick[T](xs: T*): T = xs(rnd.nextInt(xs.size))

  /** A condition on one of the indexed columns (what picks the index), or on another column. */
  private def leaf(): String = {
    val (x, y) = (rnd.nextInt(60) - 10, rnd.nextInt(60) - 10)
    val (lo, hi) = (math.min(x, y), math.max(x, y))
    val day = rnd.nextInt(400)
    val id = rnd.nextInt(6200)
    pick(
      s"a = $x", "a = 7", s"a BETWEEN $lo AND $hi", s"a IN ($x, $y, 7)", "a IS NULL", s"a <=> $x",
      s"d BETWEEN DATE_ADD(DATE'2024-01-01', $day) AND DATE_ADD(DATE'2024-01-01', ${day + rnd.nextInt(40)})",
      s"d >= DATE_ADD(DATE'2024-01-01', $day)", "d IS NULL",
      s"id = $id", s"id IN ($id, ${id + 1}, ${id * 7 % 6000})", s"id BETWEEN $id AND ${id + rnd.nextInt(300)}",
      s"s = '${pick("ü", "a", "Ωmega", "日本", "", "z")}${rnd.nextInt(20)}'", s"s >= 'z' AND s < 'z5'",
      s"dec > ${rnd.nextInt(200) - 100}", "dbl IS NULL", "isnan(dbl)", "dbl = 0", s"dbl < ${rnd.nextInt(600) - 300}",
      "flag", "NOT flag", "s LIKE '日本%'")
  }

  private def filter(): String = pick(1, 1, 2, 2, 3) match {
    case 1 => leaf()
    case 2 => s"(${leaf()}) AND (${leaf()})"
    case _ => s"(${leaf()}) OR (${leaf()})"
  }

  private val projections = Seq("id", "a", "d", "s", "dec", "dbl", "flag", "dec * 2 AS dec2", "upper(s) AS us",
    "a + 1 AS a1", "CASE WHEN isnan(dbl) THEN -1.0D ELSE dbl END AS dbl2")

  private val aggregates = Seq("count(*)", "count(dbl)", "sum(dec)", "avg(dec)", "min(s)", "max(s)", "min(d)",
    "max(d)", "sum(a)", "avg(a)", "min(dbl)", "max(dbl)", "sum(dbl)", "sum(a * dec)", "max(flag)", "count(DISTINCT a)")

  private def some(xs: Seq[String]): Seq[String] = rnd.shuffle(xs).take(1 + rnd.nextInt(4))

  /** A generated query, built anew by each call of the returned function (each plans it afresh). */
  private def query(): () => DataFrame = {
    val where = filter()
    pick(1, 2, 3) match {
      case 1 =>
        val columns = some(projections)
        () => df.where(where).selectExpr(columns: _*)
      case 2 =>
        val aggs = some(aggregates)
        () => df.where(where).selectExpr(aggs: _*)
      case _ =>
        val (key, aggs) = (pick("flag", "a", "s", "d"), some(aggregates))
        () => df.where(where).groupBy(key).agg(expr(aggs.head), aggs.tail.map(expr): _*)
    }
  }

  /** The driver read's settings for one query. */
  private def settings(): Seq[(String, String)] = Seq(
    "spark.hyperspace.index.driverRead.threads" -> pick("1", "2", "3", "8"),
    "spark.sql.adaptive.enabled" -> pick("true", "false"),
    "spark.sql.codegen.wholeStage" -> pick("true", "true", "true", "false"),
    // A budget of a few rows: a read of more runs out of it and its plan runs as a job.
    "spark.hyperspace.index.driverRead.maxRows" -> pick("10000", "10000", "10000", "25"),
    "spark.hyperspace.index.driverRead.maxBytes" -> pick("16m", "16m", "16m", "0"))

  test("generated filters, projections and aggregates read in the driver return Spark's rows under any setting") {
    var onThreads, compiled, rowByRow, budgetExceeded = 0
    val used = scala.collection.mutable.Set.empty[String]
    (1 to queryCount).foreach { _ =>
      val q = query()
      val conf = settings()
      val plan = withConf(conf: _*)(sameResult(q()))
      used ++= indexesUsed(plan)
      driverReads(plan).foreach { read =>
        // A read past its budget ran its plan as a job: a read in the driver sets its threads (one or more).
        if (read.metrics("readThreads").value == 0) budgetExceeded += 1
        else {
          if (read.metrics("readThreads").value > 1) onThreads += 1
          if (read.metrics("compiledSteps").value > 0) compiled += 1 else rowByRow += 1
        }
      }
    }
    info(s"seed $seed: $queryCount queries; driver reads on threads $onThreads, compiled $compiled, " +
      s"row by row $rowByRow, past the budget $budgetExceeded")
    // Every index, and every way a driver read goes, taken by several queries (seeded: the counts
    // are fixed; fewer queries than CI's may not reach them all).
    if (queryCount >= 60) {
      assert(used == Set("drZ", "drId", "drS"), used)
      assert(Seq(onThreads, compiled, rowByRow, budgetExceeded).forall(_ >= 3),
        s"on threads $onThreads, compiled $compiled, row by row $rowByRow, past the budget $budgetExceeded")
    }
  }

  test("generated queries run at once from several threads, reading on the shared threads, return Spark's rows") {
    val queries = Seq.fill(24)(query())
    val expected = withHyperspace(on = false)(queries.map(q => rowsOf(q())))
    // Eight readers a query over eight callers: more runs at once than the shared pool has threads.
    withConf("spark.hyperspace.index.driverRead.threads" -> "8") {
      withHyperspace(on = true) {
        val pool = java.util.concurrent.Executors.newFixedThreadPool(8)
        try {
          val results = (0 until 3).flatMap(_ => queries.indices).map { i =>
            pool.submit(new java.util.concurrent.Callable[(Int, Seq[String], Long)] {
              override def call(): (Int, Seq[String], Long) = {
                val df = queries(i)()
                val rows = rowsOf(df)
                (i, rows, driverReads(executed(df)).map(_.metrics("readThreads").value).sum)
              }
            })
          }.map(_.get(5, java.util.concurrent.TimeUnit.MINUTES))
          results.foreach { case (i, rows, _) => assert(rows == expected(i), s"query $i differs run concurrently") }
          assert(results.count(_._3 > 1) >= 6, "too few queries read on several threads for the test to mean anything")
        } finally pool.shutdownNow()
      }
    }
  }
}
