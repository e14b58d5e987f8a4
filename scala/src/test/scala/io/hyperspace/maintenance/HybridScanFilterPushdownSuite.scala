package io.hyperspace.maintenance

import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SparkPlan}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec

import io.hyperspace.execution.BucketUnionExec
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.sources.SelectedFilesIndex

/**
 * A join (or aggregate) side with a filter, served by a stale index through hybrid scan: the
 * filter runs below the bucket-preserving union, on the index (bucket pruning and Parquet
 * pushdown) and on the appended files before they are shuffled into the index's buckets.
 */
class HybridScanFilterPushdownSuite extends MaintenanceTestSupport {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    enableHybridScan(maxRatio = 0.6)
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
  }

  private def union(plan: SparkPlan): BucketUnionExec =
    plan.collectFirst { case u: BucketUnionExec => u }.getOrElse(fail(s"no BucketUnion in\n${plan.treeString}"))

  private def indexScan(side: SparkPlan): FileSourceScanExec = side.collectFirst {
    case s: FileSourceScanExec if s.relation.isInstanceOf[IndexHadoopFsRelation] => s
  }.getOrElse(fail(side.treeString))

  /** Whether a Filter sits below the shuffle of the appended side (rows filtered before moving). */
  private def filteredBeforeShuffle(side: SparkPlan): Boolean = side.collectFirst {
    case s: ShuffleExchangeExec => s.child.exists {
        case f: FilterExec => f.child.exists {
            case scan: FileSourceScanExec => scan.relation.location.isInstanceOf[SelectedFilesIndex]
            case _ => false
          }
        case _ => false
      }
  }.getOrElse(false)

  for (aqe <- Seq("false", "true")) {
    test(s"a filtered join side: the filter runs below the union, buckets pruned (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        val dir = newSource(s"pushed-$aqe", partitioned = false)
        hs.createIndex(read(dir), IndexConfig(s"pushed_$aqe", Seq("id"), Seq("name", "day"), lineage = Some(true)))
        deleteFile(dir, 2) // before appending: the file deleted is one the index covers
        append(dir, partitioned = false, 1000, 40)
        val other = newSource(s"pushed-other-$aqe", partitioned = false, rows = 2000)
        def query = read(dir).where("id IN (3, 1005)").select("id", "name")
          .join(read(other).selectExpr("id", "amount"), "id")
        val plan = sameResult(query)
        val Seq(indexSide, appendedSide) = union(plan).children
        val scan = indexScan(indexSide)
        assert(scan.dataFilters.exists(_.references.exists(_.name == "id")),
          s"the index scan gets the filter:\n${plan.treeString}")
        val buckets = scan.optionalBucketSet.getOrElse(fail(s"no bucket pruning:\n${plan.treeString}"))
        assert(buckets.cardinality() < 4, plan.treeString)
        assert(filteredBeforeShuffle(appendedSide), plan.treeString)
      }
    }
  }

  test("a range filter on a non-indexed column is pushed to both children too; results unchanged") {
    val dir = newSource("pushed-range", partitioned = true)
    hs.createIndex(read(dir),
      IndexConfig("pushed_range", Seq("id"), Seq("name", "amount", "day"), lineage = Some(true)))
    append(dir, partitioned = true, 1000, 60)
    val other = newSource("pushed-range-other", partitioned = false, rows = 2000)
    def query = read(dir).where("amount > 300 AND name != 'name-4'").select("id", "name", "day")
      .join(read(other).selectExpr("id", "amount AS other"), "id")
    val plan = sameResult(query)
    val Seq(indexSide, appendedSide) = union(plan).children
    assert(indexScan(indexSide).dataFilters.exists(_.references.exists(_.name == "amount")), plan.treeString)
    assert(filteredBeforeShuffle(appendedSide), plan.treeString)
    // Aggregations over a filtered hybrid scan too.
    sameResult(read(dir).where("id < 50 OR id > 1030").groupBy("id").count())
  }

  test("a non-deterministic filter stays above the union") {
    val dir = newSource("pushed-rand", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("pushed_rand", Seq("id"), Seq("name"), lineage = Some(true)))
    append(dir, partitioned = false, 1000, 40)
    val other = newSource("pushed-rand-other", partitioned = false, rows = 2000)
    val expected = withHyperspace(on = false)(
      read(dir).where("id > 10").select("id").join(read(other).select("id"), "id").count())
    withHyperspace(on = true) {
      // Always TRUE, but not deterministic: it must not be evaluated once per union child.
      val df = read(dir).where("id > 10 AND monotonically_increasing_id() >= 0").select("id", "name")
        .join(read(other).select("id"), "id")
      assert(df.count() == expected)
      val optimized = df.queryExecution.optimizedPlan
      val unionNode = optimized.collectFirst { case u: io.hyperspace.rules.BucketUnion => u }
        .getOrElse(fail(optimized.treeString))
      assert(!unionNode.children.exists(_.expressions.exists(_.exists(!_.deterministic))), optimized.treeString)
    }
  }

  // Expression ids, plan ids and codegen stage ids differ between two plannings of one query.
  private def normalized(plan: String): Seq[String] = plan.linesIterator.map(
    _.replace("<----", "").replace("---->", "").replaceAll("#\\d+L?", "#")
      .replaceAll("plan_id=\\d+", "plan_id=").replaceAll("\\*\\(\\d+\\) ", "").trim)
    .filter(_.nonEmpty).toSeq

  test("explain shows the plan that runs: the join side's filter below the union") {
    withConf("spark.sql.adaptive.enabled" -> "false") {
      val dir = newSource("explained", partitioned = false)
      hs.createIndex(read(dir), IndexConfig("explained", Seq("id"), Seq("name")))
      append(dir, partitioned = false, 1000, 40)
      val other = newSource("explained-other", partitioned = false, rows = 2000)
      def query = read(dir).where("id IN (3, 1005)").select("id", "name")
        .join(read(other).selectExpr("id", "amount"), "id")
      val runs = withHyperspace(on = true)(query.queryExecution.executedPlan.treeString)
      val explained = withHyperspace(on = true)(hs.explain(query))
      val shown = explained.split("Plan with indexes:")(1).split("Plan without indexes:")(0)
        .linesIterator.filterNot(_.startsWith("=")).mkString("\n")
      assert(normalized(shown) == normalized(runs), s"explain shows\n$shown\nbut the query runs\n$runs")
      assert(shown.contains("BucketUnion"), shown)
    }
  }
}
