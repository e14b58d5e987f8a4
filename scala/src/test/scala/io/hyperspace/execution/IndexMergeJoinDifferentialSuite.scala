package io.hyperspace.execution

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.joins.SortMergeJoinExec

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.testing.Fuzz

/**
 * The planner's promise for a sort-merge join of two fresh covering indexes on the join keys
 * with equal bucket counts (one file per bucket): neither side is shuffled or sorted — in the
 * plan that runs and, under adaptive execution, already in the plan shown before the run
 * (`df.explain()`, `EXPLAIN`, `queryExecution.executedPlan`), which Spark prepares without the
 * columnar rules that remove the Sorts from each stage — and the rows are Spark's own.
 *
 * Key types int, long, string and date (with null keys), 4 and 8 buckets, sources of one and of
 * several files, keys named apart on the two sides. CI runs the issue's case (200,000 joined to 50,000
 * rows, 8 buckets) and each key type once, the bucket and file counts in turn; `make test-full`
 * (`HYPERSPACE_ALL_SETTINGS=true`) every combination.
 */
class IndexMergeJoinDifferentialSuite extends RuleTestSupport {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
  }

  private val query = "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k2"

  /** `id` as a key of `keyType`; every 97th null, which the join drops and the index keeps. */
  private def key(keyType: String, id: String): String = {
    val value = keyType match {
      case "date" => s"DATE_ADD(DATE'2000-01-01', CAST($id AS INT))"
      case "string" => s"CONCAT('k-', $id)"
      case t => s"CAST($id AS $t)"
    }
    s"CASE WHEN id % 97 = 0 THEN NULL ELSE $value END"
  }

  /** Writes sources `a` (k, v) and `b` (k2, w) as temp views, `b`'s keys every third of `a`'s, and indexes both. */
  private def sourcesAndIndexes(
      name: String, keyType: String, buckets: Int, files: Int, rowsA: Int, rowsB: Int): Seq[String] = {
    val a = newDir(s"$name-a").getAbsolutePath + "/data"
    val b = newDir(s"$name-b").getAbsolutePath + "/data"
    spark.range(0, rowsA, 1, files).selectExpr(s"${key(keyType, "id")} AS k", "CAST(id * 2 AS INT) AS v")
      .write.parquet(a)
    spark.range(0, rowsB, 1, files).selectExpr(s"${key(keyType, "id * 3")} AS k2", "CAST(id AS INT) AS w")
      .write.parquet(b)
    spark.read.parquet(a).createOrReplaceTempView("a")
    spark.read.parquet(b).createOrReplaceTempView("b")
    val indexes = Seq(s"${name}A", s"${name}B")
    hs.createIndex(spark.read.parquet(a), IndexConfig(indexes(0), Seq("k"), Seq("v"), numBuckets = Some(buckets)))
    hs.createIndex(spark.read.parquet(b), IndexConfig(indexes(1), Seq("k2"), Seq("w"), numBuckets = Some(buckets)))
    indexes
  }

  private def withAdaptive[T](on: Boolean)(body: => T): T = {
    spark.conf.set("spark.sql.adaptive.enabled", on.toString)
    try body
    finally spark.conf.unset("spark.sql.adaptive.enabled")
  }

  /** The physical plan before any run: under adaptive execution, its initial plan. */
  private def beforeRun(df: DataFrame): SparkPlan = df.queryExecution.executedPlan match {
    case a: AdaptiveSparkPlanExec => a.executedPlan
    case p => p
  }

  /** The Sorts and Exchanges below the plan's one sort-merge join. */
  private def sortsAndExchangesBelowJoin(plan: SparkPlan): Seq[SparkPlan] = {
    val joins = plan.collect { case j: SortMergeJoinExec => j }
    assert(joins.size == 1, plan.treeString)
    joins.head.children.flatMap(_.collect {
      case s: SortExec => s
      case e: ShuffleExchangeExec => e
    })
  }

  /**
   * With adaptive execution on and off: the plan before the run and the one that ran have no
   * Sort and no Exchange below the join and read both indexes; the rows equal Spark's (compared
   * only with adaptive execution on when `rowsOnce`: the rows do not depend on the setting).
   */
  private def assertJoinNeedsNoSortNorExchange(indexes: Seq[String], what: String, rowsOnce: Boolean = false): Unit =
    for (adaptive <- Seq(true, false)) withAdaptive(adaptive) {
      val shown = withHyperspace(on = true)(beforeRun(spark.sql(query)))
      assert(sortsAndExchangesBelowJoin(shown).isEmpty,
        s"$what, adaptive=$adaptive, before the run\n${shown.treeString}")
      // Without adaptive execution the plan shown is the one that runs.
      if (adaptive || !rowsOnce) {
        val ran = sameResult(spark.sql(query))
        assert(indexesUsed(ran) == indexes.sorted, s"$what, adaptive=$adaptive\n${ran.treeString}")
        assert(sortsAndExchangesBelowJoin(ran).isEmpty, s"$what, adaptive=$adaptive\n${ran.treeString}")
      }
    }

  test("200,000 x 50,000 rows on two 8-bucket indexes: no Sort and no Exchange, Spark's rows") {
    val indexes = sourcesAndIndexes("issue", "int", buckets = 8, files = 4, rowsA = 200000, rowsB = 50000)
    assertJoinNeedsNoSortNorExchange(indexes, "int keys, 8 buckets", rowsOnce = true)
    // What EXPLAIN shows a user (adaptive execution's initial plan) says the same.
    val explained = withHyperspace(on = true)(spark.sql(s"EXPLAIN $query").collect().head.getString(0))
    assert(explained.contains("SortMergeJoin") && !explained.contains("Sort [") && !explained.contains("Exchange"),
      explained)
    // Spark's own plan of the join shuffles and sorts both sides: what the indexes spare.
    val plain = withHyperspace(on = false)(beforeRun(spark.sql(query)))
    assert(sortsAndExchangesBelowJoin(plain).count(_.isInstanceOf[SortExec]) == 2, plain.treeString)
    assert(sortsAndExchangesBelowJoin(plain).count(_.isInstanceOf[ShuffleExchangeExec]) == 2, plain.treeString)
  }

  private val layouts = for (buckets <- Seq(4, 8); files <- Seq(1, 3)) yield (buckets, files)

  for ((keyType, i) <- Seq("int", "long", "string", "date").zipWithIndex;
    (buckets, files) <- Fuzz.settingsFor(layouts, i))
    test(s"$keyType keys, $buckets buckets, sources of $files file(s): no Sort and no Exchange, Spark's rows") {
      val indexes = sourcesAndIndexes(s"$keyType$buckets$files", keyType, buckets, files, rowsA = 3000, rowsB = 1000)
      assertJoinNeedsNoSortNorExchange(indexes, s"$keyType keys, $buckets buckets, $files file(s)")
    }
}
