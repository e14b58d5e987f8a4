package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.shims.Casting

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

/**
 * The literal start and end of a SQL LIKE pattern (`%` any string, `_` any one character,
 * `escape` makes the next character literal), e.g. `ab%c_d` has prefix `ab` and suffix `d`.
 * A pattern without wildcards is its own prefix and suffix.
 */
final case class LikePattern(pattern: String, escape: Char) {
  // (character, isWildcard) per code point.
  private lazy val tokens: Seq[(String, Boolean)] = {
    val out = Seq.newBuilder[(String, Boolean)]
    val cps = pattern.codePoints().toArray
    var i = 0
    while (i < cps.length) {
      val c = cps(i)
      if (c == escape && i + 1 < cps.length) {
        out += ((new String(Character.toChars(cps(i + 1))), false))
        i += 2
      } else {
        out += ((new String(Character.toChars(c)), c == '%' || c == '_'))
        i += 1
      }
    }
    out.result()
  }

  /** The literal text before the first wildcard, if not empty. */
  def prefix: Option[String] =
    Some(tokens.takeWhile(!_._2).map(_._1).mkString).filter(_.nonEmpty)

  /** The literal text after the last wildcard, if not empty. */
  def suffix: Option[String] =
    Some(tokens.reverse.takeWhile(!_._2).reverse.map(_._1).mkString).filter(_.nonEmpty)
}

/** Which casts preserve order (and equality) of the values they convert. */
object Casts {
  private def integralDigits(t: DataType): Option[Int] = t match {
    case ByteType => Some(3)
    case ShortType => Some(5)
    case IntegerType => Some(10)
    case LongType => Some(20)
    case _ => None
  }

  private val integralRank: Map[DataType, Int] =
    Map(ByteType -> 1, ShortType -> 2, IntegerType -> 3, LongType -> 4)

  /** Whether `cast(x as to)` is injective and non-decreasing for every non-null `x` of `from`. */
  def injective(from: DataType, to: DataType): Boolean = (from, to) match {
    case (a, b) if a == b => true
    case (a, b) if integralRank.contains(a) && integralRank.contains(b) => integralRank(a) < integralRank(b)
    case (a, d: DecimalType) if integralDigits(a).isDefined => d.precision - d.scale >= integralDigits(a).get
    case (ByteType | ShortType, FloatType) => true
    case (ByteType | ShortType | IntegerType, DoubleType) => true
    case (FloatType, DoubleType) => true
    case (DateType, TimestampType | TimestampNTZType) => true
    case (a: DecimalType, b: DecimalType) => b.scale >= a.scale && b.precision - b.scale >= a.precision - a.scale
    case _ => false
  }

  /**
   * Whether `cast(x as to)` is non-decreasing for every non-null `x` of `from` (never wrapping
   * around or failing): equal values may merge (bigint to double), order never inverts.
   */
  def orderPreserving(from: DataType, to: DataType): Boolean = injective(from, to) ||
    ((from, to) match {
      case (ByteType | ShortType | IntegerType | LongType | _: DecimalType | FloatType, FloatType | DoubleType) => true
      case _ => false
    })

  /**
   * The value `u` of the cast's input type with `cast(u) = lit`, if there is one; for an
   * injective cast there is at most one.
   */
  def preimage(cast: Cast, lit: Literal): Option[Literal] = {
    val from = cast.child.dataType
    val tz = cast.timeZoneId
    val u = scala.util.Try(Casting.tryCast(lit, from, tz).eval()).toOption.flatMap(Option(_))
    u.map(Literal(_, from)).filter { candidate =>
      val roundTrip = cast.withNewChildren(Seq(candidate)).eval()
      roundTrip != null && EqualTo(Literal(roundTrip, cast.dataType), lit).eval() == true
    }
  }
}

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
