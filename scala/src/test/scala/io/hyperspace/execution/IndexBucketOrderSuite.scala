package io.hyperspace.execution

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.{CommandResultExec, QueryExecution, SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.command.DataWritingCommandExec
import org.apache.spark.sql.functions.{col, spark_partition_id}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.util.QueryExecutionListener

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Index scans whose buckets are one sorted file each feed a sort-merge join without a Sort, with
 * no legacy flag set; where a bucket has more files, or the scan does not read by bucket, Spark's
 * Sort stays.
 */
class IndexBucketOrderSuite extends RuleTestSupport {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
  }

  private def sorts(plan: SparkPlan): Int = plan.collect { case s: SortExec => s }.size

  private def append(dir: String, from: Int, rows: Int): Unit =
    spark.range(from, from + rows, 1, 2).selectExpr(
      "id", "CONCAT('name-', id % 17) AS name", "CAST(id * 1.5 AS DOUBLE) AS amount",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 5 AS INT)) AS day")
      .write.mode("append").parquet(dir)

  private def withAdaptive[T](on: Boolean)(body: => T): T = {
    spark.conf.set("spark.sql.adaptive.enabled", on.toString)
    try body
    finally spark.conf.unset("spark.sql.adaptive.enabled")
  }

  private def joinOf(a: String, b: String): DataFrame =
    spark.read.parquet(a).select("id", "name").join(spark.read.parquet(b).selectExpr("id", "amount"), "id")

  test("a join of two indexes bucketed alike needs no Exchange and no Sort") {
    val left = writeSource("order-left", rows = 3000, files = 5)
    val right = writeSource("order-right", rows = 2000, files = 4)
    hs.createIndex(spark.read.parquet(left), IndexConfig("orderLeft", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(right), IndexConfig("orderRight", Seq("id"), Seq("amount")))
    for (adaptive <- Seq(true, false)) withAdaptive(adaptive) {
      val plan = sameResult(joinOf(left, right))
      assert(indexesUsed(plan) == Seq("orderLeft", "orderRight"), plan.treeString)
      assert(shuffles(plan) == 0 && sorts(plan) == 0, s"adaptive=$adaptive\n${plan.treeString}")
      // Spark's own plan of the same join shuffles and sorts both sides.
      val plain = withHyperspace(on = false) {
        val df = joinOf(left, right)
        df.collect()
        executed(df)
      }
      assert(shuffles(plain) == 2 && sorts(plain) == 2, plain.treeString)
    }
  }

  test("a bucket of several files is sorted again, and optimize full makes the Sort go") {
    val left = writeSource("multi-left", rows = 3000, files = 5)
    val right = writeSource("multi-right", rows = 2000, files = 4)
    hs.createIndex(spark.read.parquet(left), IndexConfig("multiLeft", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(right), IndexConfig("multiRight", Seq("id"), Seq("amount")))
    append(left, 3000, 400)
    hs.refreshIndex("multiLeft", "incremental")
    val refreshed = sameResult(joinOf(left, right))
    assert(indexesUsed(refreshed) == Seq("multiLeft", "multiRight"), refreshed.treeString)
    // Only the side whose buckets now hold two files each is sorted.
    assert(shuffles(refreshed) == 0 && sorts(refreshed) == 1, refreshed.treeString)
    hs.optimizeIndex("multiLeft", "full")
    val optimized = sameResult(joinOf(left, right))
    assert(shuffles(optimized) == 0 && sorts(optimized) == 0, optimized.treeString)
  }

  test("a Sort over an index scan that does not read by bucket stays, and rows come sorted") {
    val dir = writeSource("within", rows = 3000, files = 5)
    hs.createIndex(spark.read.parquet(dir), IndexConfig("withinById", Seq("id"), Seq("name")))
    // A filter-only query: Spark reads the index by file, not by bucket, so nothing is sorted.
    def query = spark.read.parquet(dir).where("id > 100").select("id", "name").sortWithinPartitions("id")
    val plan = sameResult(query)
    assert(indexesUsed(plan) == Seq("withinById"), plan.treeString)
    assert(sorts(plan) == 1, plan.treeString)
    withHyperspace(on = true) {
      val ids = query.select(spark_partition_id().as("p"), col("id")).collect()
        .groupBy(_.getInt(0)).values.map(_.map(_.getLong(1)).toSeq)
      assert(ids.forall(p => p == p.sorted))
    }
  }

  test("over a hybrid scan, the appended rows are sorted and merged in, the index is not re-sorted") {
    val dir = writeSource("hybrid", rows = 3000, files = 5)
    val other = writeSource("hybrid-other", rows = 2000, files = 4)
    hs.createIndex(spark.read.parquet(dir), IndexConfig("hybridById", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(other), IndexConfig("hybridOther", Seq("id"), Seq("amount")))
    append(dir, 3000, 300)
    withHybridScan {
      for (adaptive <- Seq(true, false)) withAdaptive(adaptive) {
        val plan = sameResult(joinOf(dir, other))
        assert(indexesUsed(plan) == Seq("hybridById", "hybridOther"), plan.treeString)
        val union = plan.collectFirst { case u: BucketUnionExec => u }.getOrElse(fail(plan.treeString))
        assert(union.mergesSorted, plan.treeString)
        val Seq(indexSide, appendedSide) = union.children
        assert(sorts(indexSide) == 0 && sorts(appendedSide) == 1, plan.treeString)
        assert(sorts(plan) == 1, s"adaptive=$adaptive\n${plan.treeString}")
      }
    }
  }

  test("a lookup of a few keys reads its index file in one task, not one task per bucket") {
    val dir = writeSource("lookup", rows = 3000, files = 5)
    hs.createIndex(spark.read.parquet(dir), IndexConfig("lookupById", Seq("id"), Seq("name")))
    for (adaptive <- Seq(true, false)) withAdaptive(adaptive) {
      val one = sameResult(spark.read.parquet(dir).where("id = 42").select("id", "name"))
      assert(indexFilesRead(one) == 1, one.treeString)
      val Seq(scan) = indexScans(one)
      assert(!scan.bucketedScan && scan.execute().getNumPartitions == 1, one.treeString)
      // Grouped on the key above: the buckets spare the aggregation an Exchange, so they stay.
      val grouped = sameResult(spark.read.parquet(dir).where("id IN (4, 42)").groupBy("id").count())
      assert(indexScans(grouped).forall(_.bucketedScan) && shuffles(grouped) == 0, grouped.treeString)
    }
  }

  // Every node of an executed plan, through adaptive stages and command results.
  private def nodes(p: SparkPlan): Seq[SparkPlan] = p match {
    case a: AdaptiveSparkPlanExec => nodes(a.executedPlan)
    case q: QueryStageExec => nodes(q.plan)
    case c: CommandResultExec => nodes(c.commandPhysicalPlan)
    case other => other +: other.children.flatMap(nodes)
  }

  /** The executed plans of the file writes `body` runs. */
  private def writePlans(body: => Unit): Seq[SparkPlan] = {
    val seen = new java.util.concurrent.ConcurrentLinkedQueue[QueryExecution]()
    val listener = new QueryExecutionListener {
      override def onSuccess(funcName: String, qe: QueryExecution, durationNs: Long): Unit = seen.add(qe)
      override def onFailure(funcName: String, qe: QueryExecution, exception: Exception): Unit = ()
    }
    // Earlier queries' events (the source's write) are delivered first, to no one: a listener
    // registered with them still queued would see them as the body's.
    SparkInternals.waitForListenerEvents(spark)
    spark.listenerManager.register(listener)
    try {
      body
      SparkInternals.waitForListenerEvents(spark)
    } finally spark.listenerManager.unregister(listener)
    import scala.jdk.CollectionConverters._
    seen.asScala.toSeq.map(qe => nodes(qe.executedPlan))
      .filter(_.exists(_.isInstanceOf[DataWritingCommandExec])).map(_.head)
  }

  test("an index build sorts each bucket once, on the indexed columns, into one sorted file per bucket") {
    val dir = writeSource("build-sort", rows = 3000, files = 5)
    for ((name, indexed) <- Seq("buildById" -> Seq("id"), "buildByNameId" -> Seq("name", "id"))) {
      val plans = writePlans(hs.createIndex(spark.read.parquet(dir), IndexConfig(name, indexed, Seq("amount"))))
      assert(plans.size == 1, plans.map(_.treeString).mkString("\n"))
      // One Sort, keyed first on the indexed column, not on the bucket id (equal within a bucket).
      val Seq(sort) = nodes(plans.head).collect { case s: SortExec => s }
      assert(sort.sortOrder.forall(_.child.isInstanceOf[Attribute]), plans.head.treeString)
      assert(sort.sortOrder.map(_.child.asInstanceOf[Attribute].name).distinct == indexed, plans.head.treeString)
      val files = readIndexFiles(name)
      assert(files.map(_._1).distinct.size == files.size, files.map(_._1))
      assert(files.forall(_._2), s"a bucket file is not sorted on $indexed: $files")
      assert(readIndexData(name).count() == 3000)
    }
    // optimize full writes one file per bucket the same way.
    append(dir, 3000, 200)
    hs.refreshIndex("buildById", "incremental")
    val plans = writePlans(hs.optimizeIndex("buildById", "full"))
    val sorts = plans.flatMap(p => nodes(p).collect { case s: SortExec => s })
    assert(sorts.size == 1 && sorts.head.sortOrder.head.child.isInstanceOf[Attribute], plans.map(_.treeString))
    val files = readIndexFiles("buildById")
    assert(files.map(_._1).distinct.size == files.size)
    assert(files.forall(_._2), s"a bucket file is not sorted: $files")
  }

  /** Per data file of the index's newest version: its bucket, and whether its rows are in indexed-column order. */
  private def readIndexFiles(name: String): Seq[(Int, Boolean)] = {
    val entry = logOf(name).latestStable.get
    val indexed = entry.index.indexedColumns.map(col)
    entry.content.files.map { f =>
      val data = spark.read.parquet(entry.content.pathOf(f)).select(indexed: _*)
      // A small file is read by one task, in file order.
      (io.hyperspace.index.covering.CoveringIndex.bucketOf(f).get,
        data.collect().toSeq == data.orderBy(indexed: _*).collect().toSeq)
    }
  }
}
