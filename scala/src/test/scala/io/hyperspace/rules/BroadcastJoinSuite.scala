package io.hyperspace.rules

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SortMergeJoinExec}
import org.apache.spark.sql.functions.broadcast

import io.hyperspace.index.IndexConfig
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * Joins Spark runs as broadcast hash joins are left to Spark: the join rule reads no side from a
 * bucketed index when Spark would broadcast a side (by its size estimate against
 * spark.sql.autoBroadcastJoinThreshold, or by a hint); the broadcast side reads no index, the
 * streamed fact side reads the index led by the key, unbucketed, so its probes come in key order
 * (BroadcastProbeIndexSuite has the rest of that). Over the threshold the index join is used as
 * before. Results are the same either way (with adaptive execution on and off).
 */
class BroadcastJoinSuite extends MaintenanceTestSupport {

  // A fact table of 20,000 rows and a dimension of 300 keys, each with an index on the join key.
  private lazy val fact: String = {
    val path = newDir("fact").getAbsolutePath + "/data"
    spark.range(0, 20000, 1, 4).selectExpr("id % 500 AS key", "CONCAT('n', id % 37) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount").write.parquet(path)
    path
  }
  private lazy val dim: String = {
    val path = newDir("dim").getAbsolutePath + "/data"
    spark.range(0, 300, 1, 1).selectExpr("id AS dkey", "CONCAT('label-', id % 7) AS label").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(fact), IndexConfig("factByKey", Seq("key"), Seq("amount", "name")))
    hs.createIndex(spark.read.parquet(fact), IndexConfig("factByName", Seq("name"), Seq("key", "amount")))
    hs.createIndex(spark.read.parquet(dim), IndexConfig("dimByKey", Seq("dkey"), Seq("label")))
  }

  private def factSide: DataFrame = spark.read.parquet(fact).select("key", "amount")
  private def dimSide: DataFrame = spark.read.parquet(dim).select("dkey", "label")

  private def query(how: String = "inner"): DataFrame = joined(factSide, dimSide, how)

  private def joined(f: DataFrame, d: DataFrame, how: String = "inner"): DataFrame =
    f.join(d, f("key") === d("dkey"), how)

  /** Spark's size estimate of a join side, as the optimizer sees it. */
  private def estimate(side: DataFrame): BigInt =
    withHyperspace(on = false)(side.queryExecution.optimizedPlan.stats.sizeInBytes)

  /** A threshold under which the dimension side is broadcast and the fact side is not. */
  private lazy val dimFits: String = {
    val (d, f) = (estimate(dimSide), estimate(factSide))
    assert(d < f, s"the dimension ($d bytes) must be estimated smaller than the fact table ($f bytes)")
    d.toString
  }
  private lazy val dimOver: String = (BigInt(dimFits) - 1).toString

  private def broadcastJoins(plan: SparkPlan): Int = plan.collect { case j: BroadcastHashJoinExec => j }.size
  private def mergeJoins(plan: SparkPlan): Int = plan.collect { case j: SortMergeJoinExec => j }.size

  for (aqe <- Seq("false", "true")) {
    test(s"a dimension Spark broadcasts: the join is left to Spark, only the streamed side reads an index (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe, "spark.sql.autoBroadcastJoinThreshold" -> dimFits) {
        val plan = sameResult(query())
        assert(indexesUsed(plan) == Seq("factByKey"), plan.treeString)
        assert(broadcastJoins(plan) == 1 && shuffles(plan) == 0, plan.treeString)
      }
    }

    test(s"a dimension over the threshold: both sides read their index, no Exchange (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe, "spark.sql.autoBroadcastJoinThreshold" -> dimOver) {
        val plan = sameResult(query())
        assert(indexesUsed(plan) == Seq("dimByKey", "factByKey"), plan.treeString)
        assert(mergeJoins(plan) == 1 && shuffles(plan) == 0, plan.treeString)
      }
    }

    test(s"broadcast hints are respected, whatever the threshold (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe, "spark.sql.autoBroadcastJoinThreshold" -> "-1") {
        val hinted = sameResult(joined(factSide, broadcast(dimSide)))
        assert(indexesUsed(hinted) == Seq("factByKey") && broadcastJoins(hinted) == 1, hinted.treeString)

        factSide.createOrReplaceTempView("f")
        dimSide.createOrReplaceTempView("d")
        val sql = sameResult(spark.sql("SELECT /*+ BROADCAST(d) */ f.amount, d.label FROM f JOIN d ON f.key = d.dkey"))
        assert(indexesUsed(sql) == Seq("factByKey") && broadcastJoins(sql) == 1, sql.treeString)
      }
      // A hint for another strategy is Spark's choice too: a small dimension is then not broadcast.
      withConf("spark.sql.adaptive.enabled" -> aqe, "spark.sql.autoBroadcastJoinThreshold" -> dimFits) {
        val merge = sameResult(spark.sql("SELECT /*+ MERGE(d) */ f.amount, d.label FROM f JOIN d ON f.key = d.dkey"))
        assert(indexesUsed(merge) == Seq("dimByKey", "factByKey"), merge.treeString)
        assert(broadcastJoins(merge) == 0, merge.treeString)
      }
    }
  }

  test("under a broadcast join, the big side still reads an index that serves its filter") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> dimFits) {
      val filtered = spark.read.parquet(fact).where("name = 'n3'").select("key", "amount")
      val plan = sameResult(joined(filtered, dimSide))
      assert(indexesUsed(plan) == Seq("factByName"), plan.treeString)
      assert(broadcastJoins(plan) == 1, plan.treeString)
    }
  }

  test("join types Spark cannot broadcast (full outer) keep the index join; results never change") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> dimFits) {
      val full = sameResult(query("full_outer"))
      assert(indexesUsed(full) == Seq("dimByKey", "factByKey"), full.treeString)
      for (how <- Seq("inner", "left_outer", "right_outer", "left_semi", "left_anti")) {
        val plan = sameResult(query(how))
        // Every one of these can broadcast one of the sides: left outer, semi and anti the
        // dimension (right), whose streamed fact side reads its index; right outer the fact
        // side only, which is over the threshold: the index join.
        if (how == "right_outer") assert(indexesUsed(plan) == Seq("dimByKey", "factByKey"), s"$how: ${plan.treeString}")
        else assert(indexesUsed(plan) == Seq("factByKey") && broadcastJoins(plan) == 1, s"$how: ${plan.treeString}")
      }
    }
  }

  test("whyNot says which side Spark broadcasts and why") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> dimFits) {
      // factByKey is read by the streamed side; factByName, led by another column, is not.
      val factReason = hs.whyNot(query(), "factByName")
      assert(
        factReason.contains("Spark broadcasts the other side of the join") &&
          factReason.contains(s"spark.sql.autoBroadcastJoinThreshold=$dimFits"), factReason)
      val dimReason = hs.whyNot(query(), "dimByKey")
      assert(dimReason.contains("Spark broadcasts this side of the join"), dimReason)
    }
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      val hinted = hs.whyNot(joined(factSide, broadcast(dimSide)), "factByName")
      assert(hinted.contains("Spark broadcasts the other side of the join (a broadcast hint asks for it)"), hinted)
    }
  }
}
