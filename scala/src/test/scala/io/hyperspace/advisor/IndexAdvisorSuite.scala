package io.hyperspace.advisor

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.HyperspaceException
import io.hyperspace.rules.RuleTestSupport

/**
 * Workloads whose best indexes are known by construction: the advisor must find them, respect
 * the budget and count, merge what queries on one relation need, recommend nothing a plan would
 * not use, and what it recommends, once built, serves the queries with unchanged results.
 */
class IndexAdvisorSuite extends RuleTestSupport {

  // A wide table: an index on a key with one or two included columns is far narrower than a row.
  private def writeWide(name: String, rows: Int = 2000, files: Int = 4): String = {
    val path = newDir(name).getAbsolutePath + "/data"
    spark.range(0, rows, 1, files).selectExpr(
      "id", "id % 97 AS k", "id * 3 AS a", "CAST(id % 13 AS STRING) AS b", "id % 7 AS c",
      "REPEAT(CAST(id AS STRING), 20) AS payload", "REPEAT('x', 50) AS pad")
      .write.parquet(path)
    path
  }

  private lazy val left = writeWide("advisor-left")
  private lazy val right = writeWide("advisor-right", rows = 1500, files = 3)

  private def noBroadcast[T](body: => T): T = {
    val key = "spark.sql.autoBroadcastJoinThreshold"
    val previous = spark.conf.get(key)
    spark.conf.set(key, "-1")
    try body
    finally spark.conf.set(key, previous)
  }

  private def q(df: DataFrame, label: String, weight: Double = 1.0) = WorkloadQuery(label, df, weight)

  private def dropAll(recs: Recommendations): Unit = recs.indexes.foreach { r =>
    hs.deleteIndex(r.config.name)
    vacuumNow(r.config.name)
  }

  /** Builds the recommendations, then checks every served query uses its index and returns what it did without. */
  private def buildAndCheck(recs: Recommendations, queries: Map[String, DataFrame]): Unit = {
    try {
      assert(recs.createAll() == recs.indexes.map(_.config.name))
      recs.indexes.foreach { r =>
        r.queries.foreach { e =>
          // A fresh DataFrame per run: one that has run keeps the plan it ran with.
          def query = SparkInternals.ofRows(spark, queries(e.query).queryExecution.logical)
          val expected = withHyperspace(on = false)(rowsOf(query))
          withHyperspace(on = true) {
            assert(rowsOf(query) == expected, s"${e.query} with ${r.config.name}")
            assert(hs.whyNot(query, r.config.name) == s"${r.config.name}: used by this query", e.query)
            assert(hs.explain(query).contains(r.config.name), e.query)
          }
        }
      }
    } finally dropAll(recs)
  }

  test("a selective point lookup gets a covering index on its key including the columns it reads") {
    val lookup = spark.read.parquet(left).where("k = 42").select("a", "b")
    val recs = hs.recommend(Seq(q(lookup, "lookup")))
    assert(recs.indexes.size == 1, recs.toString)
    val r = recs.indexes.head
    assert(r.indexedColumns == Seq("k") && r.includedColumns.toSet == Set("a", "b"), recs.toString)
    assert(r.queries.map(_.query) == Seq("lookup"))
    val e = r.queries.head
    assert(e.bytesAfter < e.bytesBefore, recs.toString)
    assert(r.estimatedSizeBytes > 0 && r.estimatedBuildBytes > r.estimatedSizeBytes)
    assert(recs.workloadCostAfter < recs.workloadCostBefore)
    assert(recs.toString.contains("serves 'lookup'"), recs.toString)
    assert(recs.toJson.contains("\"indexedColumns\":[\"k\"]"), recs.toJson)
    buildAndCheck(recs, Map("lookup" -> lookup))
  }

  test("a join on k gets indexes on both sides, and the plan loses its shuffles") {
    noBroadcast {
      val join = spark.read.parquet(left).select("k", "a").join(spark.read.parquet(right).select("k", "c"), "k")
      val recs = hs.recommend(Seq(q(join, "join")))
      assert(recs.indexes.size == 2, recs.toString)
      assert(recs.indexes.forall(_.indexedColumns == Seq("k")), recs.toString)
      assert(recs.indexes.map(_.source).toSet.size == 2, recs.toString)
      assert(recs.indexes.map(_.includedColumns).toSet == Set(Seq("a"), Seq("c")), recs.toString)
      val e = recs.indexes.head.queries.head
      assert(e.exchangesBefore == 2 && e.exchangesAfter == 0, recs.toString)
      buildAndCheck(recs, Map("join" -> join))
    }
  }

  test("the maximum count and the budget are respected") {
    noBroadcast {
      val join = spark.read.parquet(left).select("k", "a").join(spark.read.parquet(right).select("k", "c"), "k")
      val lookup = spark.read.parquet(left).where("id = 7").select("payload")
      val workload = Seq(q(join, "join"), q(lookup, "lookup"))
      val all = hs.recommend(workload)
      assert(all.indexes.size == 3, all.toString)
      val one = hs.recommend(workload, maxIndexes = Some(1))
      assert(one.indexes.size == 1, one.toString)
      assert(hs.recommend(workload, maxIndexes = Some(0)).indexes.isEmpty)
      val smallest = all.indexes.map(_.estimatedSizeBytes).min
      val budget = all.totalSizeBytes - 1
      val within = hs.recommend(workload, budgetBytes = Some(budget))
      assert(within.totalSizeBytes <= budget && within.indexes.nonEmpty, within.toString)
      // Below every covering index, only a sketch table fits: id rises from file to file, so a
      // MinMax sketch on it skips all but one file for the lookup.
      val tight = hs.recommend(workload, budgetBytes = Some(smallest - 1))
      assert(tight.totalSizeBytes <= smallest - 1, tight.toString)
      assert(tight.indexes.map(_.config.name) == Seq("data_minmax_id"), tight.toString)
      assert(hs.recommend(workload, budgetBytes = Some(0)).indexes.isEmpty)
    }
  }

  test("queries on one relation and key share one index including what each needs; weights rank") {
    val q1 = spark.read.parquet(left).where("k = 3").select("a")
    val q2 = spark.read.parquet(left).where("k IN (4, 5)").select("b")
    val recs = hs.recommend(Seq(q(q1, "q1"), q(q2, "q2", weight = 3)))
    assert(recs.indexes.size == 1, recs.toString)
    assert(recs.indexes.head.includedColumns == Seq("a", "b"), recs.toString)
    assert(recs.indexes.head.queries.map(_.query) == Seq("q1", "q2"))
    assert(recs.indexes.head.queries.map(_.weight) == Seq(1.0, 3.0))
  }

  test("a query no index helps gets nothing") {
    val count = spark.read.parquet(left).groupBy().count()
    val everything = spark.read.parquet(left).where("id > 5") // every column: an index is no narrower
    val recs = hs.recommend(Seq(q(count, "count"), q(everything, "everything")))
    assert(recs.indexes.isEmpty, recs.toString)
    assert(recs.workloadCostAfter == recs.workloadCostBefore)
  }

  test("SQL queries are a workload; bad input gets clear errors") {
    spark.read.parquet(left).createOrReplaceTempView("advisor_left")
    val recs = hs.recommendSql("SELECT a FROM advisor_left WHERE k = 11")
    assert(recs.indexes.map(_.indexedColumns) == Seq(Seq("k")), recs.toString)
    assert(recs.indexes.head.queries.head.query == "SELECT a FROM advisor_left WHERE k = 11")
    val empty = intercept[HyperspaceException](hs.recommend(Nil))
    assert(empty.getMessage.contains("the workload is empty"), empty.getMessage)
    val missing = intercept[HyperspaceException](hs.recommendSql("SELECT a FROM no_such_table WHERE k = 1"))
    assert(missing.getMessage.contains("Workload query 'SELECT a FROM no_such_table WHERE k = 1' cannot be analyzed"),
      missing.getMessage)
    val budget = intercept[HyperspaceException](hs.recommend(Seq(q(spark.read.parquet(left), "x")), Some(-1L)))
    assert(budget.getMessage.contains("budget must be at least 0"), budget.getMessage)
    val weight = intercept[HyperspaceException](q(spark.read.parquet(left), "w", weight = 0))
    assert(weight.getMessage.contains("Workload query 'w': the weight must be a positive number"))
  }

  test("SHOW HYPERSPACE RECOMMENDATIONS: SQL queries with weights, a budget and a limit") {
    spark.read.parquet(left).createOrReplaceTempView("advisor_sql_left")
    val rows = spark.sql("SHOW HYPERSPACE RECOMMENDATIONS LIMIT 1 FOR " +
      "'SELECT a FROM advisor_sql_left WHERE k = 5' WEIGHT 2, 'SELECT b FROM advisor_sql_left WHERE k = 6'").collect()
    assert(rows.length == 1)
    val row = rows.head
    assert(row.getAs[Int]("rank") == 1)
    assert(row.getAs[scala.collection.Seq[String]]("indexedColumns").toSeq == Seq("k"))
    assert(row.getAs[scala.collection.Seq[String]]("includedColumns").toSeq == Seq("a", "b"))
    assert(row.getAs[String]("sourceSql").startsWith("parquet.`file:"), row)
    val evidence = row.getAs[String]("evidence")
    assert(evidence.contains("\"query\":\"SELECT a FROM advisor_sql_left WHERE k = 5\",\"weight\":2.0"), evidence)
    assert(spark.sql("SHOW HYPERSPACE RECOMMENDATIONS BUDGET 0 FOR 'SELECT a FROM advisor_sql_left WHERE k = 5'")
        .collect().isEmpty)
    // WITH REJECTED: the same recommended rows first, then every candidate left out with its reason.
    val budget0 = spark.sql("SHOW HYPERSPACE RECOMMENDATIONS BUDGET 0 WITH REJECTED FOR " +
      "'SELECT a FROM advisor_sql_left WHERE k = 5'").collect()
    assert(budget0.nonEmpty && budget0.forall(r => r.isNullAt(r.fieldIndex("rank"))), budget0.mkString("\n"))
    assert(budget0.forall(_.getAs[String]("reason") == RejectedCandidate.OverBudget), budget0.mkString("\n"))
    assert(budget0.exists(_.getAs[scala.collection.Seq[String]]("indexedColumns").toSeq == Seq("k")))
    val limited = spark.sql("SHOW HYPERSPACE RECOMMENDATIONS LIMIT 1 WITH REJECTED FOR " +
      "'SELECT a FROM advisor_sql_left WHERE k = 5' WEIGHT 2, 'SELECT b FROM advisor_sql_left WHERE k = 6'").collect()
    assert(limited.head.getAs[String]("name") == row.getAs[String]("name") && limited.head.isNullAt(
      limited.head.fieldIndex("reason")))
    assert(limited.tail.forall(r => r.isNullAt(r.fieldIndex("rank")) && r.getAs[String]("detail").nonEmpty))
    val bad = intercept[HyperspaceException](spark.sql("SHOW HYPERSPACE RECOMMENDATIONS WITH FOR 'SELECT 1'"))
    assert(bad.getMessage.contains("REJECTED"), bad.getMessage)
    // The source the row names is what CREATE HYPERSPACE INDEX takes.
    spark.sql(
      s"CREATE HYPERSPACE INDEX ${row.getAs[String]("name")} ON ${row.getAs[String]("sourceSql")} (k) INCLUDE (a, b)")
    try withHyperspace(on = true) {
        assert(hs.whyNot(spark.sql("SELECT a FROM advisor_sql_left WHERE k = 5"), row.getAs[String]("name"))
            .endsWith("used by this query"))
      }
    finally {
      hs.deleteIndex(row.getAs[String]("name"))
      vacuumNow(row.getAs[String]("name"))
    }
    val e = intercept[HyperspaceException](spark.sql("SHOW HYPERSPACE RECOMMENDATIONS FOR SELECT 1"))
    assert(e.getMessage.contains("expected a query as a string literal"), e.getMessage)
  }

  test("generated workloads: every recommended index is used by the queries it names, results unchanged") {
    noBroadcast {
      val rnd = new scala.util.Random(21)
      val cols = Seq("a", "b", "c", "payload")
      val queries = (1 to 8).map { i =>
        val picked = rnd.shuffle(cols).take(1 + rnd.nextInt(2))
        val df = rnd.nextInt(3) match {
          case 0 => spark.read.parquet(left).where(s"k = ${rnd.nextInt(97)}").select(
              picked.map(org.apache.spark.sql.functions.col): _*)
          case 1 => spark.read.parquet(right).where(s"c BETWEEN 1 AND ${1 + rnd.nextInt(3)}").select("k", picked.head)
          case _ =>
            spark.read.parquet(left).select("k", picked.head).join(spark.read.parquet(right).select("k", "id"), "k")
        }
        s"g$i" -> df
      }
      val recs = hs.recommend(queries.map { case (l, df) => q(df, l) }, maxIndexes = Some(3))
      assert(recs.indexes.size <= 3)
      assert(recs.indexes.forall(_.queries.nonEmpty), recs.toString)
      buildAndCheck(recs, queries.toMap)
    }
  }

  test("index sizes follow sampled string widths: a narrow index over rows of long strings fits a small budget") {
    val path = newDir("advisor-widths").getAbsolutePath + "/data"
    spark.range(0, 4000, 1, 4).selectExpr("id", "id % 97 AS k", "id * 3 AS a",
      "CONCAT(REPEAT('x', 400), CAST(id AS STRING)) AS payload", "CAST(NULL AS STRING) AS empty")
      .write.parquet(path)
    val lookup = spark.read.parquet(path).where("k = 5").select("a")
    val relation = lookup.queryExecution.optimizedPlan.collectFirst {
      case r: org.apache.spark.sql.execution.datasources.LogicalRelation => r
    }.get
    val widths = RelationSample.of(spark, relation).widths
    assert(widths("payload") > 400 && widths("payload") < 405, widths)
    assert(widths("empty") == 0.0 && widths("k") == 8.0 && widths("id") == 8.0, widths)

    val sourceBytes = new java.io.File(path).listFiles().filter(_.getName.endsWith(".parquet")).map(_.length).sum
    // (k, a) is 16 of ~427 bytes a row; with a string's default 20 bytes it would be 16 of 64, a
    // quarter of the source, and not fit a tenth of it.
    val recs = hs.recommend(Seq(q(lookup, "lookup")), budgetBytes = Some(sourceBytes / 10))
    assert(recs.indexes.map(r => (r.indexedColumns, r.includedColumns)) == Seq(Seq("k") -> Seq("a")),
      recs)
    val share = recs.indexes.head.estimatedSizeBytes.toDouble / sourceBytes
    assert(share > 0.03 && share < 0.045, s"$share of $sourceBytes bytes")
    // A query needing the long strings gets an index almost as large as the source.
    val wide = spark.read.parquet(path).where("k = 5").select("payload")
    val wideRecs = hs.recommend(Seq(q(wide, "wide")))
    assert(wideRecs.indexes.head.estimatedSizeBytes.toDouble / sourceBytes > 0.95, wideRecs)
  }
}
