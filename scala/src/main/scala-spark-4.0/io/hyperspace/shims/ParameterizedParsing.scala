package io.hyperspace.shims

import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Spark 4.0 binds `spark.sql(text, args)` parameters after parsing (the parser sees the text
 * alone), so nothing is added on this line; 4.1+ hands them to `parsePlanWithParameters`.
 */
trait ParameterizedParsing extends ParserInterface {
  protected def delegate: ParserInterface
  protected def ownStatement(sqlText: String): Option[LogicalPlan]
}
