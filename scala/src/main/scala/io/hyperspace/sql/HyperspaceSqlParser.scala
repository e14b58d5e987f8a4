package io.hyperspace.sql

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{DataType, StructType}

import io.hyperspace.shims.ParameterizedParsing

/**
 * Spark's parser with Hyperspace's statements ([[HyperspaceStatements]]) in front: a statement
 * that is not Hyperspace's, and every other kind of text (expressions, identifiers, types,
 * parameterized statements), goes to `delegate` unchanged. Every entry point of Spark's
 * `ParserInterface` is handed on explicitly, none left to the interface's defaults.
 */
class HyperspaceSqlParser(protected val delegate: ParserInterface) extends ParameterizedParsing {

  override protected def ownStatement(sqlText: String): Option[LogicalPlan] =
    HyperspaceStatements.parse(sqlText, delegate.parseQuery, delegate.parsePlan)

  override def parsePlan(sqlText: String): LogicalPlan = ownStatement(sqlText).getOrElse(delegate.parsePlan(sqlText))

  override def parseExpression(sqlText: String): Expression = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String): TableIdentifier = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] = delegate.parseMultipartIdentifier(sqlText)
  override def parseQuery(sqlText: String): LogicalPlan = delegate.parseQuery(sqlText)
  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}
