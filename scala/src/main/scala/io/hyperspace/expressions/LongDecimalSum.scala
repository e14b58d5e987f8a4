package io.hyperspace.expressions

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, BinaryExpression, Expression, If, IsNotNull, IsNull, Literal, MakeDecimal, Multiply, Or, UnscaledValue}
import org.apache.spark.sql.catalyst.expressions.aggregate.{DeclarativeAggregate, Sum}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.types.{DataType, DecimalType, LongType}

/** `left + right` of two longs; null when either is null or the sum does not fit a long. */
case class LongAddOrNull(left: Expression, right: Expression) extends BinaryExpression {
  override def dataType: DataType = LongType
  override def nullable: Boolean = true

  override protected def nullSafeEval(l: Any, r: Any): Any = {
    val (a, b) = (l.asInstanceOf[Long], r.asInstanceOf[Long])
    val s = a + b
    // Two's complement overflow: both operands' signs differ from the result's.
    if (((a ^ s) & (b ^ s)) < 0) null else s
  }

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val (l, r) = (left.genCode(ctx), right.genCode(ctx))
    ev.copy(code = code"""
      ${l.code}
      boolean ${ev.isNull} = true;
      long ${ev.value} = -1L;
      if (!${l.isNull}) {
        ${r.code}
        if (!${r.isNull}) {
          ${ev.value} = ${l.value} + ${r.value};
          ${ev.isNull} = ((${l.value} ^ ${ev.value}) & (${r.value} ^ ${ev.value})) < 0;
        }
      }""")
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): LongAddOrNull =
    copy(left = newLeft, right = newRight)
}

/** `left * right` of two longs; null when either is null or the product does not fit a long. */
case class LongMultiplyOrNull(left: Expression, right: Expression) extends BinaryExpression {
  override def dataType: DataType = LongType
  override def nullable: Boolean = true

  override protected def nullSafeEval(l: Any, r: Any): Any =
    try Math.multiplyExact(l.asInstanceOf[Long], r.asInstanceOf[Long])
    catch { case _: ArithmeticException => null }

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val (l, r) = (left.genCode(ctx), right.genCode(ctx))
    // Math.multiplyExact's own test, without an exception to catch.
    ev.copy(code = code"""
      ${l.code}
      boolean ${ev.isNull} = true;
      long ${ev.value} = -1L;
      if (!${l.isNull}) {
        ${r.code}
        if (!${r.isNull}) {
          long a = ${l.value};
          long b = ${r.value};
          ${ev.value} = a * b;
          ${ev.isNull} = ((Math.abs(a) | Math.abs(b)) >>> 31 != 0) &&
            ((b != 0 && ${ev.value} / b != a) || (a == Long.MIN_VALUE && b == -1));
        }
      }""")
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): LongMultiplyOrNull =
    copy(left = newLeft, right = newRight)
}

/**
 * A decimal expression's value as an unscaled long of its own scale, and whether the expression is
 * null, both without evaluating it: for a DECIMAL of at most 18 digits its unscaled value; for a
 * product of two such whose type is their exact product (scale the sum of theirs, precision the sum
 * of theirs plus one, so Spark neither rounds nor can overflow it) the product of their unscaled
 * values, null when that does not fit a long.
 */
object UnscaledLong {
  def unapply(e: Expression): Option[(Expression, Expression)] = e.dataType match {
    case d: DecimalType if d.precision <= 18 => Some((UnscaledValue(e), IsNull(e)))
    case d: DecimalType =>
      e match {
        case m: Multiply =>
          (m.left.dataType, m.right.dataType) match {
            case (a: DecimalType, b: DecimalType)
                if a.precision <= 18 && b.precision <= 18 && d.scale == a.scale + b.scale &&
                  d.precision == a.precision + b.precision + 1 =>
              Some((LongMultiplyOrNull(UnscaledValue(m.left), UnscaledValue(m.right)),
                  Or(IsNull(m.left), IsNull(m.right))))
            case _ => None
          }
        case _ => None
      }
    case _ => None
  }
}

/**
 * Spark's `sum` of a DECIMAL(p, s) with 9 <= p <= 18 (or of an exact product of two such:
 * [[UnscaledLong]]), with the same result, nulls and overflow (null, or an error in ANSI mode) as
 * `sum` itself, computed on the values' unscaled longs while they and the running sum fit a long.
 *
 * Spark's buffer for such a sum is a DECIMAL(p + 10, s), wider than 18 digits, which a hash
 * aggregate keeps as bytes in an UnsafeRow: every row decodes it into a BigInteger, adds, checks
 * the precision and encodes it back (the largest CPU share of a grouped join aggregate in the
 * TPC-H benchmark); a product of decimals is a BigDecimal multiplication per row. Spark's own
 * `DecimalAggregates` sums unscaled longs only for p <= 8, where no long can overflow; here a long
 * add or product that would overflow is detected instead.
 *
 * Why it is exact: the buffer is Spark's (`sum`, `isEmpty`, the same attributes and expressions)
 * plus `lsum`. While `lsum` is not null it holds the running sum and `sum` is null (no bytes to
 * decode); Spark's buffer would hold the same value, which cannot overflow DECIMAL(p + 10, s)
 * since |lsum| < 2^63 < 10^19 <= 10^(p + 10), so Spark would not have nulled it either. The first
 * row or add that does not fit a long (in an update or a merge) nulls `lsum` for good and from then on
 * `sum` is exactly Spark's buffer: Spark's own update, merge and final expressions run on the
 * value the long held, with Spark's precision checks on every store and at the end.
 */
case class LongDecimalSum(sum: Sum) extends DeclarativeAggregate {
  require(LongDecimalSum.applies(sum), s"not a sum of a decimal of 9 to 18 digits or their product: $sum")

  private lazy val resultType = sum.dataType.asInstanceOf[DecimalType]
  private lazy val lsum = AttributeReference("lsum", LongType)()
  private lazy val lsumInput = lsum.newInstance()
  private lazy val sparkSum = sum.aggBufferAttributes.head
  private lazy val sparkSumInput = sum.inputAggBufferAttributes.head

  override def children: Seq[Expression] = sum.child :: Nil
  override def nullable: Boolean = true
  override def dataType: DataType = sum.dataType
  override def prettyName: String = "sum"
  override def sql(isDistinct: Boolean): String = sum.sql(isDistinct)
  override def toString: String = s"sum(${sum.child})"

  override lazy val aggBufferAttributes: Seq[AttributeReference] = lsum +: sum.aggBufferAttributes
  override lazy val inputAggBufferAttributes: Seq[AttributeReference] = lsumInput +: sum.inputAggBufferAttributes

  /** The value Spark's `sum` buffer would hold (bottom-up: the replacement holds the attribute again). */
  private def sparkValue(l: AttributeReference, s: AttributeReference): Expression =
    If(IsNotNull(l), MakeDecimal(l, resultType.precision, resultType.scale, true), s)

  private def withSparkValues(e: Expression): Expression = e.transformUp {
    case a: AttributeReference if a.exprId == sparkSum.exprId => sparkValue(lsum, sparkSum)
    case a: AttributeReference if a.exprId == sparkSumInput.exprId => sparkValue(lsumInput, sparkSumInput)
  }

  private lazy val noDecimal = Literal.create(null, resultType)

  override lazy val initialValues: Seq[Expression] = Literal(0L) +: noDecimal +: sum.initialValues.tail

  override lazy val updateExpressions: Seq[Expression] = {
    val child = sum.child
    val UnscaledLong(unscaled, childIsNull) = child
    val added = LongAddOrNull(lsum, unscaled)
    val newLsum = if (child.nullable) If(childIsNull, lsum, added) else added
    val sparkUpdates = sum.updateExpressions
    // Spark's emptiness flag tests the child for null: the same test without computing a product.
    val emptiness = sparkUpdates.tail.map(_.transformUp {
      case IsNull(c) if c.semanticEquals(child) => childIsNull
    })
    newLsum +: If(IsNotNull(newLsum), noDecimal, withSparkValues(sparkUpdates.head)) +: emptiness
  }

  override lazy val mergeExpressions: Seq[Expression] = {
    val newLsum = LongAddOrNull(lsum, lsumInput)
    val sparkMerges = sum.mergeExpressions
    newLsum +: If(IsNotNull(newLsum), noDecimal, withSparkValues(sparkMerges.head)) +: sparkMerges.tail
  }

  override lazy val evaluateExpression: Expression = withSparkValues(sum.evaluateExpression)

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): LongDecimalSum =
    LongDecimalSum(sum.withNewChildren(newChildren).asInstanceOf[Sum])
}

object LongDecimalSum {

  /**
   * Whether `sum` is one this class computes: of a decimal with an unscaled long form
   * ([[UnscaledLong]]), with Spark's buffer of a decimal sum and an emptiness flag, and a result of
   * at least 19 digits, which any long fits (Spark sums decimals of up to 8 digits on longs itself).
   */
  def applies(sum: Sum): Boolean = sum.dataType match {
    case d: DecimalType =>
      d.precision >= 19 && sum.aggBufferAttributes.size == 2 && UnscaledLong.unapply(sum.child).isDefined
    case _ => false
  }
}
