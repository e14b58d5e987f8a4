package io.hyperspace.sql

import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.parser.{NamedParameterContext, ParserInterface, PositionalParameterContext}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * The parser's entry points that take parameters (Spark 4.1+: `spark.sql(text, args)` and
 * `EXECUTE IMMEDIATE ... USING` parse through `parsePlanWithParameters`), by name, with a named
 * and a positional binding: a statement with markers of the other kind fails alike in both parsers.
 */
object ParameterizedEntryPoints {
  def of(parser: ParserInterface): Seq[(String, String => LogicalPlan)] = Seq(
    "parsePlanWithParameters(named)" ->
      (sql => parser.parsePlanWithParameters(sql, NamedParameterContext(Map("p" -> Literal(1), "x" -> Literal("a"))))),
    "parsePlanWithParameters(positional)" ->
      (sql => parser.parsePlanWithParameters(sql, PositionalParameterContext(Seq(Literal(1), Literal("a"))))))
}
