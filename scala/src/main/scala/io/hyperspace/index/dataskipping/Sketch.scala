package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.DataType

/**
 * A data skipping sketch: a small summary of one expression's values in each source file, and
 * the rule that turns a query predicate over that expression into a condition over the summary.
 *
 * A sketch has two halves:
 *  - build time: [[aggregates]] returns one aggregate per sketch column; the index evaluates them
 *    over the rows of each source file, giving the file's row in the sketch table.
 *  - query time: [[translate]] maps one predicate over the sketch's expression to a condition
 *    over the sketch columns that is TRUE for every file in which the predicate may be TRUE for
 *    some row. The condition may be TRUE for files without such rows (they are read in vain) but
 *    must never be FALSE for a file that has one. `None` means "cannot tell": the file is kept.
 *
 * The expression is SQL text over the source's columns (`"a"`, `"lower(email)"`, `"year(ts)"`, a
 * registered UDF); it is resolved against the source, and must be deterministic. A query filter
 * uses the sketch when it contains an expression semantically equal to it.
 *
 * User sketches are regular classes outside this package. The index log stores a sketch as its
 * [[kind]] (the class name unless overridden), [[expr]] and [[params]]; reading the log back
 * constructs the class with a public constructor taking `(String)` when it has no params, or
 * `(String, Map[String, String])`. See docs/data-skipping.md for a complete example.
 */
abstract class Sketch extends Serializable {

  /** The SQL text of the summarized expression: a column name or a deterministic expression. */
  def expr: String

  /** The name the index log stores for this sketch: built-ins use short names, others their class name. */
  def kind: String = getClass.getName

  /** Parameters other than [[expr]], as text, as written to the index log. */
  def params: Map[String, String] = Map.empty

  /**
   * Names of the sketch's columns, one per aggregate: short identifiers (letters, digits, `_`).
   * The sketch table qualifies them with the sketch's position in the index.
   */
  def columnNames: Seq[String]

  /** Why values of `dataType` cannot be summarized by this sketch, or None if they can. */
  def unsupportedType(dataType: DataType): Option[String]

  /**
   * Why this sketch cannot summarize the resolved expression `value` of `source`, beyond its
   * type, or None (the default) if it can. The partition sketch uses it to accept partition
   * columns only.
   */
  def unsupportedSource(value: Expression, source: LogicalPlan): Option[String] = None

  /**
   * The build-time aggregates over `value` (the resolved expression, evaluated per source row),
   * one per entry of [[columnNames]], in order. Bare aggregate functions (`Min(value)`) and
   * expressions over them are both accepted.
   */
  def aggregates(value: Expression): Seq[Expression]

  /**
   * A condition over the sketch columns (`input.columns`) that is TRUE whenever `predicate` may be
   * TRUE for some row of the file; None when this sketch cannot tell. `predicate` is a boolean
   * node of the query filter with negations already pushed down to its leaves (no `Not` above an
   * `And`/`Or`); the translator offers each `And`/`Or` node as a whole and then its children.
   * A NULL result is treated as TRUE (the file is kept).
   */
  def translate(predicate: Expression, input: SketchInput): Option[Expression]

  /** A readable description, e.g. `MinMax(a)` or `BloomFilter(lower(email), fpp=0.01)`. */
  def describe: String = {
    val ps = params.toSeq.sortBy(_._1).map { case (k, v) => s", $k=$v" }.mkString
    s"$kind($expr$ps)"
  }

  override def toString: String = describe
}
