package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{Max, Min}
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types.DataType

/**
 * The smallest and largest non-null value of `expr` in each file, in Spark's own ordering
 * (strings in UTF-8 binary order, NaN above every other number), stored untruncated.
 *
 * Serves `=`, `<`, `<=`, `>`, `>=`, `<=>` (non-null literal), `BETWEEN`, `IN`, `!=`, `NOT IN`,
 * `IS NOT NULL` and, on strings, `startswith` / `LIKE 'abc%'`; also through order-preserving
 * casts (int to bigint, float to double, date to timestamp, ...). The compared value may also be an
 * expression over hive partition columns the index has partition sketches of (`b = a` with `a` a
 * partition column, `b IN (a, 3)`): each file is checked against its own partition value. Any
 * other predicate that is NULL whenever the expression is (`a + 1 > 5`) skips files where it is
 * always NULL.
 */
case class MinMaxSketch(expr: String) extends Sketch {
  override def kind: String = MinMaxSketch.Kind
  override def columnNames: Seq[String] = Seq("min", "max")
  override def unsupportedType(dataType: DataType): Option[String] = SketchTypes.requireOrderable(dataType)
  override def aggregates(value: Expression): Seq[Expression] = Seq(Min(value), Max(value))

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] = {
    val (min, max) = (input.column(0), input.column(1))
    def orFalse(e: Expression): Expression = Coalesce(Seq(e, Literal.FalseLiteral))
    val specific = predicate match {
      case IsNotNull(v) if input.isValue(v) => Some(IsNotNull(max))
      case Not(inner) if !inner.isInstanceOf[EqualNullSafe] =>
        // x != v is TRUE for some row unless every non-null value equals v (min = max = v).
        // Not for NOT (x <=> v): that is TRUE on NULL rows too, which min and max do not see.
        input.equalityValues(inner).map { values =>
          orFalse(Not(And(EqualTo(min, max), In(min, values))))
        }
      case In(v, list) if list.nonEmpty && !list.forall(_.foldable) =>
        // Some values are per-file (partition columns): one range check per value.
        val each = list.map { e =>
          val eq = EqualTo(v, e)
          input.comparison(eq).map(_.onRange(min, max)).orElse(input.perFileComparison(eq).map(_.onRange(min, max)))
        }
        if (each.forall(_.isDefined)) Some(orFalse(each.flatten.reduce(Or))) else None
      case _ =>
        input.comparison(predicate).map(c => orFalse(c.onRange(min, max)))
          .orElse(input.equalityValues(predicate).map(values => orFalse(inRange(values, min, max))))
          .orElse(input.perFileComparison(predicate).map(c => orFalse(c.onRange(min, max))))
          .orElse(input.stringPrefix(predicate).map { p =>
            // Every string starting with p is >= p, and its first |p| characters (equal to p)
            // are >= those of min, as truncation preserves the binary order.
            val n = Literal(p.numChars())
            orFalse(And(GreaterThanOrEqual(max, Literal(p)),
                LessThanOrEqual(Substring(min, Literal(1), n), Literal(p))))
          })
    }
    // Any other predicate that is NULL where the value is: some value must be non-null.
    specific.orElse(Some(IsNotNull(max)).filter(_ => input.nullWhenNull(predicate)))
  }

  private def inRange(values: Seq[Literal], min: Expression, max: Expression): Expression = {
    if (values.isEmpty) Literal.FalseLiteral
    else if (values.size <= MinMaxSketch.MaxRangesPerList) {
      values.map(v => And(LessThanOrEqual(min, v), GreaterThanOrEqual(max, v)): Expression).reduce(Or)
    } else {
      // A long IN list: one range from its smallest to its largest value keeps the condition small.
      val ordering = TypeUtils.getInterpretedOrdering(values.head.dataType)
      val sorted = values.sortBy(_.value)(ordering)
      And(LessThanOrEqual(min, sorted.last), GreaterThanOrEqual(max, sorted.head))
    }
  }
}

object MinMaxSketch {
  /** The kind name in the index log. */
  val Kind = "MinMax"
  /** IN lists up to this size are checked value by value; longer ones as one range. */
  val MaxRangesPerList = 64
}
