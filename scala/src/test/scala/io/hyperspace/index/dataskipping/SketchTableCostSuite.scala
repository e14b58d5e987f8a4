package io.hyperspace.index.dataskipping

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.Expression

import io.hyperspace.dataskipping.DataSkippingTestSupport

/**
 * What data skipping costs a query planner: a filter no sketch of an index can use never
 * touches the index's sketch table; a usable one reads it once per index version.
 */
class SketchTableCostSuite extends DataSkippingTestSupport {

  /** Plans `df` with Hyperspace on; returns the Spark jobs planning started. */
  private def planningJobs(df: DataFrame): Int = withHyperspace(on = true)(jobsDuring(df.queryExecution.optimizedPlan))

  test("a filter no sketch can use does not read the sketch table; a usable one reads it once") {
    val dir = clusteredSource("cost", files = 8, rowsPerFile = 20)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_cost", MinMaxSketch("id"), ValueListSketch("cat")))

    // `k` and `score` have no sketch: nothing to evaluate, nothing read, the plan unchanged.
    val unusable = read(dir).where("k = 5 AND score > 3")
    assert(planningJobs(unusable) == 0, "planning read the sketch table of an index that cannot help")
    assert(pruned(unusable).isEmpty)
    assert(filesRead(sameResult(read(dir).where("k = 5 AND score > 3"))) == 8)
    withHyperspace(on = true)(assert(hs.skippingStats(read(dir).where("k = 5")).isEmpty))

    // A usable filter reads the table (one collect) the first time, then from the cache.
    assert(planningJobs(read(dir).where("id = 7")) == 1)
    assert(planningJobs(read(dir).where("id = 50 AND k = 5")) == 0)
    assert(filesRead(sameResult(read(dir).where("id = 50 AND k = 5"))) == 1)
  }

  test("a sketch table evaluated by a Spark job skips exactly the files the driver-held one does") {
    val dir = clusteredSource("paths", files = 10, rowsPerFile = 30)
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_paths", MinMaxSketch("id"), PrefixSketch("name", 5)))
    val entry = logOf("ds_paths").latestStable.get
    val relation = read(dir).queryExecution.analyzed
    val resolved =
      DataSkippingIndex.resolveSketches(spark, entry.name, DataSkippingIndexData.sketchesOf(entry.index), relation)
    def condition(sql: String): Expression = {
      val filter = read(dir).where(sql).queryExecution.analyzed.collectFirst {
        case org.apache.spark.sql.catalyst.plans.logical.Filter(c, _) => c
      }.get
      // The filter was analyzed over another read of the source: rebind it by column name.
      val rebound = filter.transform {
        case a: org.apache.spark.sql.catalyst.expressions.AttributeReference =>
          relation.output.find(_.name == a.name).get
      }
      DataSkippingIndex.translate(rebound, resolved, SketchTableEvaluator.attributes(entry)).get
    }
    val onDriver = SketchTableEvaluator.load(spark, entry)
    val byJob = SketchTableEvaluator.load(spark, entry, maxDriverBytes = 0)
    assert(onDriver.onDriver && !byJob.onDriver)
    for (sql <- Seq("id BETWEEN 40 AND 70", "name LIKE 'u0003%'", "id > 250 OR name LIKE 'u0001%'")) {
      val expected = onDriver.skippedIds(condition(sql))
      assert(expected.nonEmpty && expected.size < 10, sql)
      assert(byJob.skippedIds(condition(sql)) == expected, sql)
    }
  }
}
