package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types.{DataType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Pattern helpers sketches use to recognize predicate leaves over their expression. Each
 * returns None for a shape it does not know, which a sketch turns into "cannot tell".
 */
object SketchPredicates {

  /** The value of a deterministic foldable expression (a literal after constant folding). */
  def literalOf(e: Expression): Option[Literal] = e match {
    case l: Literal => Some(l)
    case _ if e.foldable && e.deterministic =>
      scala.util.Try(Literal(e.eval(), e.dataType)).toOption
    case _ => None
  }

  /**
   * `p` as `f(target) op literal` with `f` the identity or an order-preserving cast; literal on
   * either side. `<=>` with a non-null literal counts as `=`. None for other shapes and for NULL
   * literals (a comparison with NULL is never TRUE; the translator handles that on its own).
   */
  def comparison(p: Expression, target: Expression): Option[Comparison] = {
    def build(op: ComparisonOp, t: Expression, l: Expression, flipped: Boolean) =
      for (casts <- castChain(t, target, Casts.orderPreserving); lit <- literalOf(l) if lit.value != null)
        yield Comparison(if (flipped) op.flip else op, lit, casts)
    comparisonOp(p, nullSafe = true).flatMap { o =>
      val b = p.asInstanceOf[BinaryComparison]
      build(o, b.left, b.right, flipped = false).orElse(build(o, b.right, b.left, flipped = true))
    }
  }

  /** The order a binary comparison `p` tests; `<=>` counts as `=` only when `nullSafe`. */
  private def comparisonOp(p: Expression, nullSafe: Boolean): Option[ComparisonOp] = p match {
    case _: EqualTo => Some(ComparisonOp.Eq)
    case _: EqualNullSafe if nullSafe => Some(ComparisonOp.Eq)
    case _: LessThan => Some(ComparisonOp.Lt)
    case _: LessThanOrEqual => Some(ComparisonOp.Le)
    case _: GreaterThan => Some(ComparisonOp.Gt)
    case _: GreaterThanOrEqual => Some(ComparisonOp.Ge)
    case _ => None
  }

  /**
   * `p` as `f(target) op v` with `f` as in [[comparison]] and `v` an expression `perFile` turns
   * into a per-file value (see [[PerFileComparison]]), on either side. Not for `<=>`: it is
   * TRUE on NULL rows when `v` is NULL, which a range of non-null values cannot tell.
   */
  def perFileComparison(
      p: Expression,
      target: Expression,
      perFile: Expression => Option[Expression]): Option[PerFileComparison] = {
    def build(op: ComparisonOp, t: Expression, v: Expression, flipped: Boolean) =
      for (casts <- castChain(t, target, Casts.orderPreserving); value <- perFile(v))
        yield PerFileComparison(if (flipped) op.flip else op, value, casts)
    comparisonOp(p, nullSafe = false).flatMap { o =>
      val b = p.asInstanceOf[BinaryComparison]
      build(o, b.left, b.right, flipped = false).orElse(build(o, b.right, b.left, flipped = true))
    }
  }

  /**
   * For `target = v`, `target IN (v1, ...)` (also through injective casts such as int to
   * bigint): the values of target's own type a row must have to satisfy `p`, NULLs and values
   * the cast can never produce left out. Empty means no row can satisfy `p`.
   */
  def equalityValues(p: Expression, target: Expression): Option[Seq[Literal]] = {
    def side(e: Expression): Option[Seq[Cast]] = castChain(e, target, Casts.injective)
    // The target's value that the casts turn into `l`, outermost cast first.
    def back(casts: Seq[Cast], lits: Seq[Literal]): Seq[Literal] =
      lits.filter(_.value != null).flatMap { l =>
        casts.foldRight(Option(l))((c, acc) => acc.flatMap(Casts.preimage(c, _)))
      }
    p match {
      case In(v, list) =>
        for (casts <- side(v); lits <- sequence(list.map(literalOf))) yield back(casts, lits)
      case InSet(v, hset) =>
        side(v).map(casts => back(casts, hset.toSeq.map(x => Literal(x, v.dataType))))
      case _ =>
        comparison(p, target).filter(_.op == ComparisonOp.Eq).flatMap { c =>
          if (c.casts.forall(cast => Casts.injective(cast.child.dataType, cast.dataType))) {
            Some(back(c.casts, Seq(c.literal)))
          } else None
        }
    }
  }

  /**
   * The casts (innermost first) that turn `target` into `e`, when `e` is `target` under a chain
   * of casts each satisfying `ok(from, to)`.
   */
  def castChain(e: Expression, target: Expression, ok: (DataType, DataType) => Boolean): Option[Seq[Cast]] =
    e match {
      case _ if e.semanticEquals(target) => Some(Nil)
      case c: Cast if ok(c.child.dataType, c.dataType) => castChain(c.child, target, ok).map(_ :+ c)
      case _ => None
    }

  /**
   * Whether `e` is NULL on every row where `target` is: `target` itself, a null-intolerant
   * operator over such an input (`target > 5`, `lower(target) = 'x'`, `target LIKE ...`), or
   * `IN` over one. Such a predicate is never TRUE in a file where `target` is always NULL.
   */
  def nullWhenNull(e: Expression, target: Expression): Boolean = e match {
    case _ if e.semanticEquals(target) => true
    case In(v, _) => nullWhenNull(v, target)
    case InSet(v, _) => nullWhenNull(v, target)
    case _ => e.nullIntolerant && e.children.exists(nullWhenNull(_, target))
  }

  /**
   * The literal start every matching string must have: `startswith(target, 'ab')`,
   * `target LIKE 'ab%c'`. None when there is none (or it is empty).
   */
  def stringPrefix(p: Expression, target: Expression): Option[UTF8String] = p match {
    case StartsWith(t, r) if t.semanticEquals(target) => literalString(r).filter(_.numBytes > 0)
    case Like(t, r, escape) if t.semanticEquals(target) =>
      literalString(r).flatMap(pat => LikePattern(pat.toString, escape).prefix).map(UTF8String.fromString)
    case _ => None
  }

  /**
   * The literal end every matching string must have: `endswith(target, 'yz')`,
   * `target LIKE '%yz'`. None when there is none (or it is empty).
   */
  def stringSuffix(p: Expression, target: Expression): Option[UTF8String] = p match {
    case EndsWith(t, r) if t.semanticEquals(target) => literalString(r).filter(_.numBytes > 0)
    case Like(t, r, escape) if t.semanticEquals(target) =>
      literalString(r).flatMap(pat => LikePattern(pat.toString, escape).suffix).map(UTF8String.fromString)
    case _ => None
  }

  private def literalString(e: Expression): Option[UTF8String] =
    literalOf(e).collect { case Literal(s: UTF8String, _: StringType) => s }

  private def sequence[A](xs: Seq[Option[A]]): Option[Seq[A]] =
    if (xs.forall(_.isDefined)) Some(xs.map(_.get)) else None
}
