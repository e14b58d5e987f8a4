package io.hyperspace.rules

import java.sql.{Date, Timestamp}

import scala.util.Random

import org.apache.spark.sql.{Column, DataFrame, Row}
import org.apache.spark.sql.functions.{broadcast, col, lit, not}
import org.apache.spark.sql.types._

import io.hyperspace.index.IndexConfig
import io.hyperspace.testing.Fuzz

/**
 * Generated data and generated queries, each run with Hyperspace off and on: the results must
 * be the same multiset of rows. Seeded, so a failure reproduces.
 */
class DifferentialSuite extends RuleTestSupport {

  // Fixed in CI; `make fuzz` sets both for long runs with fresh seeds. 40 generated filters in CI
  // (the other lines' subsets draw 20), 160 under `make test-full`.
  private val seed = Fuzz.seed(20261121L)
  private val filterQueries = Fuzz.queries(40, full = 160)
  // The other generated tests scale with it: 12 aggregations and 20 whole-row filters in CI.
  private val aggregateQueries = math.max(12, filterQueries * 12 / 80)
  private val wholeRowQueries = math.max(20, filterQueries / 4)
  private val rnd = new Random(seed)

  private val schemaA = StructType(Seq(
      StructField("id", LongType, nullable = false),
      StructField("i", IntegerType), StructField("l", LongType), StructField("s", StringType),
      StructField("d", DateType), StructField("ts", TimestampType),
      StructField("dec", DecimalType(12, 3)), StructField("dbl", DoubleType),
      StructField("b", BooleanType), StructField("p", IntegerType)))

  private def maybeNull[T](v: => T): Any = if (rnd.nextDouble() < 0.1) null else v

  private lazy val rowsA: Seq[Row] = (0 until 3000).map { n =>
    // Skewed keys: a third of the rows share i = 7.
    val i = if (rnd.nextDouble() < 0.33) 7 else rnd.nextInt(60) - 10
    Row(n.toLong, maybeNull(i), maybeNull(rnd.nextLong() % 1000L),
      maybeNull(Seq("ü", "a", "Ωmega", "日本", "", "z")(rnd.nextInt(6)) + rnd.nextInt(20)),
      maybeNull(Date.valueOf(java.time.LocalDate.of(2024, 1, 1).plusDays(rnd.nextInt(400)))),
      maybeNull(new Timestamp(1700000000000L + rnd.nextInt(1000000) * 1000L + rnd.nextInt(1000))),
      maybeNull(new java.math.BigDecimal(rnd.nextInt(200000) - 100000).movePointLeft(3)),
      maybeNull(if (rnd.nextDouble() < 0.05) Double.NaN else rnd.nextGaussian() * 100),
      maybeNull(rnd.nextBoolean()), n % 3)
  }

  private lazy val pathA: String = {
    val path = newDir("diff-a").getAbsolutePath + "/data"
    spark.createDataFrame(spark.sparkContext.parallelize(rowsA, 4), schemaA)
      .repartition(12).write.partitionBy("p").parquet(path)
    // An empty file in one partition.
    spark.createDataFrame(spark.sparkContext.emptyRDD[Row], StructType(schemaA.fields.init))
      .coalesce(1).write.mode("append").parquet(s"$path/p=0")
    path
  }

  private lazy val pathB: String = {
    val path = newDir("diff-b").getAbsolutePath + "/data"
    spark.range(0, 400, 1, 5).selectExpr(
      "CASE WHEN id % 13 = 0 THEN NULL ELSE CAST(id % 70 - 10 AS INT) END AS k",
      "CONCAT('v', id) AS v", "CAST(id AS DOUBLE) / 3 AS w").write.parquet(path)
    path
  }

  private def a: DataFrame = spark.read.parquet(pathA)
  private def b: DataFrame = spark.read.parquet(pathB)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    Seq(
      IndexConfig("dI", Seq("i"), Seq("s", "dbl", "id", "dec")),
      IndexConfig("dS", Seq("s"), Seq("i", "d")),
      IndexConfig("dD", Seq("d"), Seq("ts", "b", "id")),
      IndexConfig("dDec", Seq("dec"), Seq("id", "dbl")),
      IndexConfig("dTs", Seq("ts"), Seq("l", "p")),
      IndexConfig("dId", Seq("id"), Seq("p", "s", "i"), numBuckets = Some(3)),
      IndexConfig("dIS", Seq("i", "s"), Seq("b"), lineage = Some(true)),
      // Every column, in an order other than the source's: a plan reading it must still
      // output the source's columns in the source's order.
      IndexConfig("dAll", Seq("l"), allColumnsShuffled)
    ).foreach(c => hs.createIndex(a, c))
    hs.createIndex(b, IndexConfig("dK", Seq("k"), Seq("v", "w")))
    hs.createIndex(b, IndexConfig("dW", Seq("w"), Seq("v", "k")))
  }

  /** The columns of `a` but `l`, in a seeded order that is never the source's. */
  private lazy val allColumnsShuffled: Seq[String] = {
    val others = schemaA.fieldNames.toSeq.filterNot(_ == "l")
    Iterator.continually(rnd.shuffle(others)).find(_ != others).get
  }

  /** A value of column `c` seen in the data (possibly null). */
  private def sample(c: String): Any = rowsA(rnd.nextInt(rowsA.size)).get(schemaA.fieldIndex(c))

  private def nonNullSample(c: String): Any =
    Iterator.continually(sample(c)).find(_ != null).get

  private val filterable = Seq("i", "s", "d", "dec", "ts", "id", "dbl", "l")

  /** Columns an index led by each column covers (besides itself). */
  private val coveredWith = Map(
    "i" -> Seq("s", "dbl", "id", "dec"), "s" -> Seq("i", "d"), "d" -> Seq("ts", "b", "id"),
    "dec" -> Seq("id", "dbl"), "ts" -> Seq("l", "p"), "id" -> Seq("p", "s", "i"))

  /** A random predicate over column `c`. */
  private def predicate(c: String, depth: Int = 0): Column = {
    val x = col(c)
    rnd.nextInt(if (depth < 1) 14 else 11) match {
      case 0 => x === lit(nonNullSample(c))
      case 1 => x =!= lit(nonNullSample(c))
      case 2 => x < lit(nonNullSample(c))
      case 3 => x <= lit(nonNullSample(c))
      case 4 => x > lit(nonNullSample(c))
      case 5 => x >= lit(nonNullSample(c))
      case 6 => x.isin(Seq.fill(3)(sample(c)): _*)
      case 7 =>
        val Seq(lo, hi) = Seq(nonNullSample(c), nonNullSample(c)).sortBy(String.valueOf)
        x.between(lit(lo), lit(hi))
      case 8 => x.isNull
      case 9 => x.isNotNull
      case 10 if c == "s" => x.like(Seq("ü%", "%1", "a_", "%mega%")(rnd.nextInt(4)))
      case 10 => x <=> lit(sample(c))
      case 11 => not(predicate(c, depth + 1))
      case 12 => predicate(c, depth + 1) && predicate(filterable(rnd.nextInt(filterable.size)), depth + 1)
      case _ => predicate(c, depth + 1) || predicate(c, depth + 1)
    }
  }

  test("generated filters and projections return the same rows with and without indexes") {
    var usedIndex = 0
    val queries = filterQueries
    info(s"seed $seed, $queries queries")
    for (q <- 0 until queries) {
      val c = filterable(rnd.nextInt(filterable.size))
      val condition = predicate(c)
      // Mostly columns an index on `c` covers (the index can be used); sometimes any columns.
      val pool = coveredWith.get(c).filter(_ => rnd.nextDouble() < 0.8).getOrElse(schemaA.fieldNames.toSeq)
      val projection = (rnd.shuffle(pool).take(1 + rnd.nextInt(3)) :+ c).distinct
      val plan = withClue(s"query $q: WHERE $condition SELECT ${projection.mkString(", ")}\n") {
        sameResult(a.where(condition).select(projection.map(col): _*))
      }
      if (indexesUsed(plan).nonEmpty) usedIndex += 1
    }
    // The comparison is only meaningful if indexes were actually used.
    assert(usedIndex >= queries / 4, s"only $usedIndex of $queries queries used an index")
  }

  test("generated joins of every type return the same rows with and without indexes") {
    var usedIndex = 0
    val types = Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")
    for (how <- types; variant <- 0 until 3) {
      val left = variant match {
        case 0 => a.select("i", "s", "dbl")
        case 1 => a.where(predicate("i")).select("i", "s")
        case _ => a.where(col("s").isNotNull).select("i", "id", "dec")
      }
      val right = if (variant == 1) b.where(col("w") > lit(20)).select("k", "v") else b.select("k", "v", "w")
      val plan = withClue(s"$how join, variant $variant\n") {
        sameResult(left.join(right, left("i") === right("k"), how))
      }
      if (indexesUsed(plan).nonEmpty) usedIndex += 1
    }
    assert(usedIndex >= types.size * 2, s"only $usedIndex joins used an index")
  }

  test("generated joins Spark broadcasts return the same rows (hints, threshold, AQE on and off)") {
    val types = Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")
    try {
      // Both sources are within the default threshold: Spark broadcasts whichever side it can.
      spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "10485760")
      val cases = for (how <- types; variant <- 0 until 3) yield (how, variant)
      for (((how, variant), n) <- cases.zipWithIndex; aqe <- Fuzz.settingsFor(Seq("false", "true"), n)) {
        spark.conf.set("spark.sql.adaptive.enabled", aqe)
        val left = if (variant == 1) a.where(predicate("i")).select("i", "s") else a.select("i", "s", "dbl")
        val right = b.select("k", "v")
        val hinted = if (variant == 2) broadcast(right) else right
        withClue(s"$how join, variant $variant, AQE $aqe\n") {
          sameResult(left.join(hinted, left("i") === hinted("k"), how))
        }
      }
    } finally {
      spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
      spark.conf.unset("spark.sql.adaptive.enabled")
    }
  }

  test("self joins, multi-key joins and joins with extra conditions") {
    val self = sameResult(a.select("i", "s").as("x").join(a.select("i", "dbl").as("y"), "i"))
    assert(indexesUsed(self) == Seq("dI"))
    val multiKey = sameResult(
      a.select("i", "s", "b").as("x").join(a.select("i", "s", "b").as("y"), Seq("i", "s")))
    assert(indexesUsed(multiKey) == Seq("dIS"))
    assert(shuffles(multiKey) == 0, multiKey.treeString)
    val extra =
      sameResult(a.select("i", "dbl").join(b.select("k", "w"), col("i") === col("k") && col("dbl") > col("w")))
    assert(indexesUsed(extra).nonEmpty)
    val aggregated = sameResult(a.select("i", "dbl").join(b.select("k", "v"), col("i") === col("k"))
        .groupBy("v").count())
    assert(indexesUsed(aggregated).nonEmpty)
  }

  test("joins under other joins and below aggregations, with column names in any case") {
    a.createOrReplaceTempView("ta")
    b.createOrReplaceTempView("tb")
    val nested = sameResult(spark.sql(
        """SELECT y.V, count(*) AS n, sum(x.DBL) AS total
        |FROM ta x JOIN tb y ON x.I = y.K JOIN ta z ON z.I = x.i
        |WHERE x.S IS NOT NULL GROUP BY y.V""".stripMargin))
    assert(indexesUsed(nested).contains("dK"), nested.treeString)
    val underAggregate = sameResult(a.select(col("I"), col("S")).groupBy("I").count()
        .join(b.select(col("K"), col("V")), col("I") === col("K"), "left_outer"))
    assert(indexesUsed(underAggregate).contains("dK"))
  }

  test("generated aggregations return the same rows with and without indexes") {
    import org.apache.spark.sql.functions.{avg, count, countDistinct, max, min, sum}
    var usedIndex = 0
    for (q <- 0 until aggregateQueries) {
      val key = Seq("i", "s", "d", "dec", "id")(rnd.nextInt(5))
      val value = coveredWith(key)(rnd.nextInt(coveredWith(key).size))
      // A date has no numeric cast: its day number is summed instead.
      val numeric = org.apache.spark.sql.functions.expr(
        if (value == "d") "CAST(unix_date(d) AS DOUBLE)" else s"try_cast($value AS DOUBLE)")
      val aggregate = Seq(count(col(value)), sum(numeric), min(col(value)),
        max(col(value)), countDistinct(col(value)), avg(numeric))(rnd.nextInt(6))
      val base = if (rnd.nextBoolean()) a else a.where(predicate(key))
      val plan = withClue(s"aggregate $q: $aggregate of $value grouped by $key\n") {
        sameResult(base.groupBy(key).agg(aggregate))
      }
      if (indexesUsed(plan).nonEmpty) usedIndex += 1
    }
    assert(usedIndex >= aggregateQueries / 2, s"only $usedIndex of $aggregateQueries aggregations used an index")
  }

  test("an index holding every column in another order returns whole rows unchanged") {
    // Source columns (k, v, w); dW is (w, v, k). SELECT * must not see w's bytes as k's.
    val plan = sameResult(b.where(col("w") === lit(100.0 / 3)))
    assert(indexesUsed(plan) == Seq("dW"), plan.treeString)
    val rows = withHyperspace(on = true)(b.where(col("w") === lit(100.0 / 3)).collect())
    assert(rows.map(_.toSeq) === Array(Seq(20, "v100", 100.0 / 3)))
    // One sample for both runs: sameResult evaluates its query twice.
    val sample = nonNullSample("l")
    val wide = sameResult(a.where(col("l") === lit(sample)))
    assert(indexesUsed(wide) == Seq("dAll"), wide.treeString)
  }

  test("generated filters over whole rows (SELECT *) return the same rows with and without indexes") {
    var usedIndex = 0
    for (q <- 0 until wholeRowQueries) {
      val c = if (q % 2 == 0) "l" else filterable(rnd.nextInt(filterable.size))
      val condition = predicate(c)
      val plan = withClue(s"query $q: SELECT * WHERE $condition\n") {
        sameResult(a.where(condition))
      }
      if (indexesUsed(plan).nonEmpty) usedIndex += 1
      val onB = withClue(s"query $q: SELECT * FROM b WHERE w > ${q * 5}\n") {
        sameResult(b.where(col("w") > lit(q * 5.0)))
      }
      if (indexesUsed(onB).nonEmpty) usedIndex += 1
    }
    assert(usedIndex >= wholeRowQueries / 2,
      s"only $usedIndex of ${2 * wholeRowQueries} whole-row queries used an index")
  }

  test("partition columns read from an index hold the right values") {
    val plan = sameResult(a.where(col("id") === lit(1234L)).select("id", "p", "s"))
    assert(indexesUsed(plan) == Seq("dId"))
    assert(a.where(col("id") === lit(1234L)).select("p").collect().head.getInt(0) == 1234 % 3)
  }
}
