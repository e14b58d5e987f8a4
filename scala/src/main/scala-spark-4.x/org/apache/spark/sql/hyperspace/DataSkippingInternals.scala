package org.apache.spark.sql.hyperspace

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.classic.ExpressionUtils

/**
 * The `private[sql]` conversions between Catalyst expressions and [[Column]]s that the data
 * skipping sketches need (their aggregates and conditions are Catalyst expressions), kept beside
 * [[SparkInternals]] so a Spark upgrade has one package to check.
 */
object DataSkippingInternals {

  /** A [[Column]] for a resolved Catalyst expression. */
  def column(expr: Expression): Column = ExpressionUtils.column(expr)

  /** The Catalyst expression of a [[Column]] (unresolved if the column was). */
  def expression(column: Column): Expression = ExpressionUtils.expression(column)
}
