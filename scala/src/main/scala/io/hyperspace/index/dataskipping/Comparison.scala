package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._

/** A comparison operator of a normalized comparison `target op literal`. */
sealed abstract class ComparisonOp(val sql: String) {
  /** The operator with its operands swapped: `lit < x` is `x > lit`. */
  def flip: ComparisonOp = this match {
    case ComparisonOp.Lt => ComparisonOp.Gt
    case ComparisonOp.Le => ComparisonOp.Ge
    case ComparisonOp.Gt => ComparisonOp.Lt
    case ComparisonOp.Ge => ComparisonOp.Le
    case other => other
  }

  /** Whether some value in `[lo, hi]` stands in this relation to `v` (NULL if any is NULL). */
  def onRange(lo: Expression, hi: Expression, v: Expression): Expression = this match {
    case ComparisonOp.Eq => And(LessThanOrEqual(lo, v), GreaterThanOrEqual(hi, v))
    case ComparisonOp.Lt => LessThan(lo, v)
    case ComparisonOp.Le => LessThanOrEqual(lo, v)
    case ComparisonOp.Gt => GreaterThan(hi, v)
    case ComparisonOp.Ge => GreaterThanOrEqual(hi, v)
  }
}

object ComparisonOp {
  case object Eq extends ComparisonOp("=")
  case object Lt extends ComparisonOp("<")
  case object Le extends ComparisonOp("<=")
  case object Gt extends ComparisonOp(">")
  case object Ge extends ComparisonOp(">=")
}

/**
 * A predicate leaf normalized to `f(target) op literal`, where `f` is the identity or a chain of
 * order-preserving casts ([[casts]], innermost first), so that a condition over a sketch of
 * `target` applies the same `f` to the sketch's values: for a non-decreasing `f`, `x` in
 * `[min, max]` implies `f(x)` in `[f(min), f(max)]`.
 *
 * @param literal a non-null literal of the type of `f(target)`
 */
final case class Comparison(op: ComparisonOp, literal: Literal, casts: Seq[Cast]) {

  /** `f(column)`: the casts the predicate applies to the target, applied to a sketch column. */
  def over(column: Expression): Expression = casts.foldLeft(column)((e, c) => c.withNewChildren(Seq(e)))

  /**
   * The condition, over a file's smallest and largest non-null values, that some value in
   * between satisfies the comparison; NULL when the file has no non-null value.
   */
  def onRange(min: Expression, max: Expression): Expression = op.onRange(over(min), over(max), literal)
}

/**
 * A predicate leaf normalized to `f(target) op v` where `v` is not a literal but is constant
 * within each file: an expression over hive partition columns (`b = a` with `a` a partition
 * column), given as the same expression over the sketch table's partition value columns
 * ([[SketchInput.perFileValue]]). `f` is as in [[Comparison]].
 *
 * @param value the per-file value, over sketch table columns; NULL in a file where it is NULL
 */
final case class PerFileComparison(op: ComparisonOp, value: Expression, casts: Seq[Cast]) {

  /** `f(column)`: the casts the predicate applies to the target, applied to a sketch column. */
  def over(column: Expression): Expression = casts.foldLeft(column)((e, c) => c.withNewChildren(Seq(e)))

  /**
   * The condition, over a file's smallest and largest non-null values, that some value in
   * between satisfies the comparison with the file's value; NULL when the file has no non-null
   * value or its value is NULL (no row can then satisfy it).
   */
  def onRange(min: Expression, max: Expression): Expression = op.onRange(over(min), over(max), value)
}
