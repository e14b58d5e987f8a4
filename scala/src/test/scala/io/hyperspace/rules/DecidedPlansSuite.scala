package io.hyperspace.rules

import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.plans.logical.{Limit, LogicalPlan}

import io.hyperspace.index.{CatalogRoot, IndexConfig}

/**
 * The rule's reuse of what an earlier pass of the same query's planning decided
 * ([[DecidedPlans]]): only that planning, only that plan, only that catalog version.
 */
class DecidedPlansSuite extends RuleTestSupport {

  private def token(): Option[String] = CatalogRoot.of(spark, None).version()

  private def within[T](planning: QueryPlanningTracker)(body: => T): T =
    QueryPlanningTracker.withTracker(planning)(body)

  test("a plan a pass returned is reused by that query's planning only, and not once the catalog changed") {
    val path = writeSource("decided", rows = 100, files = 2)
    hs.createIndex(spark.read.parquet(path), IndexConfig("decidedIdx", Seq("id"), Seq("name")))
    val source = spark.read.parquet(path).where("id = 7").select("name").queryExecution.optimizedPlan
    withHyperspace(on = true)(reusedOnlyWhereDecided(path, source))
  }

  private def reusedOnlyWhereDecided(path: String, source: LogicalPlan): Unit = {
    val planning = new QueryPlanningTracker
    val rule = ApplyHyperspace(spark)

    val decided = within(planning)(rule(source))
    assert(ApplyHyperspace.indexesIn(decided).map(_.name) == Seq("decidedIdx"))
    within(planning) {
      assert(DecidedPlans.decidedAlready(decided, token()))
      assert(rule(decided) eq decided)
      // A later pass may be given an equal plan that a rule changing nothing built anew.
      assert(DecidedPlans.decidedAlready(decided.clone(), token()))
      assert(!DecidedPlans.decidedAlready(source, token()), "a plan no pass returned")
    }
    assert(!DecidedPlans.decidedAlready(decided, token()), "outside any planning nothing is reused")
    assert(!within(new QueryPlanningTracker)(DecidedPlans.decidedAlready(decided, token())),
      "another query's planning decides again")

    // A plan other than the one returned is decided again, though it carries the tag copied to it.
    val limited = Limit(Literal(1), decided)
    limited.copyTagsFrom(decided)
    within(planning)(assert(!DecidedPlans.decidedAlready(limited, token())))

    hs.createIndex(spark.read.parquet(path), IndexConfig("decidedIdx2", Seq("name"), Seq("id")))
    within(planning)(assert(!DecidedPlans.decidedAlready(decided, token()), "the catalog changed since"))
  }

  test("an optimized plan is a fixed point of a pass deciding anew, so reusing a decision changes no query") {
    val path = writeSource("passes", rows = 200, files = 4)
    val data = spark.read.parquet(path)
    hs.createIndex(data, IndexConfig("passesById", Seq("id"), Seq("name")))
    hs.createIndex(data, IndexConfig("passesByName", Seq("name"), Seq("id")))
    data.createOrReplaceTempView("passes")
    // Filters inferred in the second batch of operator optimization, joins, subqueries and
    // aggregates: each plan goes through several fixed-point passes.
    val queries = Seq(
      "SELECT name FROM passes WHERE id = 17",
      "SELECT a.name, b.id FROM passes a JOIN passes b ON a.id = b.id WHERE a.id < 40",
      "SELECT id FROM passes WHERE name = (SELECT max(name) FROM passes WHERE id = 3)",
      "SELECT name, count(*) FROM passes WHERE id IN (SELECT id FROM passes WHERE name > 'name-5') GROUP BY name")
    val used = queries.map { sql =>
      val plan = withHyperspace(on = true) {
        val optimized = spark.sql(sql).queryExecution.optimizedPlan
        // The optimized plan is a fixed point of a pass deciding anew (no reuse outside planning).
        val again = ApplyHyperspace(spark)(optimized)
        assert(again == optimized, s"$sql: a pass deciding anew changed the optimized plan:\n$optimized\n$again")
        optimized
      }
      assert(ApplyHyperspace.indexesIn(plan).nonEmpty == indexesUsed(sameResult(spark.sql(sql))).nonEmpty)
      ApplyHyperspace.indexesIn(plan)
    }
    assert(used.count(_.nonEmpty) >= 3, used)
  }
}
