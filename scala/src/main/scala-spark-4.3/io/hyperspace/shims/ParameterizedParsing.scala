package io.hyperspace.shims

import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface, SqlStatementSplitResult, TemporalIdentifier}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * As on 4.1 and 4.2, `spark.sql(text, args)` and `EXECUTE IMMEDIATE ... USING` parse through
 * `parsePlanWithParameters`, whose default drops the parameters. Spark 4.3 adds two entry points a
 * wrapping parser must hand on as well: `splitStatements` (abstract: how a multi-statement text is
 * cut, which Spark's own parser does with its lexer and variable substitution) and
 * `parseTemporalTableIdentifier`, whose interface default reads only the name parts and fails on a
 * table name's time-travel suffix (`t@v3`, `t@<timestamp>`), which Spark's parser reads.
 */
trait ParameterizedParsing extends ParserInterface {
  protected def delegate: ParserInterface

  /** The plan of a statement that is not Spark's, None for Spark's. */
  protected def ownStatement(sqlText: String): Option[LogicalPlan]

  override def parsePlanWithParameters(sqlText: String, parameterContext: ParameterContext): LogicalPlan =
    ownStatement(sqlText).getOrElse(delegate.parsePlanWithParameters(sqlText, parameterContext))

  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)

  override def parseTemporalTableIdentifier(sqlText: String): TemporalIdentifier =
    delegate.parseTemporalTableIdentifier(sqlText)
}
