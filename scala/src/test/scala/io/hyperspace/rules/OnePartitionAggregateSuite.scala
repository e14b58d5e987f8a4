package io.hyperspace.rules

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{CoalesceExec, SparkPlan}

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.zorder.ZOrderCoveringIndexConfig
import io.hyperspace.testing.Fuzz

/**
 * Aggregates over an index scan of a few small files read them in one partition and plan no
 * shuffle (AggregateSmallIndexScanInOnePartition), with AQE on and off, and return Spark's rows.
 */
class OnePartitionAggregateSuite extends RuleTestSupport {

  private val MaxBytesKey = "spark.hyperspace.index.onePartition.maxBytes"
  private val OneReadPartition = "spark.sql.files.minPartitionNum" -> "1"
  // The index's files total some 100 KB: below the default open cost (4 MB) they are read in one
  // partition whatever Spark's packing; an open cost this low leaves them to Spark's packing.
  private val OneOpenCostIsSmall = "spark.sql.files.openCostInBytes" -> "1024"
  private val Rows = 8000

  /** `id`; `k` 0..99; `g` a group of 7 values with NULLs; `x` a double; `s` a string; `d` a date. */
  private lazy val source: String = {
    val path = newDir("onepart").getAbsolutePath + "/data"
    spark.range(0, Rows, 1, 6).selectExpr(
      "id",
      "CAST(pmod(hash(id), 100) AS INT) AS k",
      "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(pmod(hash(id, 1), 7) AS INT) END AS g",
      "CAST(pmod(hash(id, 2), 100000) AS DOUBLE) / 100 AS x",
      "CONCAT('s', pmod(hash(id, 3), 40)) AS s",
      "DATE_ADD(DATE'2024-01-01', CAST(pmod(hash(id, 4), 365) AS INT)) AS d").write.parquet(path)
    path
  }

  private def df: DataFrame = spark.read.parquet(source)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(df, IndexConfig("opById", Seq("id"), Seq("k", "g", "x", "s", "d")))
    spark.conf.set("spark.hyperspace.index.zorder.targetFileSize", "8k")
    try hs.createIndex(df, ZOrderCoveringIndexConfig("opZ", Seq("d", "x"), Seq("id", "k", "g", "s")))
    finally spark.conf.unset("spark.hyperspace.index.zorder.targetFileSize")
  }

  private def withAqe[T](on: Boolean)(body: => T): T = withConf("spark.sql.adaptive.enabled" -> on.toString)(body)

  private def coalesced(plan: SparkPlan): Int = plan.collect { case c: CoalesceExec => c }.size

  private def noIndexShuffles(query: => DataFrame): Int =
    withHyperspace(on = false) {
      val q = query
      q.collect()
      shuffles(executed(q))
    }

  for (aqe <- Seq(true, false)) {
    val mode = if (aqe) "AQE on" else "AQE off"

    test(s"a global aggregate over a point lookup plans no shuffle ($mode)") {
      withAqe(aqe) {
        def q = df.where("id = 4242").selectExpr("count(*)", "sum(x)", "max(s)")
        val plan = sameResult(q)
        assert(indexesUsed(plan) == Seq("opById"), plan.treeString)
        assert(shuffles(plan) == 0 && coalesced(plan) == 1, plan.treeString)
        assert(noIndexShuffles(q) == 1)
      }
    }

    test(s"a range on a Z-order index: global and grouped aggregates plan no shuffle ($mode)") {
      // Files this small are one read partition only when Spark is not asked to spread them
      // over the cores (each file counts the 4 MB open cost).
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, OneReadPartition) {
        val range = "d BETWEEN DATE'2024-03-01' AND DATE'2024-03-07'"
        def global = df.where(range).selectExpr("sum(x * 2)", "count(*)", "avg(k)")
        def grouped = df.where(range).groupBy("g").agg(Map("x" -> "sum", "k" -> "max"))
        def distinct = df.where(range).selectExpr("count(DISTINCT s)", "sum(k)")
        for (q <- Seq(() => global, () => grouped, () => distinct)) {
          val plan = sameResult(q())
          assert(indexesUsed(plan) == Seq("opZ"), plan.treeString)
          assert(indexFilesRead(plan) < entries("opZ").last.content.files.size, plan.treeString)
          assert(shuffles(plan) == 0, plan.treeString)
          assert(noIndexShuffles(q()) >= 1)
        }
        // Several DISTINCT aggregates are planned over an Expand, whose output Spark reports as
        // unknown partitioning whatever its input's: they keep their shuffles, with Spark's rows.
        val several = sameResult(df.where(range).selectExpr("count(DISTINCT s)", "sum(DISTINCT k)"))
        assert(indexesUsed(several) == Seq("opZ"), several.treeString)
      }
    }

    test(s"a filter matching nothing still gives one row for a global aggregate ($mode)") {
      withAqe(aqe) {
        val plan = sameResult(df.where("id = -5").selectExpr("count(*)", "sum(x)", "min(d)"))
        assert(shuffles(plan) == 0 && coalesced(plan) == 1, plan.treeString)
        val plan2 = withConf(OneReadPartition)(sameResult(df.where("id = -5").groupBy("g").count()))
        assert(shuffles(plan2) == 0, plan2.treeString)
      }
    }
  }

  // Driver reads on one thread: a global aggregate read in the driver on several threads is read in
  // one partition whatever this limit says (DriverIndexReadSuite).
  private val OneDriverThread = "spark.hyperspace.index.driverRead.threads" -> "1"

  test("maxBytes bounds the files read in one partition; 0 turns it off") {
    def q = df.where("id = 4242").selectExpr("count(*)", "sum(x)")
    withConf(MaxBytesKey -> "0", OneDriverThread) {
      val plan = sameResult(q)
      assert(indexesUsed(plan) == Seq("opById") && shuffles(plan) == 1 && coalesced(plan) == 0, plan.treeString)
    }
    withConf(MaxBytesKey -> "1", OneDriverThread) {
      assert(shuffles(sameResult(q)) == 1)
    }
    // With driver reads on two threads, the global aggregate is read in one partition anyway
    // (and so in the driver); with driver reads off, not.
    withConf(MaxBytesKey -> "0", "spark.hyperspace.index.driverRead.threads" -> "2") {
      val plan = sameResult(q)
      assert(coalesced(plan) == 1 && shuffles(plan) == 0, plan.treeString)
      withConf("spark.hyperspace.index.driverRead.maxBytes" -> "0") {
        assert(coalesced(sameResult(q)) == 0)
      }
    }
    // Several files Spark spreads over its cores, more bytes than opening one costs, keep their
    // tasks (and the shuffle), under any limit.
    withConf(OneOpenCostIsSmall, OneDriverThread) {
      val several = sameResult(df.where("id >= 0").selectExpr("count(*)", "sum(x)"))
      assert(indexScans(several).map(_.metrics("numFiles").value).sum > 1, several.treeString)
      assert(coalesced(several) == 0 && shuffles(several) == 1, several.treeString)
    }
    // Fewer bytes than one file's open cost: one partition even where Spark would spread them.
    val tiny = sameResult(df.where("id >= 0").selectExpr("count(*)", "sum(x)"))
    assert(entries("opById").last.content.files.size > 1 && coalesced(tiny) == 1 && shuffles(tiny) == 0,
      tiny.treeString)
    withConf(OneReadPartition) {
      val one = sameResult(df.where("id >= 0").selectExpr("count(*)", "sum(x)"))
      assert(coalesced(one) == 1 && shuffles(one) == 0, one.treeString)
    }
    // A scan of every index file, above the limit, keeps Spark's tasks and its shuffle.
    val all = entries("opById").last.content.files.map(_.size).sum
    withConf(MaxBytesKey -> (all - 1).toString, OneReadPartition, OneDriverThread) {
      val plan = sameResult(df.where("id >= 0").selectExpr("count(*)", "sum(x)"))
      assert(indexesUsed(plan) == Seq("opById") && coalesced(plan) == 0, plan.treeString)
    }
  }

  test("operators other than an aggregate over the small scan are left as Spark plans them") {
    val plan = sameResult(df.where("id = 4242").select("id", "x"))
    assert(coalesced(plan) == 0, plan.treeString)
    val sorted = withConf(OneReadPartition)(sameResult(df.where("d = DATE'2024-03-01'").orderBy("x").select("x", "id")))
    assert(coalesced(sorted) == 0, sorted.treeString)
  }

  test("grouped aggregates whose partitioning Spark uses are left as Spark plans them") {
    // Grouped on the index's bucket column: the buckets are the partitions, no shuffle either way.
    val onBuckets = withConf(OneReadPartition)(sameResult(df.where("id IN (5, 4242)").groupBy("id").count()))
    assert(coalesced(onBuckets) == 0 && shuffles(onBuckets) == 0, onBuckets.treeString)
    assert(indexScans(onBuckets).forall(_.bucketedScan), onBuckets.treeString)
    // Below a join: its hash-partitioned output may be what the join needs.
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1", OneReadPartition) {
      val totals = df.where("d = DATE'2024-03-01'").groupBy("k").agg(Map("x" -> "sum"))
      val joined = sameResult(totals.join(df.where("id < 100").select("k", "id"), "k"))
      assert(coalesced(joined) == 0, joined.treeString)
      // A global aggregate below a join outputs one partition anyway.
      val global = df.where("d = DATE'2024-03-01'").selectExpr("max(k) AS k")
      val joinedGlobal = sameResult(global.join(df.select("k", "id"), "k"))
      assert(coalesced(joinedGlobal) == 1, joinedGlobal.treeString)
    }
  }

  test("differential: generated aggregates over small index scans give Spark's rows") {
    val random = new Random(Fuzz.seed(1818L))
    def pick[T](xs: T*): T = xs(random.nextInt(xs.size))
    def filter(): String = pick(
      s"id = ${random.nextInt(Rows + 50) - 25}",
      s"id IN (${Seq.fill(1 + random.nextInt(4))(random.nextInt(Rows)).mkString(", ")})",
      s"id = ${random.nextInt(Rows)} AND x > ${random.nextInt(1000)}",
      s"d BETWEEN DATE'2024-0${1 + random.nextInt(9)}-01' AND DATE'2024-0${1 + random.nextInt(9)}-0${1 + random.nextInt(9)}'",
      s"d = DATE'2024-02-${10 + random.nextInt(18)}' AND x < ${random.nextInt(1000)}",
      s"x BETWEEN ${random.nextInt(900)} AND ${random.nextInt(1000)} AND d < DATE'2024-01-${10 + random.nextInt(20)}'",
      "id IS NULL",
      s"d >= DATE'2024-12-${10 + random.nextInt(20)}' OR id = ${random.nextInt(Rows)}")
    def aggregate(): String = pick("count(*)", "count(g)", "sum(x)", "avg(x)", "min(s)", "max(d)",
      "count(DISTINCT g)", "sum(k * 2)", "max(x) - min(x)")
    val queries = Fuzz.queries(40)
    var withoutShuffle = 0
    for (i <- 0 until queries) {
      val where = filter()
      val aggs = Seq.fill(1 + random.nextInt(3))(aggregate()).distinct
      val groups = pick(Seq.empty[String], Seq("g"), Seq("s", "g"), Seq("k % 3"))
      val select = (groups ++ aggs).mkString(", ")
      val sql = s"SELECT $select FROM src WHERE $where" +
        (if (groups.isEmpty) "" else s" GROUP BY ${groups.mkString(", ")}")
      withConf("spark.sql.adaptive.enabled" -> random.nextBoolean().toString, OneReadPartition) {
        df.createOrReplaceTempView("src")
        val plan =
          try sameResult(spark.sql(sql))
          catch { case e: Throwable => fail(s"query $i: $sql", e) }
        if (shuffles(plan) == 0) withoutShuffle += 1
      }
    }
    assert(withoutShuffle > queries / 4, s"only $withoutShuffle of $queries queries planned without a shuffle")
  }
}
