package io.hyperspace.expressions

import org.apache.spark.metrics.source.CodegenMetrics
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, Predicate}
import org.apache.spark.sql.catalyst.plans.logical.Filter

import io.hyperspace.SparkSessionSuite

/**
 * Predicates whose compared constants are read from a row of their own: Spark's rows for every
 * filter shape, and one compiled class for filters that differ only in those constants.
 */
class SharedCodePredicateSuite extends SparkSessionSuite {

  /** Every type Spark writes into generated code, others it does not, NULLs and NaNs among them. */
  private lazy val path: String = {
    val p = newDir("shared-code").getAbsolutePath + "/data"
    spark.range(0, 400, 1, 2).selectExpr(
      "id",
      "CASE WHEN id % 9 = 0 THEN NULL ELSE CAST(id % 50 AS INT) END AS i",
      "CAST(id % 7 AS SMALLINT) AS s",
      "CAST(id % 5 AS TINYINT) AS t",
      "CASE WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) ELSE id / 4.0 END AS dbl",
      "CAST(id / 8.0 AS FLOAT) AS f",
      "id % 2 = 0 AS b",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 90 AS INT)) AS d",
      "TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id % 48 AS INT), 0, 0) AS ts",
      "CAST(id * 1.25 AS DECIMAL(12, 2)) AS price",
      "CONCAT('name-', id % 17) AS name").write.parquet(p)
    p
  }

  /** Rows the shared-code predicate keeps, against Spark's interpreted evaluation and its query. */
  private def check(where: String): Unit = {
    val df = spark.read.parquet(path)
    val Filter(condition, child) = df.where(where).queryExecution.optimizedPlan: @unchecked
    val rows = df.queryExecution.toRdd.map(_.copy()).collect()
    val shared = SharedCodePredicate.create(condition, child.output)
    val interpreted = Predicate.createInterpreted(BindReferences.bindReference(condition, child.output))
    val kept = rows.map(shared)
    assert(kept.sameElements(rows.map((r: InternalRow) => interpreted.eval(r))), s"$where: $condition")
    assert(kept.count(identity) == df.where(where).count(), where)
  }

  test("keeps Spark's rows for comparisons and IN lists of every constant type, with NULLs and NaN") {
    Seq(
      "id = 17", "id <=> 17", "id < 5 OR id >= 395", "id BETWEEN 100 AND 110", "id IN (1, 2, 399)",
      "i = 3", "i <=> NULL", "i IN (1, 2, NULL)", "i > 40 AND s < 3", "t = 4", "s IN (1, 6)",
      "dbl = CAST('NaN' AS DOUBLE)", "dbl > 50.5", "f <= 1.5", "b = true", "NOT (b = false)",
      "d = DATE'2024-02-01'", "d >= DATE'2024-03-01' AND d < DATE'2024-03-08'",
      "ts > TIMESTAMP'2024-01-02 12:00:00'", "price = 12.50", "name = 'name-3'",
      "id + 1 = 5", "round(dbl, 1) > 20.0", "name LIKE 'name-1%' AND id > 50", "17 = id",
      "id IN (3)", s"id IN (${(1 to 30).mkString(", ")})", "isnull(i) OR i = 7").foreach(check)
  }

  test("keeps Spark's rows for long IN lists of ints, shorts, bytes and dates (Spark's switch), NULL in them or not") {
    val ints = (1 to 40 by 3).mkString(", ")
    val dates = (1 to 60 by 4).map(k => s"DATE_ADD(DATE'2024-01-01', $k)").mkString(", ")
    val wheres = Seq(
      s"i IN ($ints)", s"i IN ($ints, NULL)", s"NOT (i IN ($ints))", s"isnull(i IN ($ints, NULL))",
      s"s IN (${(0 to 11).mkString(", ")})", s"t IN (${(-5 to 5).mkString(", ")})", s"d IN ($dates)",
      s"d IN ($dates) AND i IN ($ints)", s"i IN (${(100 to 120).mkString(", ")})")
    wheres.foreach(check)
    // The shape this covers: Spark's optimizer made an InSet of each list.
    val df = spark.read.parquet(path)
    assert(wheres.forall(w => df.where(w).queryExecution.optimizedPlan.toString.contains("INSET")))
  }

  test("filters that differ only in their constants compile one class between them") {
    val df = spark.read.parquet(path)
    def conditionOf(where: String) = {
      val Filter(condition, child) = df.where(where).queryExecution.optimizedPlan: @unchecked
      (condition, child.output)
    }
    def compilations(wheres: Seq[String])(create: ((Expression, Seq[Attribute])) => Any): Long = {
      val planned = wheres.map(conditionOf)
      val before = CodegenMetrics.METRIC_COMPILATION_TIME.getCount
      planned.foreach(create)
      CodegenMetrics.METRIC_COMPILATION_TIME.getCount - before
    }
    // Keys no other test uses, so no class of them is cached yet.
    def lookups(base: Int) = (0 until 4).map(k => s"id = ${base + k} AND d > DATE'2024-01-0${k + 1}'")
    assert(compilations(lookups(900000)) { case (c, in) => SharedCodePredicate.create(c, in) } <= 1)
    // Spark's own generated predicate compiles one per key: what the count above is measured against.
    assert(compilations(lookups(800000)) { case (c, in) => Predicate.create(c, in) } == 4)
    // Long IN lists of ints and dates (InSet, which Spark generates as a switch over the values).
    def lists(base: Int) = (0 until 4).map { k =>
      val values = (0 until 12).map(v => base + 100 * k + v)
      s"i IN (${values.mkString(", ")}) AND d IN (${values.map(v => s"DATE_ADD(DATE'2000-01-01', $v)").mkString(", ")})"
    }
    assert(compilations(lists(700000)) { case (c, in) => SharedCodePredicate.create(c, in) } <= 1)
    assert(compilations(lists(600000)) { case (c, in) => Predicate.create(c, in) } == 4)
  }
}
