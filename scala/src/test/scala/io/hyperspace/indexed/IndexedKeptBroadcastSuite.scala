package io.hyperspace.indexed

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.exchange.BroadcastExchangeExec
import org.apache.spark.sql.execution.hyperspace.KeptBroadcastExchangeExec
import org.apache.spark.sql.functions._

import io.hyperspace._

/**
 * Spark's broadcast of a small cached Indexed DataFrame (the index side of a join Spark plans)
 * is kept with the version: a later query broadcasting the same rows the same way runs no job to
 * collect them, and every query returns the rows of the same join over the plainly cached
 * table — after other filters and projections, appends, unpersist, with adaptive execution on
 * and off.
 */
class IndexedKeptBroadcastSuite extends SparkSessionSuite with SameRows with ExecutedNodes {

  private val MaxBytes = "spark.hyperspace.indexed.keptBroadcasts.maxBytes"

  private def kept(df: DataFrame): Seq[KeptBroadcastExchangeExec] =
    executedNodes(df).collect { case k: KeptBroadcastExchangeExec => k }

  /** Rows the index scans of `df`'s last run produced. */
  private def indexRowsRead(df: DataFrame): Long =
    executedNodes(df).collect { case s: IndexedScanExec => s.metrics("numOutputRows").value }.sum

  private def keptBytes(idf: IndexedDataFrame): Long = idf.memoryStats("keptBroadcastBytes")

  /** A dimension of 300 keys (a few null), a fact table over 400 keys referring to it. */
  private def dimSource: DataFrame = spark.range(300).selectExpr(
    "CASE WHEN id % 71 = 0 THEN NULL ELSE id END AS dk", "concat('name-', id) AS dname", "id % 7 AS grp")
  private lazy val fact = spark.range(20000)
    .selectExpr("id % 400 AS fk", "CAST(id % 13 AS DOUBLE) AS amount").cache()

  for (aqe <- Seq(true, false)) {
    test(s"a second join broadcasting the same index rows runs one job fewer and reads no index rows (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString) {
        val plain = dimSource.cache()
        val idf = plain.createIndex("dk", 4).cache()
        try {
          def query(dim: DataFrame): DataFrame =
            fact.join(dim, fact("fk") === dim("dk")).groupBy("grp").agg(count("*"), sum("amount"), max("dname"))
          val expected = query(plain)
          rows(expected) // the cached tables filled, so both runs below do the same work but the broadcast
          val first = query(idf.toDF)
          val firstJobs = jobsDuring(assertSameRows(first, expected, "first"))
          assert(kept(first).size == 1, first.queryExecution.executedPlan)
          assert(indexRowsRead(first) > 0)
          assert(keptBytes(idf) > 0)

          // Another DataFrame of the same query (new plan, same rows): the kept broadcast.
          val second = query(idf.toDF)
          val secondJobs = jobsDuring(assertSameRows(second, expected, "second"))
          assert(kept(second).size == 1, second.queryExecution.executedPlan)
          assert(indexRowsRead(second) == 0, second.queryExecution.executedPlan)
          assert(secondJobs == firstJobs - 1, s"jobs: first $firstJobs, second $secondJobs")
          assert(first.queryExecution.executedPlan.toString.contains(
              "KeptBroadcastExchange"), first.queryExecution.executedPlan)
        } finally { idf.unpersist(); plain.unpersist() }
      }
    }
  }

  test("other filters and projections of the index side are kept apart; generated queries return Spark's rows") {
    val plain = dimSource.cache()
    val idf = plain.createIndex("dk", 4).cache()
    val random = new Random(7)
    try {
      val dim = idf.toDF
      val kinds = Seq("inner", "left_outer", "left_semi", "left_anti")
      val shapes = (0 until 12).map { _ =>
        val lo = random.nextInt(300)
        val g = random.nextInt(7)
        (lo, g, kinds(random.nextInt(kinds.size)), random.nextBoolean())
      }
      // Each shape twice: the second run takes the broadcast the first one kept.
      for (round <- 0 until 2; (lo, g, kind, project) <- shapes) {
        def side(d: DataFrame): DataFrame = {
          val filtered = d.where(col("dk") >= lo && col("grp") =!= g)
          if (project) filtered.select(col("dk"), upper(col("dname")).as("dname")) else filtered
        }
        val joined = fact.join(side(dim), fact("fk") === col("dk"), kind)
        assertSameRows(joined, fact.join(side(plain), fact("fk") === col("dk"), kind),
          s"round $round: dk >= $lo, grp != $g, $kind, project $project")
        if (round == 1)
          assert(indexRowsRead(joined) == 0, s"$lo $g $kind $project:\n${joined.queryExecution.executedPlan}")
      }
    } finally { idf.unpersist(); plain.unpersist() }
  }

  test("an appended version broadcasts its own rows; unpersist releases the kept broadcasts") {
    val plain = dimSource.cache()
    val v0 = plain.createIndex("dk", 4).cache()
    val more = spark.range(300, 320).selectExpr("id AS dk", "concat('new-', id) AS dname", "id % 7 AS grp")
    val v1 = v0.appendRows(more).cache()
    try {
      def query(dim: DataFrame): DataFrame = fact.join(dim, fact("fk") === dim("dk"))
      for (_ <- 0 until 2) {
        assertSameRows(query(v0.toDF), query(plain), "v0")
        assertSameRows(query(v1.toDF), query(plain.union(more)), "v1")
      }
      assert(keptBytes(v0) > 0 && keptBytes(v1) > 0)

      // A DataFrame planned with v0's kept broadcast still runs after v0 is unpersisted.
      val planned = query(v0.toDF)
      planned.queryExecution.executedPlan
      v0.unpersist()
      assert(keptBytes(v0) == 0)
      assertSameRows(planned, query(plain), "planned before unpersist")
      // Unpersisted, the version is no longer a fixed set of rows: Spark's own broadcast, not kept.
      val after = query(v0.toDF)
      assertSameRows(after, query(plain), "after unpersist")
      assert(kept(after).isEmpty, after.queryExecution.executedPlan)
      assert(executedNodes(after).exists(_.isInstanceOf[BroadcastExchangeExec]))
      assert(keptBytes(v0) == 0)
      assertSameRows(query(v1.toDF), query(plain.union(more)), "v1 after v0's unpersist")
    } finally { v1.unpersist(); v0.unpersist(); plain.unpersist() }
  }

  test("rows that are not fixed (a nondeterministic filter) are broadcast by Spark, not kept") {
    val plain = dimSource.cache()
    val idf = plain.createIndex("dk", 4).cache()
    try {
      // Always true, but Spark cannot know (it does fold `rand() < 2`).
      val sampled = idf.toDF.where(monotonically_increasing_id() >= 0)
      val joined = fact.join(sampled, fact("fk") === sampled("dk"))
      assertSameRows(joined, fact.join(plain, fact("fk") === plain("dk")), "monotonically_increasing_id() >= 0")
      assert(kept(joined).isEmpty, joined.queryExecution.executedPlan)
      assert(keptBytes(idf) == 0)
    } finally { idf.unpersist(); plain.unpersist() }
  }

  test("maxBytes: 0 turns keeping off; a broadcast over the limit runs but is not kept") {
    val plain = dimSource.cache()
    val idf = plain.createIndex("dk", 4).cache()
    try {
      def query(): DataFrame = fact.join(idf.toDF, fact("fk") === col("dk"))
      withConf(MaxBytes -> "0") {
        val joined = query()
        assertSameRows(joined, fact.join(plain, fact("fk") === plain("dk")), "off")
        assert(kept(joined).isEmpty, joined.queryExecution.executedPlan)
      }
      withConf(MaxBytes -> "16") {
        val joined = query()
        assertSameRows(joined, fact.join(plain, fact("fk") === plain("dk")), "16 bytes")
        assert(kept(joined).size == 1)
        assert(keptBytes(idf) == 0)
        val again = query()
        assertSameRows(again, fact.join(plain, fact("fk") === plain("dk")), "16 bytes, again")
        assert(indexRowsRead(again) > 0)
      }
      val e = intercept[Exception](withConf(MaxBytes -> "-1")(query().collect()))
      assert(e.getMessage.contains(MaxBytes), e.getMessage)
    } finally { idf.unpersist(); plain.unpersist() }
  }
}
