package io.hyperspace.shims

import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * From Spark 4.1, `spark.sql(text, args)` and `EXECUTE IMMEDIATE ... USING` parse through
 * `parsePlanWithParameters`, whose default drops the parameters and calls `parsePlan`. A parser
 * that wraps Spark's must hand them on, or Spark's own parameterized SQL fails or binds nothing.
 */
trait ParameterizedParsing extends ParserInterface {
  protected def delegate: ParserInterface

  /** The plan of a statement that is not Spark's, None for Spark's. */
  protected def ownStatement(sqlText: String): Option[LogicalPlan]

  override def parsePlanWithParameters(sqlText: String, parameterContext: ParameterContext): LogicalPlan =
    ownStatement(sqlText).getOrElse(delegate.parsePlanWithParameters(sqlText, parameterContext))
}
