package io.hyperspace.execution

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.hyperspace.TestPlans

import io.hyperspace.SparkSessionSuite
import io.hyperspace.rules.BucketUnion

class BucketUnionSuite extends SparkSessionSuite {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    // Keep the bucketed scans bucketed however small the data is.
    spark.conf.set("spark.sql.sources.bucketing.autoBucketedScan.enabled", "false")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    val a = spark.range(0, 300).selectExpr("id AS k", "CONCAT('a', id) AS v")
    val b = spark.range(200, 500).selectExpr("id AS k", "CONCAT('b', id) AS v")
    a.write.bucketBy(4, "k").saveAsTable("left_b")
    b.write.bucketBy(4, "k").saveAsTable("right_b")
    // Not bucketed: stands for the files appended since an index was built.
    spark.range(1000, 1100).selectExpr("id AS k", "CONCAT('c', id) AS v")
      .write.parquet(new java.io.File(tempDir, "appended").getAbsolutePath)
  }

  private def appended: DataFrame =
    spark.read.parquet(new java.io.File(tempDir, "appended").getAbsolutePath)

  private def bucketUnion(parts: DataFrame*): DataFrame =
    TestPlans.toDataFrame(spark,
      BucketUnion(parts.map(_.queryExecution.analyzed), Seq("k"), 4))

  private def finalPlan(df: DataFrame): SparkPlan = df.queryExecution.executedPlan match {
    case a: AdaptiveSparkPlanExec => a.finalPhysicalPlan
    case p => p
  }

  private def shuffles(plan: SparkPlan): Int = plan.collect {
    case s: ShuffleExchangeExec => s
  }.size + plan.collect { case s: org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec => s }.size

  for (aqe <- Seq("true", "false")) {
    test(s"bucketed children are merged bucket by bucket without a shuffle (AQE $aqe)") {
      spark.conf.set("spark.sql.adaptive.enabled", aqe)
      val df = bucketUnion(spark.table("left_b"), spark.table("right_b"))
      val expected = spark.table("left_b").union(spark.table("right_b"))
      assert(df.collect().toSeq.map(_.toString).sorted ==
        expected.collect().toSeq.map(_.toString).sorted)
      val plan = finalPlan(df)
      assert(shuffles(plan) == 0, plan.treeString)
      val union = plan.collectFirst { case u: BucketUnionExec => u }.get
      assert(union.outputPartitioning.isInstanceOf[HashPartitioning])
      assert(union.outputPartitioning.numPartitions == 4)
      assert(df.rdd.getNumPartitions == 4)
    }

    test(s"an unbucketed child is shuffled into the buckets; a join above needs no more (AQE $aqe)") {
      spark.conf.set("spark.sql.adaptive.enabled", aqe)
      val merged = bucketUnion(spark.table("left_b"), appended)
      val joined = merged.join(spark.table("right_b"), "k")
      val expected = spark.table("left_b").union(appended).join(spark.table("right_b"), "k")
      assert(joined.collect().toSeq.map(_.toString).sorted ==
        expected.collect().toSeq.map(_.toString).sorted)
      val plan = finalPlan(joined)
      assert(shuffles(plan) == 1, s"only the appended side may be shuffled:\n${plan.treeString}")

      val grouped = merged.groupBy("k").count()
      assert(grouped.count() == 400)
      assert(grouped.where("count > 1").count() == 0)
    }
  }

  test("every row lands in the bucket of its key") {
    val merged = bucketUnion(spark.table("left_b"), appended)
    val misplaced = merged.rdd.mapPartitionsWithIndex { (bucket, rows) =>
      rows.map(r => (bucket, r.getLong(0)))
    }.collect()
    val expectedBucket = spark.range(0, 1100).selectExpr("id", "hyperspace_bucket_id(4, id)")
      .collect().map(r => r.getLong(0) -> r.getInt(1)).toMap
    assert(misplaced.length == 400)
    assert(misplaced.forall { case (bucket, k) => expectedBucket(k) == bucket })
  }
}
