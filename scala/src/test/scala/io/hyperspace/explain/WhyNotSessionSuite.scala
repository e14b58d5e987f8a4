package io.hyperspace.explain

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/** whyNot reports what the session does: an index is "used" only if the session's plan reads it. */
class WhyNotSessionSuite extends RuleTestSupport {

  private lazy val orders = writeSource("whynot-session-orders", rows = 400, files = 2)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(orders), IndexConfig("wsByName", Seq("name"), Seq("amount")))
  }

  private def byName = spark.read.parquet(orders).where("name = 'name-2'").select("amount")

  test("with rewriting off, whyNot does not call an index used, and says what rewriting would do") {
    withHyperspace(on = false) {
      assert(indexesUsed(byName.queryExecution.executedPlan).isEmpty)
      val text = hs.whyNot(byName, "wsByName")
      assert(!text.contains("used by this query"), text)
      assert(text.contains("rewriting is off in this session (spark.hyperspace.apply.enabled=false"), text)
      assert(text.contains("with rewriting on it would be used"), text)
    }
    withHyperspace(on = true) {
      assert(hs.whyNot(byName, "wsByName") == "wsByName: used by this query")
    }
  }

  test("with rewriting off, an index rewriting would not use gets both the switch and the rule's reason") {
    withHyperspace(on = false) {
      val text = hs.whyNot(spark.read.parquet(orders).where("name = 'name-2'").select("id"), "wsByName")
      assert(text.contains("rewriting is off"), text)
      assert(text.contains("with rewriting on it would not be used either: column(s) id not covered"), text)
    }
  }
}

/** A session built without the extension: no query is rewritten, and whyNot says so. */
class WhyNotWithoutExtensionSuite extends RuleTestSupport {

  override protected def withExtension: Boolean = false

  test("without the extension, whyNot names the missing extension, not a better-ranked index") {
    val orders = writeSource("whynot-noext-orders", rows = 200, files = 2)
    hs.createIndex(spark.read.parquet(orders), IndexConfig("neByName", Seq("name"), Seq("amount")))
    val query = spark.read.parquet(orders).where("name = 'name-2'").select("amount")
    // The switch alone changes nothing: the rule is not in this session's optimizer.
    withHyperspace(on = true) {
      assert(indexesUsed(query.queryExecution.executedPlan).isEmpty)
      val text = hs.whyNot(query, "neByName")
      assert(!text.contains("ranked") && !text.contains("chosen instead") && !text.contains("used by this query"), text)
      assert(text.contains("extension is not installed in this session"), text)
      assert(text.contains("spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension"), text)
    }
  }
}
