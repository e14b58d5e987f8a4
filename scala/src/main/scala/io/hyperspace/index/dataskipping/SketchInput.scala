package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The query-time view of one sketch that [[Sketch.translate]] receives: the sketch's expression
 * resolved against the queried relation, and the sketch table's columns.
 *
 * @param value    the sketch's expression, bound to the attributes of the queried relation
 * @param columns  the sketch's columns in the sketch table, in [[Sketch.columnNames]] order
 * @param rowCount the sketch table column holding each file's number of rows
 */
final class SketchInput(
    val value: Expression,
    val columns: Seq[Attribute],
    val rowCount: Attribute,
    val partitionValues: AttributeMap[Attribute] = AttributeMap.empty) {

  /** The sketch column at position `i`. */
  def column(i: Int): Attribute = columns(i)

  /** Whether `e` is the sketch's expression (semantically, e.g. `A` vs `a` when case-insensitive). */
  def isValue(e: Expression): Boolean = e.semanticEquals(value)

  /** [[SketchPredicates.comparison]] on the sketch's expression. */
  def comparison(p: Expression): Option[Comparison] = SketchPredicates.comparison(p, value)

  /**
   * `e` as a value constant within each file, over the sketch table: when `e` depends on the row
   * only through hive partition columns (at least one) that the index has a partition sketch of
   * (`partitionValues`: each such column of the queried relation and its sketch table column),
   * is deterministic and can be evaluated outside the query, `e` with those columns replaced.
   */
  def perFileValue(e: Expression): Option[Expression] = {
    val refs = e.references
    if (refs.isEmpty || !refs.forall(partitionValues.contains) || !e.deterministic ||
      SubqueryExpression.hasSubquery(e) ||
      e.exists(x => x.isInstanceOf[Unevaluable] && !x.isInstanceOf[Attribute])) None
    else Some(e.transform { case a: Attribute => partitionValues(a) })
  }

  /** [[SketchPredicates.perFileComparison]] on the sketch's expression, with [[perFileValue]]. */
  def perFileComparison(p: Expression): Option[PerFileComparison] =
    SketchPredicates.perFileComparison(p, value, perFileValue)

  /** [[SketchPredicates.equalityValues]] on the sketch's expression. */
  def equalityValues(p: Expression): Option[Seq[Literal]] = SketchPredicates.equalityValues(p, value)

  /** [[SketchPredicates.nullWhenNull]] on the sketch's expression. */
  def nullWhenNull(p: Expression): Boolean = SketchPredicates.nullWhenNull(p, value)

  /** [[SketchPredicates.stringPrefix]] on the sketch's expression. */
  def stringPrefix(p: Expression): Option[UTF8String] = SketchPredicates.stringPrefix(p, value)

  /** [[SketchPredicates.stringSuffix]] on the sketch's expression. */
  def stringSuffix(p: Expression): Option[UTF8String] = SketchPredicates.stringSuffix(p, value)

  /**
   * `p` with every occurrence of the sketch's expression replaced by `replacement`, when `p`
   * depends on the source only through that expression (and at least once), is deterministic
   * and can be evaluated outside the query (no subqueries, no Python UDFs); else None. Lets a
   * sketch that keeps actual values (a value list, a partition value) evaluate any such
   * predicate on them.
   */
  def substitute(p: Expression, replacement: Expression): Option[Expression] = {
    // Attributes are the only unevaluable expressions that substitution removes.
    if (!p.deterministic || SubqueryExpression.hasSubquery(p) ||
      p.exists(e => e.isInstanceOf[Unevaluable] && !e.isInstanceOf[Attribute])) {
      return None
    }
    var found = false
    val replaced = p.transformDown {
      case e if e.semanticEquals(value) =>
        found = true
        replacement
    }
    val allowed = replacement.references
    val foreign = replaced.exists {
      case a: Attribute => !allowed.contains(a)
      case _ => false
    }
    if (found && !foreign) Some(replaced) else None
  }
}
