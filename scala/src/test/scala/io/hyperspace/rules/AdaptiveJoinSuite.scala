package io.hyperspace.rules

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SortMergeJoinExec}

import io.hyperspace.index.IndexConfig
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * Joins adaptive execution turns into broadcast hash joins once a side has run and measures
 * small (after a selective filter, or an aggregate of a few rows), though Spark's estimate before
 * running puts both sides over the threshold: the join rule leaves them to Spark, since it
 * measures only shuffled sides and a join of two bucketed index reads has none. Where both sides
 * stay large the index join is used as before. Results are Spark's either way.
 */
class AdaptiveJoinSuite extends MaintenanceTestSupport {

  // Two tables of 60,000 rows over 3,000 keys, each indexed on the key in 32 buckets.
  private def table(name: String): String = {
    val path = newDir(name).getAbsolutePath + "/data"
    spark.range(0, 60000, 1, 4).selectExpr("id % 3000 AS key", "SHA2(CAST(id AS STRING), 256) AS payload",
      "CAST(id % 977 AS DOUBLE) AS amount").write.parquet(path)
    path
  }
  private lazy val (left, right) = (table("left"), table("right"))

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(left), IndexConfig("leftByKey", Seq("key"), Seq("payload", "amount"), Some(32)))
    hs.createIndex(spark.read.parquet(right), IndexConfig("rightByKey", Seq("key"), Seq("payload"), Some(32)))
  }

  private def l: DataFrame = spark.read.parquet(left).select("key", "payload", "amount")
  private def r: DataFrame = spark.read.parquet(right).select("key", "payload")
  private def joined(a: DataFrame, b: DataFrame): DataFrame = a.join(b, a("key") === b("key"))

  // Spark's estimate of the smaller side before running: a threshold of a quarter of it keeps
  // both sides over it then, and is far above what two keys' rows (40 a side) measure once run.
  private lazy val threshold: String =
    (withHyperspace(on = false)(Seq(l, r).map(_.queryExecution.optimizedPlan.stats.sizeInBytes).min) / 4).toString

  private def thresholds(aqe: String) = Seq("spark.sql.adaptive.enabled" -> aqe,
    "spark.sql.autoBroadcastJoinThreshold" -> threshold, "spark.sql.adaptive.autoBroadcastJoinThreshold" -> threshold)

  private def joins(plan: SparkPlan): (Int, Int) = (plan.collect { case j: BroadcastHashJoinExec => j }.size,
    plan.collect { case j: SortMergeJoinExec => j }.size)

  private def withoutHyperspace(query: => DataFrame): SparkPlan =
    withHyperspace(on = false) { val df = query; df.collect(); executed(df) }

  test("a selective filter on a side: adaptive execution broadcasts it, with the indexes as without") {
    withConf(thresholds("true"): _*) {
      def query = joined(l.where("key IN (7, 11)"), r)
      assert(joins(withoutHyperspace(query)) == (1, 0), "adaptive execution broadcasts the filtered side")
      val plan = sameResult(query)
      assert(joins(plan) == (1, 0), plan.treeString)
      // The filter rule may read either side from its index, pruned to the keys' buckets, but not
      // bucketed: a bucketed read would not be shuffled, so adaptive execution could not measure it.
      assert(indexScans(plan).forall(!_.bucketedScan), plan.treeString)
    }
  }

  // The aggregate reads a column the index does not cover, so its input is shuffled as Spark plans
  // it. (One an index on the join key serves is planned on the buckets with no shuffle, and stays
  // a sort-merge join: not handled yet.)
  test("an aggregate of a few rows on a side: adaptive execution broadcasts it, with the indexes as without") {
    withConf(thresholds("true"): _*) {
      def few = spark.read.parquet(right).where("amount < 3").groupBy("key").count()
      def query = joined(l, few)
      assert(joins(withoutHyperspace(query)) == (1, 0), "adaptive execution broadcasts the aggregate")
      val plan = sameResult(query)
      assert(joins(plan) == (1, 0), plan.treeString)
    }
  }

  test("both sides large: the index join is used, no Exchange (adaptive execution on)") {
    withConf(thresholds("true"): _*) {
      val plan = sameResult(joined(l, r))
      assert(indexesUsed(plan) == Seq("leftByKey", "rightByKey"),
        plan.treeString +
          withHyperspace(on = true)(hs.whyNot(joined(l, r), "rightByKey")))
      assert(joins(plan) == (0, 1) && shuffles(plan) == 0, plan.treeString)
    }
  }

  test("a selective filter with adaptive execution off: nothing is decided at run time, the index join is used") {
    withConf(thresholds("false"): _*) {
      val plan = sameResult(joined(l.where("key IN (7, 11)"), r))
      assert(indexesUsed(plan) == Seq("leftByKey", "rightByKey"), plan.treeString)
      assert(joins(plan) == (0, 1) && shuffles(plan) == 0, plan.treeString)
    }
  }

  test("a merge hint keeps the index join: adaptive execution does not broadcast against it") {
    withConf(thresholds("true"): _*) {
      val plan = sameResult(joined(l.where("key IN (7, 11)").hint("merge"), r))
      assert(indexesUsed(plan) == Seq("leftByKey", "rightByKey"), plan.treeString)
      assert(joins(plan) == (0, 1) && shuffles(plan) == 0, plan.treeString)
    }
  }
}
