package io.hyperspace.explain

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.functions.{count, sum}

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch, ValueListSketch}
import io.hyperspace.rules.RuleTestSupport

/**
 * whyNot and the optimizer cannot disagree: over generated queries (filters, projections, joins
 * and aggregations over three sources with covering and data skipping indexes, some stale, one
 * deleted; rewriting on and off, hybrid scan on and off, broadcasts allowed or not), an index is
 * reported "used" exactly when the query's executed plan reads it, and every other index gets a
 * reason. Plans only; a few results are compared with and without indexes.
 *
 * `HYPERSPACE_WHYNOT_SEED` replays a run; `HYPERSPACE_WHYNOT_QUERIES` sets how many (150; `make test-full`: 500).
 */
class WhyNotAgreementSuite extends RuleTestSupport {

  private lazy val a = writeSource("agree-a", rows = 600, files = 4)
  private lazy val b = writeSource("agree-b", rows = 300, files = 3)
  private lazy val c = writeSource("agree-c", rows = 200, files = 2)
  private lazy val sources = Seq(a, b, c)

  private val seed = sys.env.get("HYPERSPACE_WHYNOT_SEED").map(_.toLong).getOrElse(System.nanoTime())
  private val queries = sys.env.get("HYPERSPACE_WHYNOT_QUERIES").map(_.toInt).getOrElse(150)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    def read(p: String) = spark.read.parquet(p)
    hs.createIndex(read(a), IndexConfig("aByName", Seq("name"), Seq("amount")))
    hs.createIndex(read(a), IndexConfig("aById", Seq("id"), Seq("name")))
    hs.createIndex(read(a), IndexConfig("aByIdWide", Seq("id"), Seq("name", "amount", "day")))
    hs.createIndex(read(a), IndexConfig("aByDay", Seq("day"), Seq("id")))
    hs.createIndex(read(a), DataSkippingIndexConfig("aSkip", MinMaxSketch("id")))
    hs.createIndex(read(b), IndexConfig("bById", Seq("id"), Seq("name", "amount")))
    hs.createIndex(read(b), IndexConfig("bByName", Seq("name"), Seq("id")))
    hs.createIndex(read(b), DataSkippingIndexConfig("bSkip", MinMaxSketch("amount"), ValueListSketch("name")))
    spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
    hs.createIndex(read(c), IndexConfig("cById", Seq("id"), Seq("name", "amount")))
    spark.conf.unset("spark.hyperspace.index.lineage.enabled")
    hs.createIndex(read(c), IndexConfig("cByName", Seq("name"), Seq("id")))
    hs.createIndex(read(a), IndexConfig("aDeleted", Seq("amount"), Seq("id")))
    hs.deleteIndex("aDeleted")
    // c changes after its indexes: a stale index is usable only through hybrid scan.
    spark.range(1000, 1010).selectExpr("id", "CONCAT('name-', id % 17) AS name", "CAST(id * 1.5 AS DOUBLE) AS amount",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 5 AS INT)) AS day").coalesce(1).write.mode("append").parquet(c)
  }

  private val columns = Seq("id", "name", "amount", "day")

  private def predicate(r: Random, column: String): String = column match {
    case "id" => Seq(s"id = ${r.nextInt(600)}", s"id < ${r.nextInt(600)}",
        s"id BETWEEN ${r.nextInt(300)} AND ${300 + r.nextInt(300)}",
        s"id IN (${r.nextInt(600)}, ${r.nextInt(600)})")(r.nextInt(4))
    case "name" => Seq(s"name = 'name-${r.nextInt(17)}'", s"name IN ('name-${r.nextInt(17)}', 'name-${r.nextInt(17)}')",
        s"name > 'name-${r.nextInt(17)}'")(r.nextInt(3))
    case "amount" => Seq(s"amount > ${r.nextInt(900)}", s"amount = ${r.nextInt(600) * 1.5}")(r.nextInt(2))
    case _ => s"day = DATE'2024-01-0${1 + r.nextInt(5)}'"
  }

  private def subset(r: Random, min: Int): Seq[String] = {
    val picked = r.shuffle(columns).take(min + r.nextInt(columns.size - min + 1))
    columns.filter(picked.contains)
  }

  private def scan(r: Random, path: String): DataFrame = {
    val df = spark.read.parquet(path)
    if (r.nextInt(3) == 0) df else df.where(predicate(r, columns(r.nextInt(columns.size))))
  }

  /** A generated query and its description (for failure messages). */
  private def generate(r: Random): (String, DataFrame) = {
    val src = sources(r.nextInt(sources.size))
    r.nextInt(3) match {
      case 0 =>
        val cols = subset(r, 1)
        val pred = predicate(r, columns(r.nextInt(columns.size)))
        (s"$src WHERE $pred SELECT ${cols.mkString(", ")}",
          spark.read.parquet(src).where(pred).select(cols.head, cols.tail: _*))
      case 1 =>
        val other = sources(r.nextInt(sources.size))
        val key = Seq("id", "name")(r.nextInt(2))
        val left = scan(r, src).selectExpr(key +: subset(r, 1).filterNot(_ == key).map(c => s"$c AS l_$c"): _*)
        val right = scan(r, other).selectExpr(key +: subset(r, 1).filterNot(_ == key).map(c => s"$c AS r_$c"): _*)
        (s"$src JOIN $other USING ($key)\n${left.queryExecution.logical}\n${right.queryExecution.logical}",
          left.join(right, key))
      case _ =>
        val key = columns(r.nextInt(columns.size))
        val in = scan(r, src)
        val agg = if (r.nextBoolean()) in.groupBy(key).agg(sum("amount")) else in.groupBy(key).agg(count("*"))
        (s"$src GROUP BY $key\n${in.queryExecution.logical}", agg)
    }
  }

  private def unwrap(plan: SparkPlan): SparkPlan = plan match {
    case a: AdaptiveSparkPlanExec => a.executedPlan
    case p => p
  }

  test("an index is reported used by whyNot iff the executed plan reads it; every other index has a reason") {
    val r = new Random(seed)
    val names = new io.hyperspace.index.IndexCatalog(spark).summaries().map(_.name)
    var (used, blocked) = (0, 0)
    withClue(s"(seed $seed: rerun with HYPERSPACE_WHYNOT_SEED=$seed)\n") {
      (1 to queries).foreach { n =>
        val rewriting = r.nextInt(5) != 0
        spark.conf.set("spark.hyperspace.apply.enabled", rewriting.toString)
        spark.conf.set("spark.hyperspace.index.hybridscan.enabled", r.nextBoolean().toString)
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", if (r.nextBoolean()) "-1" else "10485760")
        val (description, df) = generate(r)
        val reads = Plans.indexesIn(unwrap(df.queryExecution.executedPlan)).map(_.name).toSet
        val text = hs.whyNot(df)
        val lines = text.linesIterator.map(l => l.takeWhile(_ != ':') -> l.dropWhile(_ != ':').drop(2)).toMap
        withClue(s"query $n: $description\nsettings: apply=$rewriting\nwhyNot:\n$text\nplan reads: $reads\n") {
          assert(lines.keySet == names.toSet)
          names.foreach { name =>
            val said = lines(name)
            // A used index may add what it decides at run time (join pruning by its sketches).
            assert(said.startsWith("used by this query") == reads.contains(name), s"index $name")
            if (!reads.contains(name))
              assert(said.trim.nonEmpty && !said.contains("used by this query"), s"index $name")
          }
          assert(rewriting || reads.isEmpty)
          // A few results, with and without indexes.
          if (n % 100 == 1 && reads.nonEmpty) {
            val withIdx = rowsOf(df)
            spark.conf.set("spark.hyperspace.apply.enabled", "false")
            assert(rowsOf(generateAgain(df)) == withIdx)
          }
        }
        if (reads.nonEmpty) used += 1
        if (!rewriting) blocked += 1
      }
    }
    // The generator reaches both outcomes often enough for the property to mean something.
    assert(used > queries / 10 && blocked > queries / 20, s"used in $used, rewriting off in $blocked of $queries")
  }

  // The same query planned afresh (a DataFrame keeps the plan it was first optimized with).
  private def generateAgain(df: DataFrame): DataFrame =
    org.apache.spark.sql.hyperspace.SparkInternals.ofRows(spark, df.queryExecution.logical)
}
