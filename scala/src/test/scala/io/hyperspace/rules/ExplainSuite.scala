package io.hyperspace.rules

import org.apache.spark.sql.functions.expr

import io.hyperspace.index.IndexConfig

class ExplainSuite extends RuleTestSupport {

  private lazy val orders = writeSource("explain-orders", rows = 1000, files = 4)
  private lazy val changing = writeSource("explain-changing", rows = 100, files = 2)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    hs.createIndex(spark.read.parquet(orders), IndexConfig("exById", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(orders), IndexConfig("exByName", Seq("name"), Seq("amount")))
    hs.createIndex(spark.read.parquet(changing), IndexConfig("exStale", Seq("id"), Seq("name")))
    spark.range(900, 905).selectExpr("id", "'x' AS name", "1.0 AS amount", "DATE'2024-01-01' AS day")
      .coalesce(1).write.mode("append").parquet(changing)
    hs.createIndex(spark.read.parquet(orders), IndexConfig("exDeleted", Seq("day"), Seq("id")))
    hs.deleteIndex("exDeleted")
  }

  private def selfJoin = spark.read.parquet(orders).select("id", "name")
    .join(spark.read.parquet(orders).selectExpr("id", "name AS other"), "id")

  test("explain shows both plans, marks what differs and names the indexes used") {
    val text = hs.explain(spark.read.parquet(orders).where("name = 'name-2'").select("amount"))
    assert(text.contains("Plan with indexes:") && text.contains("Plan without indexes:"))
    assert(text.contains("<----") && text.contains("---->"))
    val marked = text.linesIterator.filter(_.contains("<----")).mkString("\n")
    assert(marked.contains("Hyperspace(Type: CI, Name: exByName, LogVersion: 1)"), marked)
    assert(text.contains("Indexes used:\n" + "=" * 61 + "\nexByName: "), text)
  }

  test("verbose explain compares operator counts: a two-sided indexed join drops both Exchanges") {
    val text = hs.explain(selfJoin, verbose = true)
    assert(text.contains("Physical operator stats:"))
    assert(text.contains("(Exchange 2 → 0)"), text)
    assert(text.contains("exById: "))
  }

  test("display modes: console colours, html markup") {
    spark.conf.set("spark.hyperspace.explain.displayMode", "console")
    try assert(hs.explain(selfJoin).contains("\u001b[42m"))
    finally spark.conf.unset("spark.hyperspace.explain.displayMode")
    spark.conf.set("spark.hyperspace.explain.displayMode", "html")
    try {
      val html = hs.explain(selfJoin)
      assert(html.startsWith("<pre>") && html.contains("<b>") && !html.contains("<----"))
    } finally spark.conf.unset("spark.hyperspace.explain.displayMode")
  }

  test("explain leaves the session's switch as it was") {
    spark.conf.set("spark.hyperspace.apply.enabled", "false")
    hs.explain(selfJoin)
    assert(spark.conf.get("spark.hyperspace.apply.enabled") == "false")
    spark.conf.unset("spark.hyperspace.apply.enabled")
    hs.explain(selfJoin)
    assert(spark.conf.getOption("spark.hyperspace.apply.enabled").isEmpty)
  }

  test("whyNot gives the reason for every index in words") {
    val byName = spark.read.parquet(orders).where("name = 'name-2'").select("amount", "day")
    val reasons = withHyperspace(on = true)(hs.whyNot(byName)).linesIterator.map(l => l.takeWhile(_ != ':') -> l).toMap
    assert(reasons("exByName").contains("column(s) day not covered by the index"), reasons)
    // The filter rule turns it down for its columns first (#14: reasons are the rules' own).
    assert(reasons("exById").contains("column(s) amount, day not covered by the index"), reasons)
    assert(withHyperspace(on = true)(hs.whyNot(spark.read.parquet(orders).select("id"), "exById"))
        .contains("no filter on the leading indexed column 'id' and no join"))
    assert(reasons("exDeleted").contains("the index is DELETED"), reasons)
    assert(reasons("exStale").contains("the query does not read the data the index was built from"), reasons)

    val used = withHyperspace(on = true)(
      hs.whyNot(spark.read.parquet(orders).where("name = 'name-2'").select("amount"), "exByName"))
    assert(used == "exByName: used by this query")

    val stale = hs.whyNot(spark.read.parquet(changing).where("id = 3").select("name"), "exStale")
    assert(stale.contains("the source changed since the index was built (1 file(s) appended or rewritten, 0 deleted)"),
      stale)

    val nonEqui = spark.read.parquet(orders).select("id").as("a")
      .join(spark.read.parquet(orders).select("id").as("b"), expr("a.id < b.id"))
    assert(hs.whyNot(nonEqui, "exById").contains("the join is not an equi-join"))
    val otherKeys = spark.read.parquet(orders).select("name", "id").as("a")
      .join(spark.read.parquet(orders).select("name").as("b"), "name")
    assert(hs.whyNot(otherKeys, "exById").contains("the join keys (name) are not the indexed columns (id)"))
    intercept[io.hyperspace.HyperspaceIndexNotFoundException](hs.whyNot(byName, "nope"))
  }

  test("whyNot tells apart other read options from changed files") {
    val csv = newDir("explain-csv").getAbsolutePath + "/data"
    spark.range(0, 50).selectExpr("id", "CONCAT('v', id) AS v").write.option("header", "true").csv(csv)
    hs.createIndex(spark.read.option("header", "true").csv(csv), IndexConfig("exCsv", Seq("id"), Seq("v")))
    val other = spark.read.option("header", "true").option("sep", ",").csv(csv).where("id = '3'").select("v")
    val reason = hs.whyNot(other, "exCsv")
    assert(reason.contains("the query reads the data as csv with options"), reason)
    assert(reason.contains("the index was built from csv"), reason)
  }

  test("whatIf plans with hypothetical indexes, writing nothing") {
    val query = spark.read.parquet(orders).select("day", "name")
      .join(spark.read.parquet(orders).selectExpr("day", "id AS other"), "day")
    val before = Option(systemPath.list()).map(_.toSet)
    val report = hs.whatIf(query, IndexConfig("hypoDay", Seq("day"), Seq("name", "id")))
    assert(report.contains("hypoDay (day; incl. name, id; 4 buckets, ~"), report)
    assert(report.contains("would be used"), report)
    assert(report.contains("Shuffles (Exchange): 2 without → 0 with the hypothetical indexes"), report)
    val Array(without, withIdx) = "Bytes scanned: (\\d+) without → (\\d+) with".r
      .findFirstMatchIn(report).get.subgroups.map(_.toLong).toArray
    assert(withIdx < without, report)
    assert(Option(systemPath.list()).map(_.toSet) == before, "whatIf must not write anything")

    val useless = hs.whatIf(query, IndexConfig("hypoAmount", Seq("amount"), Seq("day")))
    assert(useless.contains("hypoAmount") && useless.contains("would not be used"), useless)
    // Double keys: the index can serve the join, but Spark re-shuffles normalised float keys.
    val doubles = spark.read.parquet(orders).select("amount", "day")
      .join(spark.read.parquet(orders).selectExpr("amount", "id AS other"), "amount")
    assert(hs.whatIf(doubles, IndexConfig("hypoAmount", Seq("amount"), Seq("day", "id"))).contains("would be used"))
    val e = intercept[io.hyperspace.HyperspaceException](hs.whatIf(query, IndexConfig("h", Seq("nope"))))
    assert(e.getMessage.contains("no data the query reads has the columns nope"))
  }
}
