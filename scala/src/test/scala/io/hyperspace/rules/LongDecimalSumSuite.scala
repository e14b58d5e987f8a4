package io.hyperspace.rules

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.functions.{col, sum}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BinaryComparison, Expression, Literal, UnsafeProjection, UnscaledValue}
import org.apache.spark.sql.catalyst.plans.logical.Aggregate
import org.apache.spark.sql.execution.{FilterExec, SparkPlan}
import org.apache.spark.sql.types.LongType

import io.hyperspace.expressions.{LongAddOrNull, LongDecimalSum, LongMultiplyOrNull}
import io.hyperspace.index.IndexConfig

/**
 * Filters over index scans compare decimals of up to 18 digits with literals as longs
 * (CompareDecimalsOnLongs), and sums of DECIMALs of 9 to 18 digits (or of exact products of two)
 * over index scans run on longs while they fit (SumDecimalsOnLongs, LongDecimalSum); both return
 * exactly Spark's rows: nulls, all-null and empty
 * groups, running sums that overflow a long in a task's update and in the merge of partial sums,
 * grouped and global, joins of two indexes, AQE and ANSI on and off, and after a refresh.
 */
class LongDecimalSumSuite extends RuleTestSupport {

  private val Enabled = "spark.hyperspace.index.decimalsOnLongs.enabled"
  private val MaxUnscaled18 = "999999999999999999"

  /**
   * `id`; `g` 7 groups and NULL; `small` DECIMAL(12,2) with NULLs; `big` DECIMAL(18,0) near
   * ±10^18 (a group's running sum overflows a long after ~10 rows); `sparse` DECIMAL(10,2) set
   * only in group 1 (every other group sums to NULL); `tiny` DECIMAL(8,2) (Spark sums it on longs
   * itself).
   */
  private lazy val facts: String = {
    val path = newDir("ldsum-facts").getAbsolutePath + "/data"
    writeFacts(0, 3000, path)
    path
  }

  private def writeFacts(from: Long, to: Long, path: String, mode: String = "error"): Unit =
    spark.range(from, to, 1, 4).selectExpr(
      "id",
      "CASE WHEN id % 17 = 0 THEN NULL ELSE CAST(id % 7 AS INT) END AS g",
      "CAST(CASE WHEN id % 13 = 0 THEN NULL ELSE (id * 7919) % 100000000 - 50000000 END / 100 AS DECIMAL(12,2)) AS small",
      s"CAST(CASE WHEN id % 5 = 0 THEN NULL WHEN id % 3 = 0 THEN -900000000000000000 + id ELSE $MaxUnscaled18 - id END AS DECIMAL(18,0)) AS big",
      "CAST(CASE WHEN id % 7 = 1 THEN id / 4 ELSE NULL END AS DECIMAL(10,2)) AS sparse",
      "CAST(id % 1000 / 10 AS DECIMAL(8,2)) AS tiny").write.mode(mode).parquet(path)

  /** `k` 0..29; `name` a group; `amount` DECIMAL(18,0) at its maximum: sums overflow a long past 9 rows. */
  private lazy val dims: String = {
    val path = newDir("ldsum-dims").getAbsolutePath + "/data"
    spark.range(0, 30, 1, 2).selectExpr(
      "id AS k", "CONCAT('p', id % 3) AS name", s"CAST($MaxUnscaled18 AS DECIMAL(18,0)) AS amount")
      .write.parquet(path)
    path
  }

  private def factsDf: DataFrame = spark.read.parquet(facts)
  // A scan of the whole table stays Spark's; a range on the indexed column reads the index.
  private def factRange: DataFrame = factsDf.where("id BETWEEN 100 AND 2700")
  private def dimsDf: DataFrame = spark.read.parquet(dims)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(factsDf, IndexConfig("ldsFacts", Seq("id"), Seq("g", "small", "big", "sparse", "tiny")))
    hs.createIndex(dimsDf, IndexConfig("ldsDims", Seq("k"), Seq("name", "amount")))
  }

  /** How many sums the optimized plan computes on longs. */
  private def longSums(df: DataFrame): Int =
    df.queryExecution.optimizedPlan.collect { case a: Aggregate =>
      a.aggregateExpressions.flatMap(_.collect { case s: LongDecimalSum => s })
    }.flatten.size

  /** Equal rows with Hyperspace off and on; the number of long sums with it on. */
  private def sameRowsLongSums(query: => DataFrame): Int = {
    sameResult(query)
    withHyperspace(on = true)(longSums(query))
  }

  private val factQueries: Seq[(String, () => DataFrame, Int)] = Seq(
    ("grouped sums",
      () =>
        factRange.groupBy("g").agg(
          Map("small" -> "sum", "big" -> "sum", "sparse" -> "sum", "tiny" -> "sum", "id" -> "count")), 3),
    ("global sums", () => factRange.selectExpr("sum(small)", "sum(big)", "sum(sparse)", "count(*)"), 3),
    ("a range's grouped sums",
      () =>
        factsDf.where("id BETWEEN 100 AND 1700").groupBy("g")
          .agg(Map("big" -> "sum", "small" -> "avg")), 1),
    ("sums of nothing", () => factsDf.where("id < 0").selectExpr("sum(big)", "sum(small)"), 2),
    ("grouped sums of nothing", () => factsDf.where("id < 0").groupBy("g").agg(Map("big" -> "sum")), 1),
    ("a point's sums", () => factsDf.where("id = 42").selectExpr("sum(big)", "sum(small)"), 2),
    ("sums with a filter clause", () => factRange.selectExpr("sum(big) FILTER (WHERE g > 3)", "sum(small)"), 2),
    // Products: each fits a long (small * tiny), none does (big * small), the running sum
    // overflows a long (small * small, ~2.5e15 a row); a product Spark rounds is Spark's (big / 3 * tiny).
    ("sums of products",
      () =>
        factRange.selectExpr(
          "sum(small * tiny)", "sum(big * small)", "sum(small * small)", "sum(CAST(big / 3 AS DECIMAL(38,6)) * tiny)"),
      3),
    ("grouped sums of products",
      () =>
        factRange.groupBy("g").agg(
          sum(col("small") * col("tiny")), sum(col("sparse") * col("small")), sum(col("big") * col("tiny"))), 3))

  for {
    aqe <- Seq(true, false)
    ansi <- Seq(false, true)
    (name, query, expectedLongSums) <- factQueries
  } {
    test(s"$name: Spark's rows (AQE ${if (aqe) "on" else "off"}, ANSI ${if (ansi) "on" else "off"})") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, "spark.sql.ansi.enabled" -> ansi.toString) {
        assert(sameRowsLongSums(query()) == expectedLongSums)
      }
    }
  }

  test("running sums that overflow a long fall back to Spark's decimal (the results need more than 18 digits)") {
    withHyperspace(on = true) {
      val big = factRange.groupBy("g").agg(Map("big" -> "sum")).collect()
      assert(
        big.exists(r => !r.isNullAt(1) && r.getDecimal(1).abs.compareTo(new java.math.BigDecimal(Long.MaxValue)) > 0))
      val all = dimsDf.where("k >= 0").selectExpr("sum(amount)").collect().head.getDecimal(0)
      assert(all == new java.math.BigDecimal(MaxUnscaled18).multiply(new java.math.BigDecimal(30)))
    }
  }

  test("a join of two indexes grouped by a string, as the TPC-H join, and sums that overflow in the merge") {
    for (aqe <- Seq(true, false)) {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, "spark.sql.autoBroadcastJoinThreshold" -> "-1") {
        def q = {
          val (f, d) = (factsDf, dimsDf)
          f.join(d, f("id") === d("k")).groupBy("name").agg(Map("small" -> "sum", "amount" -> "sum", "big" -> "sum"))
        }
        val plan = sameResult(q)
        assert(indexesUsed(plan) == Seq("ldsDims", "ldsFacts"), plan.treeString)
        assert(withHyperspace(on = true)(longSums(q)) == 3)
        // Four buckets of at most nine rows each: partial sums fit a long, their merge does not.
        def global = dimsDf.where("k >= 0").selectExpr("sum(amount)", "count(*)")
        assert(sameRowsLongSums(global) == 1)
      }
    }
  }

  /** Comparisons the executed plan's filters make on unscaled longs. */
  private def longComparisons(df: DataFrame): Int =
    executed(df).collect { case f: FilterExec =>
      f.condition.collect { case c: BinaryComparison if c.children.exists(_.isInstanceOf[UnscaledValue]) => c }.size
    }.sum

  private val comparisons = Seq(
    "small < 123.45" -> 1, "small >= -5" -> 1, "tiny BETWEEN 1.5 AND 7.25" -> 2, "small <=> 12.34" -> 1,
    "small = 100" -> 1, "5.5 > tiny" -> 1, "small < 1.234" -> 1, "NOT (small > 0.01)" -> 1,
    s"big = $MaxUnscaled18" -> 1, s"big < -$MaxUnscaled18" -> 1, "big >= 0 AND tiny <= 50" -> 2,
    "small * tiny > 100" -> 0, "sparse <=> NULL" -> 0, "small IN (1.5, 2.5)" -> 0)

  for {
    aqe <- Seq(true, false)
    (predicate, longCompared) <- comparisons
  } {
    test(s"filter $predicate over an index: Spark's rows, $longCompared comparisons on longs (AQE ${if (aqe) "on"
      else "off"})") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString) {
        def q =
          factsDf.where(s"id BETWEEN 100 AND 2700 AND ($predicate)").select("id", "small", "tiny", "big", "sparse")
        val plan = sameResult(q)
        assert(indexesUsed(plan) == Seq("ldsFacts"), plan.treeString)
        assert(withHyperspace(on = true)(longComparisons(q)) == longCompared, plan.treeString)
        withConf(Enabled -> "false")(assert(withHyperspace(on = true)(longComparisons(q)) == 0))
        def agg = factsDf.where(s"id BETWEEN 100 AND 2700 AND ($predicate)").groupBy("g").agg(Map("small" -> "sum"))
        sameResult(agg)
      }
    }
  }

  test("comparisons on longs follow the settings of the session a plan was made in, not the thread's active one") {
    val q = factsDf.where("id BETWEEN 100 AND 2700 AND small < 123.45").select("id", "small")
    val planned = withHyperspace(on = true) {
      val plan = q.queryExecution.sparkPlan // before the physical rules
      assert(indexesUsed(plan) == Seq("ldsFacts"), plan.treeString)
      plan
    }
    def compared(plan: SparkPlan): Int = CompareDecimalsOnLongs(plan).collect { case f: FilterExec =>
      f.condition.collect { case c: BinaryComparison if c.children.exists(_.isInstanceOf[UnscaledValue]) => c }.size
    }.sum
    val other = spark.newSession()
    other.conf.set(Enabled, "false")
    try {
      SparkSession.setActiveSession(other)
      assert(compared(planned) == 1, "the plan's session compares on longs")
      SparkSession.setActiveSession(spark)
      withConf(Enabled -> "false")(assert(compared(planned) == 0, "the plan's session turned it off"))
      other.conf.set(Enabled, "true")
      SparkSession.setActiveSession(other)
      withConf(Enabled -> "false")(assert(compared(planned) == 0, "another active session does not turn it on"))
    } finally SparkSession.setActiveSession(spark)
  }

  test("a sum of products that overflows its DECIMAL(38,0): NULL as Spark's, or Spark's error in ANSI mode") {
    def q = factRange.selectExpr("sum(big * big)", "sum(small * tiny)")
    withConf("spark.sql.ansi.enabled" -> "false") {
      assert(sameRowsLongSums(q) == 2)
      assert(withHyperspace(on = true)(q.collect().head.isNullAt(0)))
    }
    withConf("spark.sql.ansi.enabled" -> "true") {
      def error(on: Boolean) = withHyperspace(on)(intercept[Exception](q.collect()))
      val (spark, ours) = (error(on = false), error(on = true))
      assert(ours.getClass == spark.getClass && ours.getMessage == spark.getMessage, ours.getMessage)
      assert(withHyperspace(on = true)(longSums(q)) == 2)
    }
  }

  test("turned off, or without an index, the sums stay Spark's") {
    withConf(Enabled -> "false") {
      assert(sameRowsLongSums(factRange.groupBy("g").agg(Map("big" -> "sum"))) == 0)
    }
    withHyperspace(on = false)(assert(longSums(factRange.groupBy("g").agg(Map("big" -> "sum"))) == 0))
    assert(sameRowsLongSums(factsDf.groupBy("g").agg(Map("big" -> "sum"))) == 0)
    // DISTINCT sums are Spark's to plan.
    assert(sameRowsLongSums(factRange.selectExpr("sum(DISTINCT big)", "sum(small)")) == 0)
  }

  test("after rows are appended and the index refreshed, the sums are Spark's over all rows") {
    val path = newDir("ldsum-refresh").getAbsolutePath + "/data"
    writeFacts(0, 1000, path)
    def df = spark.read.parquet(path)
    hs.createIndex(df, IndexConfig("ldsRefresh", Seq("id"), Seq("g", "big", "small")))
    def q =
      spark.read.parquet(path).where("id BETWEEN 10 AND 2400").groupBy("g").agg(Map("big" -> "sum", "small" -> "sum"))
    assert(sameRowsLongSums(q) == 2)
    writeFacts(1000, 2500, path, mode = "append")
    hs.refreshIndex("ldsRefresh", "incremental")
    val plan = sameResult(q)
    assert(indexesUsed(plan) == Seq("ldsRefresh"), plan.treeString)
    assert(withHyperspace(on = true)(longSums(q)) == 2)
  }

  test("LongAddOrNull, LongMultiplyOrNull: null on overflow either way or on a null, interpreted and generated") {
    def both(e: Expression): (Any, Any) = {
      val generated = UnsafeProjection.create(Seq(e)).apply(InternalRow.empty)
      (e.eval(), if (generated.isNullAt(0)) null else generated.getLong(0))
    }
    val nullLong = Literal.create(null, LongType)
    val cases = Seq(
      (Long.MaxValue, 1L) -> null, (Long.MinValue, -1L) -> null, (Long.MaxValue, Long.MinValue) -> -1L,
      (Long.MaxValue - 5, 5L) -> Long.MaxValue, (Long.MinValue + 5, -5L) -> Long.MinValue, (-3L, 7L) -> 4L)
    for (((a, b), expected) <- cases) {
      assert(both(LongAddOrNull(Literal(a), Literal(b))) == ((expected, expected)), s"$a + $b")
    }
    assert(both(LongAddOrNull(nullLong, Literal(1L))) == ((null, null)))
    assert(both(LongAddOrNull(Literal(1L), nullLong)) == ((null, null)))
    val products = Seq(
      (Long.MaxValue, 2L) -> null, (Long.MinValue, -1L) -> null, (-1L, Long.MinValue) -> null,
      (3037000500L, 3037000500L) -> null, (3037000499L, 3037000499L) -> 9223372030926249001L,
      (Long.MinValue, 1L) -> Long.MinValue, (-4L, 1L << 61) -> Long.MinValue, (0L, Long.MinValue) -> 0L,
      (-7L, 6L) -> -42L)
    for (((a, b), expected) <- products) {
      assert(both(LongMultiplyOrNull(Literal(a), Literal(b))) == ((expected, expected)), s"$a * $b")
    }
    assert(both(LongMultiplyOrNull(nullLong, Literal(1L))) == ((null, null)))
  }
}
