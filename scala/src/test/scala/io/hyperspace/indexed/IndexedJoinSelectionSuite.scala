package io.hyperspace.indexed

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.EqualTo
import org.apache.spark.sql.catalyst.plans.logical.Join
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeExec, BroadcastExchangeLike}
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, BroadcastNestedLoopJoinExec}
import org.apache.spark.sql.functions._

import io.hyperspace._
import io.hyperspace.testing.Fuzz

/**
 * The cost-based choice between the indexed join and Spark's own join: for both shapes (the index
 * on a small dimension probed by a big table, the index on a big table probed by a small one),
 * the plan that runs is the one the sizes call for, with hints honoured, and every variant
 * returns the rows of the same join over plain DataFrames.
 */
class IndexedJoinSelectionSuite extends SparkSessionSuite with ExecutedNodes {

  private def rows(df: DataFrame): Seq[String] =
    df.collect().map((r: Row) => r.toSeq.map(String.valueOf).mkString("|")).toSeq.sorted

  private def assertSameRows(actual: DataFrame, expected: DataFrame, clue: String): Unit = {
    val (a, e) = (rows(actual), rows(expected))
    assert(a.nonEmpty || e.isEmpty, clue)
    assert(a == e,
      s"$clue: ${a.size} rows vs ${e.size}; missing ${e.diff(a).take(3)}, " +
        s"extra ${a.diff(e).take(3)}")
  }

  /**
   * The row count and two order-free sums of row hashes of what `df`'s own plan returns (it runs
   * that plan, as its collect would): equal for equal multisets of rows. For results too many to
   * compare one by one.
   */
  private def fingerprint(df: DataFrame): (Long, Long, Long) = {
    val types = df.schema.map(_.dataType)
    df.queryExecution.toRdd.map { row =>
      val values = row.toSeq(types)
      (1L, values.hashCode.toLong, values.map(v => if (v == null) 17L else v.hashCode * 31L + 7).sum)
    }.fold((0L, 0L, 0L)) { case ((n, a, b), (m, c, d)) => (n + m, a + c, b + d) }
  }

  /** A dimension of 200 keys (one row each, a few null keys) and its plain twin. */
  private lazy val dimPlain = spark.range(200).selectExpr(
    "CASE WHEN id % 61 = 0 THEN NULL ELSE id END AS dk", "concat('name-', id) AS dname").cache()
  private lazy val dimIndexed = dimPlain.createIndex("dk", 4).cache()

  /** A fact table of 40,000 rows over 300 keys (so some miss the dimension), and its index. */
  private def factSource: DataFrame = spark.range(40000).selectExpr(
    "CASE WHEN id % 997 = 0 THEN NULL ELSE id % 300 END AS fk", "id AS fid",
    "CAST(id % 13 AS DOUBLE) AS amount")
  private lazy val factPlain = factSource.cache()
  private lazy val factIndexed = factSource.createIndex("fk", 4).cache()

  /** A probe of `n` rows over `keys` keys (with 600, about half miss the fact table's 300). */
  private def probe(n: Int, keys: Int = 600): DataFrame =
    spark.range(n).selectExpr(s"(id * 7) % $keys AS pk", "id AS pv")

  private def indexedJoins(df: DataFrame): Seq[IndexedJoinExec] =
    executedNodes(df).collect { case j: IndexedJoinExec => j }

  /** Spark's broadcast hash join whose broadcast side reads `scan`. */
  private def broadcastOf(df: DataFrame)(scan: SparkPlan => Boolean): Boolean =
    executedNodes(df).exists {
      case b: BroadcastExchangeLike => b.exists(scan)
      case _ => false
    } && executedNodes(df).exists(_.isInstanceOf[BroadcastHashJoinExec])

  private def isIndexScan(p: SparkPlan): Boolean = p.isInstanceOf[IndexedScanExec]

  for (aqe <- Seq(true, false)) {
    test(s"index on a small dimension probed by a big table: Spark broadcasts the index (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString) {
        val dim = dimIndexed.toDF
        val fact = factPlain
        // The big table on the left, the indexed dimension on the right: Spark can build on it.
        for (joinType <- Seq("inner", "left_outer", "left_semi", "left_anti")) {
          val joined = fact.join(dim, fact("fk") === dim("dk"), joinType)
          assertSameRows(joined, fact.join(dimPlain, fact("fk") === dimPlain("dk"), joinType),
            s"$joinType")
          assert(indexedJoins(joined).isEmpty, s"$joinType:\n${joined.queryExecution.executedPlan}")
          assert(broadcastOf(joined)(isIndexScan), s"$joinType:\n${joined.queryExecution.executedPlan}")
          // The broadcast reads the index's 4 partitions in one task per slot (local[2]).
          val scans = executedNodes(joined).collect { case s: IndexedScanExec => s }
          assert(scans.nonEmpty && scans.forall(s => s.tasks.isDefined && s.execute().getNumPartitions == 2),
            s"$joinType:\n${joined.queryExecution.executedPlan}")
          val why = IndexedDataFrame.joinDecisions(joined)
          assert(why.size == 1 && why.head.startsWith("spark: ") &&
              why.head.contains("Spark broadcasts it"), why)
        }
        // The indexed dimension on the left of a right outer join: Spark builds on the left.
        val right = dim.join(fact, dim("dk") === fact("fk"), "right_outer")
        assertSameRows(right, dimPlain.join(fact, dimPlain("dk") === fact("fk"), "right_outer"),
          "right_outer")
        assert(indexedJoins(right).isEmpty && broadcastOf(right)(isIndexScan))
        // A full outer join cannot be broadcast by Spark: the indexed join stays.
        val full = fact.join(dim, fact("fk") === dim("dk"), "full_outer")
        assertSameRows(full, fact.join(dimPlain, fact("fk") === dimPlain("dk"), "full_outer"),
          "full_outer")
        assert(indexedJoins(full).nonEmpty)
      }
    }

    test(s"index on a big table probed by a small one: the index is probed (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString) {
        val fact = factIndexed.toDF
        val small = probe(300)
        for (joinType <- JoinTypes) {
          val joined = small.join(fact, small("pk") === fact("fk"), joinType)
          assertSameRows(joined, small.join(factPlain, small("pk") === factPlain("fk"), joinType),
            joinType)
          val join = indexedJoins(joined)
          assert(join.size == 1 && join.head.broadcastProbe, joinType)
          assert(join.head.reason.contains("probe side broadcast"), join.head.reason)
          assert(!join.head.simpleString(100).isEmpty &&
            join.head.simpleString(100).contains(join.head.reason))
        }
      }
    }
  }

  test("a broadcast probe side: partitions joined in one task per slot, rows grouped by partition once") {
    // 8 index partitions on local[2]: two tasks of four partitions each. The probe has NULL and
    // duplicate keys and keys of every partition; an extra condition filters some pairs.
    val indexed = factSource.createIndex("fk", 8).cache()
    val p = spark.range(700).selectExpr("CASE WHEN id % 29 = 0 THEN NULL ELSE (id * 7) % 450 END AS pk",
      "id AS pv")
    // Probe sides this small run in one task by default (tested below); here a task per slot,
    // or per probe partition when the probe side is read in place.
    val cases = for (joinType <- JoinTypes; onLeft <- Seq(true, false); condition <- Seq(false, true))
      yield (joinType, onLeft, condition)
    for (((joinType, onLeft, condition), n) <- cases.zipWithIndex; (aqe, inPlace) <- Fuzz.settingsFor(Settings, n)) {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, OneTaskProbeRows -> "0",
        ProbeInPlace -> inPlace.toString) {
        val i = indexed.toDF
        def on(a: DataFrame, b: DataFrame): org.apache.spark.sql.Column = {
          val key = a("fk") === b("pk")
          if (condition) key && (a("fid") % 3 =!= b("pv") % 3) else key
        }
        val (got, want) =
          if (onLeft) (i.join(broadcast(p), on(i, p), joinType), factPlain.join(p, on(factPlain, p), joinType))
          else (p.hint("broadcast").join(i, on(i, p), joinType), p.join(factPlain, on(factPlain, p), joinType))
        val clue = s"AQE $aqe, in place $inPlace, $joinType, index on ${if (onLeft) "left" else "right"}, " +
          s"condition $condition"
        assertSameRows(got, want, clue)
        val join = indexedJoins(got)
        assert(join.size == 1 && join.head.broadcastProbe, s"$clue:\n${got.queryExecution.executedPlan}")
        assert(join.head.execute().getNumPartitions == 2, clue)
        assert(join.head.probeInPlace == (inPlace && decidedByProbeRows(joinType, onLeft)), clue)
        val movement = if (join.head.probeInPlace) "probe read in place, a task per probe partition"
        else "probe broadcast, 2 tasks"
        assert(join.head.simpleString(100).contains(movement), join.head.simpleString(100))
      }
    }
    indexed.unpersist(blocking = true)
  }

  private val JoinTypes = Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")
  // (adaptive execution, probe side read in place): each join case runs under one of them in CI.
  private val Settings = Seq((true, false), (true, true), (false, false), (false, true))

  private val OneTaskProbeRows = "spark.hyperspace.indexed.join.oneTaskProbeRows"
  private val ProbeInPlace = "spark.hyperspace.indexed.join.probeInPlace"
  private val CountProbeRows = "spark.hyperspace.indexed.join.countProbeRows"

  /** Whether each probe row alone decides its output rows: joins that may read the probe side in place. */
  private def decidedByProbeRows(joinType: String, indexOnLeft: Boolean): Boolean = joinType match {
    case "inner" => true
    case "left_outer" | "left_semi" | "left_anti" => !indexOnLeft
    case "right_outer" => indexOnLeft
    case _ => false
  }

  test("a small broadcast probe side is joined in one task: one output partition, no exchange above") {
    // 8 index partitions cached in this one JVM; 700 probe rows (NULL and duplicate keys, keys
    // of no index row and keys of every partition) are under the default limit of 20,000.
    val indexed = factSource.createIndex("fk", 8).cache()
    val p = spark.range(700).selectExpr("CASE WHEN id % 29 = 0 THEN NULL ELSE (id * 7) % 450 END AS pk",
      "id AS pv")
    val empty = p.where("pv < 0")
    // The empty probe side on the index's left for every other join type and on its right for the
    // rest in CI (a case of each type and side either way); on both sides of every type under
    // `make test-full`.
    val cases = for (joinType <- JoinTypes; onLeft <- Seq(true, false); probe <- Seq(p, empty)
      if (probe ne empty) || Fuzz.allSettings || onLeft == (JoinTypes.indexOf(joinType) % 2 == 0))
      yield (joinType, onLeft, probe)
    for (((joinType, onLeft, probe), n) <- cases.zipWithIndex; (aqe, inPlace) <- Fuzz.settingsFor(Settings, n)) {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, ProbeInPlace -> inPlace.toString) {
        val i = indexed.toDF
        def join(a: DataFrame, b: DataFrame, key: String): DataFrame =
          if (onLeft) a.join(broadcast(b), a(key) === b("pk"), joinType)
          else b.hint("broadcast").join(a, a(key) === b("pk"), joinType)
        val got = join(i, probe, "fk")
        val want = join(factPlain, probe, "fk")
        val clue = s"AQE $aqe, in place $inPlace, $joinType, index on ${if (onLeft) "left" else "right"}, " +
          s"${if (probe eq empty) "empty" else "700-row"} probe"
        assertSameRows(got, want, clue)
        val nodes = indexedJoins(got)
        // Adaptive execution may replace a join with an empty probe side by an empty relation.
        if (nodes.nonEmpty || !aqe || (probe ne empty)) {
          assert(nodes.size == 1 && nodes.head.broadcastProbe, s"$clue:\n${got.queryExecution.executedPlan}")
          assert(nodes.head.execute().getNumPartitions == 1, clue)
          assert(nodes.head.outputPartitioning == org.apache.spark.sql.catalyst.plans.physical.SinglePartition,
            clue)
          assert(nodes.head.probeInPlace == (inPlace && decidedByProbeRows(joinType, onLeft)), clue)
          val movement = if (nodes.head.probeInPlace) "probe read in place, 1 task" else "probe broadcast, 1 tasks"
          assert(nodes.head.simpleString(100).contains(movement), nodes.head.simpleString(100))
        }
        // A grouped and a global aggregate over the join: no shuffle (the join's output is all
        // in one partition), and the rows of the same aggregates over plain DataFrames.
        val cols = got.columns
        val aggs = Seq(
          (got.groupBy(got(cols.head)).agg(count(lit(1)), sum(got(cols.last))),
            want.groupBy(want(cols.head)).agg(count(lit(1)), sum(want(cols.last)))),
          (got.agg(count(lit(1)), sum(got(cols.last))), want.agg(count(lit(1)), sum(want(cols.last)))))
        for ((a, b) <- aggs) {
          assertSameRows(a, b, s"$clue, aggregated")
          val shuffles = executedNodes(a).collect {
            case e: org.apache.spark.sql.execution.exchange.ShuffleExchangeExec => e
          }
          assert(shuffles.isEmpty, s"$clue:\n${a.queryExecution.executedPlan}")
        }
      }
    }
    // Over the limit, and with the limit off: a task per slot again, and the aggregate's exchange.
    for (limit <- Seq("200", "0")) { // 200: below the probe side's 350 rows estimated after IS NOT NULL
      withConf(OneTaskProbeRows -> limit) {
        val i = indexed.toDF
        val got = i.join(broadcast(p), i("fk") === p("pk"))
        val a = got.agg(count(lit(1)), sum(got("pv")))
        assertSameRows(a, factPlain.join(p, factPlain("fk") === p("pk")).agg(count(lit(1)), sum(p("pv"))),
          s"limit $limit")
        assert(indexedJoins(a).head.execute().getNumPartitions == 2, s"limit $limit")
        assert(executedNodes(a).exists(_.isInstanceOf[org.apache.spark.sql.execution.exchange.ShuffleExchangeExec]),
          s"limit $limit:\n${a.queryExecution.executedPlan}")
      }
    }
    withConf(OneTaskProbeRows -> "-1") {
      val i = indexed.toDF
      val e = intercept[Exception](i.join(broadcast(p), i("fk") === p("pk")).collect())
      val all = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage)
      assert(all.exists(m => m != null && m.contains(OneTaskProbeRows)), e.getMessage)
    }
    indexed.unpersist(blocking = true)
  }

  test("a broadcast probe side every partition would filter is left to Spark's broadcast join") {
    // 4 partitions × 40,000 probe rows (20,000 estimated after the inferred IS NOT NULL filter)
    // > 40,000 index rows: streaming the index once is cheaper.
    val fact = factIndexed.toDF
    val medium = probe(40000, keys = 40000) // few matches: a small result to compare
    val joined = medium.join(fact, medium("pk") === fact("fk"), "inner")
    assertSameRows(joined, medium.join(factPlain, medium("pk") === factPlain("fk"), "inner"),
      "medium probe")
    assert(indexedJoins(joined).isEmpty, joined.queryExecution.executedPlan)
    assert(broadcastOf(joined)(p => !p.exists(isIndexScan)), joined.queryExecution.executedPlan)
    assert(IndexedDataFrame.joinDecisions(joined).head.contains("costs more than"))
    // 20,000 rows are estimated at 10,000 (the filter), so the index is planned; adaptive
    // execution then sees 20,000 broadcast rows, but keeps the join the broadcast was made for
    // (switching now would leave Spark a nested loop join over rows it cannot hash).
    withConf("spark.sql.adaptive.enabled" -> "true") {
      val underestimated = probe(20000, keys = 20000)
      val kept = underestimated.join(fact, underestimated("pk") === fact("fk"), "inner")
      assertSameRows(kept,
        underestimated.join(factPlain, underestimated("pk") === factPlain("fk"), "inner"), "AQE")
      assert(!executedNodes(kept).exists(_.isInstanceOf[BroadcastNestedLoopJoinExec]),
        kept.queryExecution.executedPlan)
      assert(indexedJoins(kept).map(_.broadcastProbe) == Seq(true))
    }
    // Hinted: the indexed join with the probe broadcast, as asked.
    val hinted = broadcast(medium).join(fact, medium("pk") === fact("fk"), "inner")
    assertSameRows(hinted, joined, "hinted probe")
    assert(indexedJoins(hinted).map(_.broadcastProbe) == Seq(true))
  }

  /**
   * The broadcast threshold at the size of `probe` (unfiltered): Spark may broadcast it, or any
   * filter of it, but not the index side `indexed`, which must be the larger.
   */
  private def probeBroadcastOnly(probe: DataFrame, indexed: DataFrame): (String, String) = {
    val (probeBytes, indexBytes) =
      (probe.queryExecution.optimizedPlan.stats.sizeInBytes, indexed.queryExecution.optimizedPlan.stats.sizeInBytes)
    assert(probeBytes < indexBytes,
      s"the probe side ($probeBytes B) must be smaller than the index side ($indexBytes B)")
    "spark.sql.autoBroadcastJoinThreshold" -> probeBytes.toString
  }

  test("a filtered probe side is decided on its rows after the filter: few probe the index, many go to Spark") {
    // A cached probe side of 20,000 rows: Spark estimates any filter over it at about its whole
    // size (no column statistics), so only its rows counted tell 100 from 15,000 (issue #55).
    // The index has 40,000 rows in 4 partitions: up to 10,000 broadcast probe rows the index join.
    val cachedProbe = spark.range(20000).selectExpr("(id * 7) % 600 AS pk", "id AS pv").cache()
    cachedProbe.count()
    val fact = factIndexed.toDF
    for (aqe <- Seq(true, false)) {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, probeBroadcastOnly(cachedProbe, fact)) {
        for ((kept, index) <- Seq(100 -> true, 15000 -> false)) {
          val p = cachedProbe.where(s"pv < $kept")
          val joined = p.join(fact, p("pk") === fact("fk"))
          val clue = s"AQE $aqe, $kept probe rows"
          assertSameRows(joined, p.join(factPlain, p("pk") === factPlain("fk")), clue)
          val why = IndexedDataFrame.joinDecisions(joined)
          assert(why.size == 1, s"$clue: $why")
          if (index) {
            assert(indexedJoins(joined).map(_.broadcastProbe) == Seq(true),
              s"$clue:\n${joined.queryExecution.executedPlan}")
            assert(why.head.startsWith("index: ") && why.head.contains(s"($kept rows counted)"), s"$clue: $why")
          } else {
            assert(indexedJoins(joined).isEmpty, s"$clue:\n${joined.queryExecution.executedPlan}")
            assert(broadcastOf(joined)(p => !p.exists(isIndexScan)), s"$clue:\n${joined.queryExecution.executedPlan}")
            assert(why.head.startsWith("spark: ") && why.head.contains("(more than 10000 rows counted)"),
              s"$clue: $why")
          }
        }
        // Without the count the estimate decides, whatever the filter leaves: Spark's join.
        withConf(CountProbeRows -> "false") {
          val p = cachedProbe.where("pv < 100")
          val joined = p.join(fact, p("pk") === fact("fk"))
          assertSameRows(joined, p.join(factPlain, p("pk") === factPlain("fk")), s"AQE $aqe, not counted")
          assert(indexedJoins(joined).isEmpty, joined.queryExecution.executedPlan)
          assert(IndexedDataFrame.joinDecisions(joined).head.contains("rows estimated"))
        }
      }
    }
    cachedProbe.unpersist(blocking = true)
  }

  test("generated filters over a probe side: rows equal whichever join their counted rows choose") {
    val cachedProbe = spark.range(20000).selectExpr(
      "CASE WHEN id % 41 = 0 THEN NULL ELSE (id * 13) % 500 END AS pk", "id AS pv", "id % 7 AS pg").cache()
    cachedProbe.count()
    val threshold = probeBroadcastOnly(cachedProbe, factIndexed.toDF)
    val rng = new scala.util.Random(20261204L)
    val chosen = scala.collection.mutable.Set.empty[Boolean]
    for (round <- 1 to 8) {
      val kept = Seq(1, 50, 2000, 9000, 12000, 19000)(rng.nextInt(6))
      val condition = if (rng.nextBoolean()) s"pv < $kept" else s"pv < $kept AND pg <> ${rng.nextInt(7)}"
      val joinType = Seq("inner", "left_outer", "left_semi", "left_anti")(rng.nextInt(4))
      val aqe = rng.nextBoolean().toString
      withConf("spark.sql.adaptive.enabled" -> aqe, threshold) {
        val p = cachedProbe.where(condition)
        val fact = factIndexed.toDF
        val joined = p.join(fact, p("pk") === fact("fk"), joinType)
        val why = IndexedDataFrame.joinDecisions(joined)
        assertSameRows(joined, p.join(factPlain, p("pk") === factPlain("fk"), joinType),
          s"round $round: $condition, $joinType, AQE $aqe: ${why.mkString("; ")}")
        chosen += indexedJoins(joined).nonEmpty
      }
    }
    assert(chosen == Set(true, false), "the filters drawn must choose each join at least once")
    cachedProbe.unpersist(blocking = true)
  }

  test("a user's join key shaped like a partition number is not taken for the index's broadcast") {
    // Spark broadcasts this probe side for its own hash join, keyed by the user's
    // CAST(pmod(pk, 300) AS BIGINT): the shape of the index's partition-number key. Re-planning
    // after that broadcast ran must see it as Spark's, keep Spark's join, and return its rows.
    withConf("spark.sql.adaptive.enabled" -> "true", ProbeInPlace -> "false") {
      val fact = factIndexed.toDF
      val medium = spark.range(40000).selectExpr("CAST(id AS INT) AS pk", "id AS pv")
      val joined = medium.join(fact, pmod(medium("pk"), lit(300)) === fact("fk"), "inner")
      // 5.3 M rows (40,000 probes of ~133 rows each; the probe side must be this big for Spark's
      // join to win): compared by count and row hashes, over the plan `joined` itself ran.
      assert(fingerprint(joined) ==
          fingerprint(medium.join(factPlain, pmod(medium("pk"), lit(300)) === factPlain("fk"), "inner")),
        "pmod-keyed probe")
      assert(indexedJoins(joined).isEmpty, joined.queryExecution.executedPlan)
      assert(broadcastOf(joined)(p => !p.exists(isIndexScan)), joined.queryExecution.executedPlan)

      // What re-planning sees of each finished broadcast (of a query that ran): Spark's for the
      // user's key, the index's for the hinted probe the indexed join broadcast by partition.
      def broadcastStage(df: DataFrame): LogicalQueryStage = {
        val stage = executedNodes(df).collectFirst { case b: BroadcastExchangeExec => b }
          .getOrElse(fail(s"no broadcast in ${df.queryExecution.executedPlan}"))
        LogicalQueryStage(medium.queryExecution.analyzed, stage)
      }
      val userKey = joined.queryExecution.optimizedPlan.collectFirst {
        case j: Join => j.condition.get.collectFirst { case EqualTo(l, _) => l }.get
      }.get
      assert(IndexedStrategy.probeBroadcast(broadcastStage(joined), userKey, 4) ==
        IndexedJoinSelection.BroadcastForSpark)
      val hinted = broadcast(medium).join(fact, medium("pk").cast("long") === fact("fk"), "inner")
      hinted.collect()
      assert(indexedJoins(hinted).map(_.broadcastProbe) == Seq(true), hinted.queryExecution.executedPlan)
      val probeKey = indexedJoins(hinted).head.probeKey
      assert(IndexedStrategy.probeBroadcast(broadcastStage(hinted), probeKey, 4) ==
        IndexedJoinSelection.BroadcastForIndex)
      assert(IndexedStrategy.probeBroadcast(broadcastStage(hinted), probeKey, 8) ==
          IndexedJoinSelection.BroadcastForSpark, "a broadcast for another partition count is not this join's")
    }
  }

  test("a probe side adaptive execution already broadcast for the index is not read in place on re-planning") {
    // Planned with the in-place read off, the hinted probe side ran as the index's broadcast;
    // re-planning with it on must keep that broadcast stage (it has no rows to read in place).
    withConf("spark.sql.adaptive.enabled" -> "true", ProbeInPlace -> "false") {
      val fact = factIndexed.toDF
      val medium = spark.range(40000).selectExpr("CAST(id AS INT) AS pk", "id AS pv")
      val hinted = broadcast(medium).join(fact, medium("pk").cast("long") === fact("fk"), "inner")
      hinted.collect()
      val stage = executedNodes(hinted).collectFirst { case b: BroadcastExchangeExec => b }
        .getOrElse(fail(s"no broadcast in ${hinted.queryExecution.executedPlan}"))
      val join = hinted.queryExecution.optimizedPlan.collectFirst { case j: Join => j }.get
      val replanned = join.copy(left = LogicalQueryStage(join.left, stage))
      withConf(ProbeInPlace -> "true") {
        val planned = IndexedStrategy(replanned).collect { case j: IndexedJoinExec => j }
        assert(planned.size == 1 && planned.head.broadcastProbe && !planned.head.probeInPlace,
          planned.map(_.simpleString(200)))
        // The same join not yet broadcast is read in place.
        val fresh = IndexedStrategy(join).collect { case j: IndexedJoinExec => j }
        assert(fresh.size == 1 && fresh.head.probeInPlace, fresh.map(_.simpleString(200)))
      }
    }
  }

  test("neither side broadcastable: the probe side is shuffled into the index") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      val fact = factIndexed.toDF
      val p = probe(5000)
      val joined = fact.join(p, fact("fk") === p("pk"), "left_outer")
      assertSameRows(joined, factPlain.join(p, factPlain("fk") === p("pk"), "left_outer"),
        "shuffled")
      assert(indexedJoins(joined).map(_.broadcastProbe) == Seq(false))
      assert(IndexedDataFrame.joinDecisions(joined).head.startsWith("index: probe side shuffled"))
    }
  }

  test("a BROADCAST hint on the index side gives Spark's broadcast of it, even when big") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      val fact = factPlain
      val dim = dimIndexed.toDF
      val joined = fact.join(broadcast(dim), fact("fk") === dim("dk"), "inner")
      assertSameRows(joined, fact.join(dimPlain, fact("fk") === dimPlain("dk"), "inner"), "hint")
      assert(indexedJoins(joined).isEmpty && broadcastOf(joined)(isIndexScan))
      assert(IndexedDataFrame.joinDecisions(joined).head.contains("hinted BROADCAST"))
    }
  }

  test("joinSelection=index always probes the index; bad values are rejected naming the key") {
    withConf("spark.hyperspace.indexed.joinSelection" -> "index") {
      val dim = dimIndexed.toDF
      val joined = factPlain.join(dim, factPlain("fk") === dim("dk"), "inner")
      assertSameRows(joined, factPlain.join(dimPlain, factPlain("fk") === dimPlain("dk"), "inner"),
        "forced")
      assert(indexedJoins(joined).nonEmpty)
    }
    withConf("spark.hyperspace.indexed.joinSelection" -> "sometimes") {
      val dim = dimIndexed.toDF
      val e = intercept[Exception](factPlain.join(dim, factPlain("fk") === dim("dk")).collect())
      val all = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage)
      assert(all.exists(m => m != null && m.contains("spark.hyperspace.indexed.joinSelection")),
        e.getMessage)
    }
  }

  test("chains of equal keys walked in turns: every row form, both probe movements, every join type") {
    // Key k has k % 40 + 1 rows (chains of 1 to 40 rows, across the 32 steps a task walks in
    // turns before reading the rest lazily), with rows of NULL keys. Probe sides of 1 and 1,003
    // rows (whole groups of 16 probe rows and part groups) hit and miss keys, with NULL and
    // duplicate keys; an extra condition drops some pairs.
    val source = spark.range(120).selectExpr("CASE WHEN id >= 110 THEN NULL ELSE id END AS fk",
      "explode(sequence(0, id % 40)) AS n")
      .selectExpr("fk", "n * 1000 + coalesce(fk, -1) AS fid", "concat('r', n % 7) AS label")
    val plain = source.cache()
    def probeOf(rows: Int): DataFrame = spark.range(rows).selectExpr(
      "CASE WHEN id % 23 = 5 THEN NULL ELSE (id * 7) % 130 END AS pk", "id AS pv")
    for ((form, codec) <- Seq("compact" -> "none", "unsafe" -> "none", "unsafe" -> "lz4")) {
      val indexed = withConf("spark.hyperspace.indexed.rowFormat" -> form,
        "spark.hyperspace.indexed.compression" -> codec)(source.createIndex("fk", 4)).cache()
      // The probe side broadcast (joined in one task, and in a task per slot) or shuffled.
      val settings = for (aqe <- Seq(true, false); movement <- Seq("10m" -> "20000", "10m" -> "0", "-1" -> "0"))
        yield (aqe, movement)
      val cases = for (rows <- Seq(1, 1003); joinType <- JoinTypes; onLeft <- Seq(true, false))
        yield (rows, joinType, onLeft)
      for (((rows, joinType, onLeft), n) <- cases.zipWithIndex;
        (aqe, (threshold, oneTask)) <- Fuzz.settingsFor(settings, n)) {
        withConf("spark.sql.adaptive.enabled" -> aqe.toString, "spark.sql.autoBroadcastJoinThreshold" -> threshold,
          OneTaskProbeRows -> oneTask, "spark.hyperspace.indexed.joinSelection" -> "index") {
          val i = indexed.toDF
          val p = probeOf(rows)
          def on(a: DataFrame): org.apache.spark.sql.Column =
            a("fk") === p("pk") && (a("fid") % 5 =!= p("pv") % 5)
          val (got, want) =
            if (onLeft) (i.join(p, on(i), joinType), plain.join(p, on(plain), joinType))
            else (p.join(i, on(i), joinType), p.join(plain, on(plain), joinType))
          val clue = s"$form/$codec rows, AQE $aqe, threshold $threshold, $rows probe rows, $joinType, " +
            s"index on ${if (onLeft) "left" else "right"}"
          assertSameRows(got, want, clue)
          assert(indexedJoins(got).size == 1, s"$clue:\n${got.queryExecution.executedPlan}")
        }
      }
      indexed.unpersist(blocking = true)
    }
  }

  test("generated joins agree with plain Spark under every selection outcome") {
    val rng = new scala.util.Random(7)
    for (round <- 1 to 6) {
      val n = Seq(50, 500, 5000, 30000)(rng.nextInt(4))
      val keys = 1 + rng.nextInt(800)
      val p = spark.range(n).selectExpr(s"CASE WHEN id % 37 = 0 THEN NULL ELSE (id * 13) % $keys END AS pk",
        "id AS pv")
      val joinType = JoinTypes(rng.nextInt(6))
      val threshold = Seq("-1", "10m", "100k")(rng.nextInt(3))
      val (indexed, plain) =
        if (rng.nextBoolean()) (factIndexed.toDF, factPlain) else (dimIndexed.toDF, dimPlain)
      val key = if (indexed.columns.contains("fk")) "fk" else "dk"
      withConf("spark.sql.autoBroadcastJoinThreshold" -> threshold) {
        val onLeft = rng.nextBoolean()
        val (got, want) =
          if (onLeft) {
            (indexed.join(p, indexed(key) === p("pk"), joinType),
              plain.join(p, plain(key) === p("pk"), joinType))
          } else {
            (p.join(indexed, p("pk") === indexed(key), joinType),
              p.join(plain, p("pk") === plain(key), joinType))
          }
        assertSameRows(got, want,
          s"round $round: $n probe rows, $joinType, threshold " +
            s"$threshold, index on ${if (onLeft) "left" else "right"}: " +
            IndexedDataFrame.joinDecisions(got).mkString("; "))
      }
    }
  }
}
