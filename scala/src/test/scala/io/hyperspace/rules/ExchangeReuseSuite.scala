package io.hyperspace.rules

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{FileSourceScanExec, ReusedSubqueryExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SortMergeJoinExec}

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.covering.IndexFileIndex
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * A query reading the same data twice (TPC-DS q1: a CTE joined to an aggregate over itself)
 * computes it once when Spark sees two identical scans: ReuseExchangeAndSubquery, and adaptive
 * execution's stage reuse, replace the second exchange by the first. Two scans of the same index
 * version, columns and filters must look identical to it as two scans of the same files do, or a
 * rewrite reads and shuffles the data twice. And where adaptive execution turns q1's join into a
 * broadcast hash join (one side is an aggregate of a few rows at run time), it still does so when
 * an index serves the aggregate.
 */
class ExchangeReuseSuite extends MaintenanceTestSupport {

  // Returns of 400 customers at 12 stores over 30 days, in random order over 4 files; one copy
  // indexed on the day (a filter reads the index), one on (customer, store) (the CTE's grouping).
  private def returnsTable(name: String): String = {
    val path = newDir(name).getAbsolutePath + "/data"
    spark.range(0, 30000, 1, 4).selectExpr("id % 400 AS customer", "CAST(id % 12 AS INT) AS store",
      "CAST(id % 30 AS INT) AS day", "CAST(id % 97 AS DOUBLE) AS amount").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView(name)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(returnsTable("byDay")),
      IndexConfig("returnsByDay", Seq("day"), Seq("customer", "store", "amount")))
    hs.createIndex(spark.read.parquet(returnsTable("byCustomerStore")),
      IndexConfig("returnsByCustomerStore", Seq("customer", "store"), Seq("amount", "day")))
  }

  // q1's shape: the CTE grouped by (customer, store), referenced by the outer query and by the
  // correlated subquery Spark decorrelates into a join with an aggregate over the CTE.
  private def q1Shaped(table: String, dayFilter: String): DataFrame = spark.sql(
    s"""WITH total AS (
       |  SELECT customer, store, SUM(amount) AS total FROM $table WHERE $dayFilter GROUP BY customer, store)
       |SELECT t1.customer, t1.store FROM total t1
       |WHERE t1.total > (SELECT AVG(total) * 1.2 FROM total t2 WHERE t1.store = t2.store)""".stripMargin)

  /** Every plan of the executed query, stages and subqueries included, after it ran. */
  private def allNodes(df: DataFrame): Seq[SparkPlan] = {
    def nodes(p: SparkPlan): Seq[SparkPlan] = p match {
      case a: AdaptiveSparkPlanExec => nodes(a.finalPhysicalPlan)
      case q: QueryStageExec => q +: nodes(q.plan)
      case other => other +: (other.children ++ other.subqueries).flatMap(nodes)
    }
    nodes(df.queryExecution.executedPlan)
  }

  private def reused(df: DataFrame): Int =
    allNodes(df).count(n => n.isInstanceOf[ReusedExchangeExec] || n.isInstanceOf[ReusedSubqueryExec])

  private def indexScanNodes(df: DataFrame): Seq[FileSourceScanExec] = allNodes(df).collect {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[IndexFileIndex] => s
  }

  private def tree(df: DataFrame): String = df.queryExecution.executedPlan.treeString

  for (aqe <- Seq("true", "false")) {
    test(s"a CTE read twice through a filter on an index reuses its exchange as Spark does (AQE $aqe)") {
      withConf("spark.sql.adaptive.enabled" -> aqe, "spark.sql.autoBroadcastJoinThreshold" -> "-1") {
        def query = q1Shaped("byDay", "day IN (3, 17)")
        val without = withHyperspace(on = false) { val df = query; df.collect(); reused(df) }
        assert(without > 0, "Spark itself reuses the CTE's exchange")
        val df = ranAlike(query)
        assert(indexScanNodes(df).nonEmpty, tree(df) + hs.whyNot(query, "returnsByDay"))
        assert(reused(df) >= without, tree(df))
      }
    }
  }

  test("adaptive execution broadcasts the aggregate of a few rows when an index serves the CTE, as without") {
    // Spark's estimate before the query runs is over the threshold: only the run-time size of the
    // per-store aggregate (12 rows) lets adaptive execution broadcast it.
    withConf("spark.sql.adaptive.enabled" -> "true", "spark.sql.autoBroadcastJoinThreshold" -> "-1",
      "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "10MB") {
      def query = q1Shaped("byCustomerStore", "TRUE")
      def joins(df: DataFrame): (Int, Int) = {
        val nodes = allNodes(df)
        (nodes.count(_.isInstanceOf[BroadcastHashJoinExec]), nodes.count(_.isInstanceOf[SortMergeJoinExec]))
      }
      val without = withHyperspace(on = false) { val df = query; df.collect(); joins(df) }
      assert(without == (1, 0), "adaptive execution broadcasts the aggregate without indexes")
      val df = ranAlike(query)
      assert(indexScanNodes(df).nonEmpty, tree(df) + hs.whyNot(query, "returnsByCustomerStore"))
      assert(joins(df) == without, tree(df))
    }
  }

  test("two scans of the same index version, columns and filters canonicalize alike; other filters do not") {
    withHyperspace(on = true) {
      def scan(filter: String): FileSourceScanExec = {
        val df = spark.read.parquet(spark.table("byDay").inputFiles.head.replaceAll("/[^/]*$", ""))
          .where(filter).select("day", "amount")
        df.queryExecution.executedPlan.collectFirst {
          case a: AdaptiveSparkPlanExec => a.inputPlan.collectFirst { case s: FileSourceScanExec => s }
          case s: FileSourceScanExec => Some(s)
        }.flatten.getOrElse(fail(df.queryExecution.executedPlan.treeString))
      }
      val (a, b, c) = (scan("day = 3"), scan("day = 3"), scan("day = 4"))
      assert(a.relation.location.isInstanceOf[IndexFileIndex], a.treeString)
      assert(a.relation.location == b.relation.location && a.relation.location.hashCode == b.relation.location.hashCode)
      assert(a.sameResult(b))
      assert(!a.sameResult(c))
    }
  }
}
