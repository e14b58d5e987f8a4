package io.hyperspace.execution

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Lookups that read a few small index files are answered in the driver when their rows are
 * collected there, with no Spark job and the same rows; anything else runs as planned.
 */
class DriverIndexReadSuite extends RuleTestSupport {

  private lazy val source = writeSource("lookups", rows = 4000, files = 5)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(source), IndexConfig("lookupsById", Seq("id"), Seq("name", "amount")))
  }

  private def driverReads(plan: SparkPlan): Seq[DriverIndexReadExec] =
    plan.collect { case d: DriverIndexReadExec => d }

  /** The number of Spark jobs `action` starts on `df` (created first: reading a schema may take a job). */
  private def jobsOf[T](df: DataFrame)(action: DataFrame => T): Int = jobsDuring(action(df))

  private def withConf[T](pairs: (String, String)*)(body: => T): T = {
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body
    finally pairs.foreach { case (k, _) => spark.conf.unset(k) }
  }

  private def lookup = spark.read.parquet(source).where("id IN (7, 1234)").select("id", "name", "amount")

  test("a lookup collected to the driver reads its index files there and runs no job") {
    val plan = sameResult(lookup)
    val Seq(read) = driverReads(plan)
    assert(read.metrics("numFiles").value >= 1 && read.metrics("numOutputRows").value == 2, plan.treeString)
    assert(indexesUsed(plan) == Seq("lookupsById"))
    withHyperspace(on = true) {
      assert(jobsOf(lookup)(_.collect()) == 0)
      assert(jobsOf(lookup.orderBy("id"))(_.collect()) > 0) // a Sort above: runs as planned
    }
    withHyperspace(on = false)(assert(jobsOf(lookup)(_.collect()) > 0))
  }

  test("show, first and limit take their rows from the driver-side read") {
    withHyperspace(on = true) {
      assert(jobsOf(lookup.limit(1))(_.collect()) == 0)
      assert(jobsOf(spark.read.parquet(source).where("id = 7").select("name"))(_.first()) == 0)
      assert(jobsOf(lookup)(_.take(1)) == 0)
      assert(lookup.limit(1).collect().length == 1)
    }
    sameResult(lookup.limit(5))
  }

  test("more matching rows than driverRead.maxRows run as a job, with the same rows") {
    withConf("spark.hyperspace.index.driverRead.maxRows" -> "10") {
      def wide = spark.read.parquet(source).where("id > 100").select("id", "name")
      val plan = sameResult(wide)
      assert(indexesUsed(plan) == Seq("lookupsById"), plan.treeString)
      withHyperspace(on = true)(assert(jobsOf(wide)(_.collect()) > 0))
    }
  }

  test("driverRead.maxBytes bounds the files read in the driver; 0 turns it off") {
    withConf("spark.hyperspace.index.driverRead.maxBytes" -> "0") {
      val plan = sameResult(lookup)
      assert(driverReads(plan).isEmpty && indexesUsed(plan) == Seq("lookupsById"), plan.treeString)
    }
    withConf("spark.hyperspace.index.driverRead.maxBytes" -> "1") {
      assert(driverReads(sameResult(lookup)).isEmpty)
    }
  }

  test("non-deterministic expressions and other operators above the scan are left to a job") {
    val random = withHyperspace(on = true) {
      val df = spark.read.parquet(source).where("id = 7").selectExpr("id", "rand(3) AS r")
      df.collect()
      executed(df)
    }
    assert(driverReads(random).isEmpty && indexesUsed(random) == Seq("lookupsById"), random.treeString)
    val grouped = sameResult(spark.read.parquet(source).where("id IN (7, 8)").groupBy("name").count())
    assert(driverReads(grouped).isEmpty, grouped.treeString)
  }

  test("a lookup in a scalar subquery and under a filter on other columns returns Spark's rows") {
    spark.read.parquet(source).createOrReplaceTempView("lookups_v")
    sameResult(spark.sql(
        "SELECT id, name FROM lookups_v WHERE id = (SELECT max(id) FROM lookups_v WHERE id IN (5, 9))"))
    sameResult(spark.read.parquet(source).where("id IN (3, 20, 37) AND amount > 10 AND name LIKE 'name-%'")
        .select("name", "amount"))
    sameResult(spark.read.parquet(source).where("id = -1").select("name")) // no row
  }
}
