package io.hyperspace.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.logical.Project

import io.hyperspace.SparkSessionSuite

/**
 * Projections that start interpreted and hand over to generated code: Spark's generated
 * projection's rows on both sides of the handover, and one random sequence for a projection that
 * is not deterministic.
 */
class FewRowsProjectionSuite extends SparkSessionSuite {

  private val rowCount = FewRowsProjection.CompileAfter + 1000

  /** The rows of `select` over generated data, and the projection's expressions over its input. */
  private def planOf(select: String*): (Array[InternalRow], Seq[Expression], Seq[Attribute]) = {
    val input = spark.range(0, rowCount, 1, 1).selectExpr(
      "id",
      "CASE WHEN id % 9 = 0 THEN NULL ELSE CAST(id % 50 AS INT) END AS i",
      "CASE WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) ELSE id / 4.0 END AS dbl",
      "CAST(id * 1.25 AS DECIMAL(12, 2)) AS price",
      "CAST(id AS DECIMAL(30, 3)) AS wide",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 90 AS INT)) AS d",
      "CASE WHEN id % 7 = 0 THEN NULL ELSE CONCAT('name-', id) END AS name",
      "array(id, id + 1) AS pair")
    val Project(list, child) = input.selectExpr(select: _*).queryExecution.analyzed: @unchecked
    (input.queryExecution.toRdd.map(_.copy()).collect(), list, child.output)
  }

  private def projected(rows: Array[InternalRow], project: InternalRow => InternalRow): Seq[InternalRow] =
    rows.toSeq.map(r => project(r).copy())

  test("the rows of Spark's generated projection, before and after the handover") {
    val (rows, list, input) = planOf("id", "i", "dbl", "price", "wide", "d", "name", "pair",
      "i + 1 AS next", "upper(name) AS shout", "price * 2 AS twice")
    val generated = UnsafeProjection.create(list, input)
    val few = FewRowsProjection.create(list, input)
    val expected = projected(rows, r => generated(r))
    val got = projected(rows, few)
    assert(got.size > FewRowsProjection.CompileAfter)
    got.zip(expected).zipWithIndex.foreach { case ((g, e), i) => assert(g == e, s"row $i") }
  }

  test("a nondeterministic projection keeps one random sequence past the handover point") {
    val (rows, list, input) = planOf("id", "rand(7) AS r")
    val generated = UnsafeProjection.create(list, input)
    generated.initialize(0)
    val expected = projected(rows, r => generated(r))
    val got = projected(rows, FewRowsProjection.create(list, input))
    assert(got == expected)
    // A second sequence started at the handover would repeat the first row's value there.
    val (first, atHandover) = (got.head.getDouble(1), got(FewRowsProjection.CompileAfter).getDouble(1))
    assert(first != atHandover)
  }
}
