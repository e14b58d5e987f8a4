package io.hyperspace.sql

import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Spark 4.0's parser has no entry point taking parameters (`spark.sql(text, args)` binds them
 * after parsing): `parsePlan` is the only one to compare on this line.
 */
object ParameterizedEntryPoints {
  def of(parser: ParserInterface): Seq[(String, String => LogicalPlan)] = { val _ = parser; Nil }
}
