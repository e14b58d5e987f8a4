package io.hyperspace.explain

import java.util.concurrent.atomic.{AtomicBoolean, AtomicReference}

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * explain, whyNot and whatIf plan a query with and without indexes while other threads use the
 * same session: those threads must plan as the session's own switch says throughout, and the
 * session's conf must never change.
 */
class ExplainConcurrencySuite extends RuleTestSupport {

  private lazy val orders = writeSource("explain-concurrency-orders", rows = 400, files = 2)
  private val key = "spark.hyperspace.apply.enabled"

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(orders), IndexConfig("ecByName", Seq("name"), Seq("amount")))
  }

  private def query = spark.read.parquet(orders).where("name = 'name-2'").select("amount")

  /**
   * Runs explain, whyNot and whatIf `rounds` times while another thread plans `query` and reads
   * the switch again and again; returns what that thread saw that it should not have.
   */
  private def concurrently(sessionSetting: String, rounds: Int): Seq[String] = {
    spark.conf.set(key, sessionSetting)
    val expectIndex = sessionSetting == "true"
    val stop = new AtomicBoolean(false)
    val seen = new AtomicReference[Vector[String]](Vector.empty)
    def saw(what: String): Unit = seen.updateAndGet(_ :+ what)
    val planner = new Thread(() => {
      var plans = 0
      while (!stop.get() || plans == 0) {
        val setting = spark.conf.get(key)
        if (setting != sessionSetting) saw(s"$key=$setting")
        val used = indexesUsed(query.queryExecution.executedPlan).nonEmpty
        if (used != expectIndex) saw(s"a plan ${if (used) "with" else "without"} the index")
        plans += 1
      }
    })
    planner.start()
    try {
      (1 to rounds).foreach { _ =>
        hs.explain(query)
        hs.whyNot(query)
        hs.whatIf(query, IndexConfig("ecHypo", Seq("name"), Seq("amount")))
      }
    } finally {
      stop.set(true)
      planner.join()
    }
    assert(spark.conf.get(key) == sessionSetting)
    seen.get().distinct
  }

  test("with rewriting off in the session, a concurrent query never gets a rewritten plan") {
    val before = spark.conf.getAll
    val wrong = concurrently("false", rounds = 5)
    assert(wrong.isEmpty, s"the concurrent thread saw: ${wrong.mkString(", ")}")
    assert(spark.conf.getAll == before.updated(key, "false"))
  }

  test("with rewriting on in the session, a concurrent query never loses its rewrite") {
    val wrong = concurrently("true", rounds = 5)
    assert(wrong.isEmpty, s"the concurrent thread saw: ${wrong.mkString(", ")}")
  }

  test("explain still shows the plan with indexes when the session's rewriting is off") {
    withHyperspace(on = false) {
      val text = hs.explain(query)
      assert(text.contains("Indexes used:\n" + "=" * 61 + "\necByName: "), text)
    }
  }
}
