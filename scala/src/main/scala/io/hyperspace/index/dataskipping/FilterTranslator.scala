package io.hyperspace.index.dataskipping

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types.BooleanType

/**
 * Turns a query filter over source columns into a condition over the sketch table that is TRUE
 * for every file in which the filter may be TRUE for some row (Extensible Data Skipping's
 * "clause represents expression"). Files where the condition is FALSE can be skipped.
 *
 * Three-valued logic: a WHERE clause keeps a row only when the filter is TRUE, so a file may be
 * skipped only when the filter is certainly not TRUE (FALSE or NULL) on all its rows. Negations
 * are first pushed to the leaves with rules that hold in three-valued logic (De Morgan;
 * `NOT (a > 5)` is `a <= 5`, both NULL for a NULL `a`). Then, per node:
 *  - every sketch may translate the node as a whole (a value list evaluates `a > 1 AND a < 3`
 *    on each value, more precisely than the two halves apart);
 *  - `AND` combines the children's conditions with AND (either one alone is also valid);
 *  - `OR` needs a condition for both children, else nothing is known;
 *  - a leaf that can never be TRUE (a comparison with NULL, `NOT IN` a list holding NULL,
 *    FALSE) gives FALSE.
 * All conditions found for a node are ANDed: each is necessary on its own. A sketch's NULL
 * result counts as TRUE, so unknowns keep files; a sketch that throws or returns a condition
 * over something other than its columns is ignored (and logged).
 */
object FilterTranslator extends Logging {

  /** A sketch with its query-time inputs. */
  final case class Bound(sketch: Sketch, input: SketchInput)

  /** The condition for `filter`, or None if no sketch can tell anything about it. */
  def translate(filter: Expression, sketches: Seq[Bound]): Option[Expression] =
    translateNode(pushNegations(filter, negate = false), sketches)

  /**
   * `e` (or `NOT e` when `negate`) with negations moved down to the leaves, equivalent in
   * three-valued logic.
   */
  def pushNegations(e: Expression, negate: Boolean): Expression = e match {
    // BETWEEN, ILIKE, ... are analyzed into expressions the optimizer replaces; use the replacement.
    case r: RuntimeReplaceable => pushNegations(r.replacement, negate)
    // ... some into `With` (a common subexpression evaluated once); sketches need it inlined.
    case w: With => pushNegations(inline(w), negate)
    case Not(child) => pushNegations(child, !negate)
    case And(l, r) if negate => Or(pushNegations(l, negate = true), pushNegations(r, negate = true))
    case Or(l, r) if negate => And(pushNegations(l, negate = true), pushNegations(r, negate = true))
    case And(l, r) => And(pushNegations(l, negate = false), pushNegations(r, negate = false))
    case Or(l, r) => Or(pushNegations(l, negate = false), pushNegations(r, negate = false))
    case _ if !negate => e
    case LessThan(l, r) => GreaterThanOrEqual(l, r)
    case LessThanOrEqual(l, r) => GreaterThan(l, r)
    case GreaterThan(l, r) => LessThanOrEqual(l, r)
    case GreaterThanOrEqual(l, r) => LessThan(l, r)
    case IsNull(c) => IsNotNull(c)
    case IsNotNull(c) => IsNull(c)
    case Literal(b: Boolean, BooleanType) => Literal(!b)
    case _ => Not(e)
  }

  private def inline(w: With): Expression = {
    val defs = w.defs.map(d => d.id -> d.child).toMap
    w.child.transformUp { case ref: CommonExpressionRef if defs.contains(ref.id) => defs(ref.id) }
  }

  private def translateNode(e: Expression, sketches: Seq[Bound]): Option[Expression] = {
    val structural: Option[Expression] = e match {
      case And(l, r) =>
        (translateNode(l, sketches) ++ translateNode(r, sketches)).reduceOption(And)
      case Or(l, r) =>
        for (a <- translateNode(l, sketches); b <- translateNode(r, sketches)) yield Or(a, b)
      case _ if neverTrue(e) => Some(Literal.FalseLiteral)
      case _ => None
    }
    val whole = sketches.flatMap(b => ask(b, e))
    (structural.toSeq ++ whole).reduceOption(And)
  }

  // A leaf that no row can make TRUE.
  private def neverTrue(e: Expression): Boolean = e match {
    case Literal(false, BooleanType) | Literal(null, _) => true
    case Not(In(_, list)) => list.exists(x => x.foldable && SketchPredicates.literalOf(x).exists(_.value == null))
    case Not(InSet(_, hset)) => hset.contains(null)
    case In(_, list) => list.isEmpty
    case _: And | _: Or | _: Not => false
    case _ if e.nullIntolerant =>
      e.children.exists(c => c.foldable && SketchPredicates.literalOf(c).exists(_.value == null))
    case _ => false
  }

  private def ask(bound: Bound, e: Expression): Option[Expression] = {
    val result = try bound.sketch.translate(e, bound.input)
    catch {
      case NonFatal(t) =>
        logWarning(s"Sketch ${bound.sketch.describe} failed to translate $e; keeping files.", t)
        None
    }
    result.flatMap { c =>
      val allowed = AttributeSet(bound.input.columns ++ bound.input.partitionValues.values :+ bound.input.rowCount)
      val foreign = c.exists {
        case a: Attribute => !allowed.contains(a)
        case _ => false
      }
      if (c.dataType != BooleanType || foreign || !c.resolved) {
        logWarning(s"Sketch ${bound.sketch.describe} translated $e into $c, which is not a boolean " +
          "condition over its own columns; ignoring it.")
        None
      } else Some(Coalesce(Seq(c, Literal.TrueLiteral)))
    }
  }
}
