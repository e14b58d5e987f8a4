package com.example.sketches

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{Max, Min}
import org.apache.spark.sql.types.{DataType, StringType}

import io.hyperspace.index.dataskipping.{Sketch, SketchInput, SketchPredicates}

/**
 * A user-defined sketch, outside the library: the shortest and longest string per file.
 * Serves `length(expr) <op> n` and `expr = 'literal'` / `IN` (a value's length must be in range).
 */
case class LengthRangeSketch(expr: String) extends Sketch {
  override def columnNames: Seq[String] = Seq("minLen", "maxLen")

  override def unsupportedType(t: DataType): Option[String] =
    if (t == StringType) None else Some(s"it needs a string, not ${t.simpleString}")

  override def aggregates(value: Expression): Seq[Expression] =
    Seq(Min(Length(value)), Max(Length(value)))

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] = {
    val (lo, hi) = (input.column(0), input.column(1))
    SketchPredicates.comparison(predicate, Length(input.value)).map(_.onRange(lo, hi))
      .orElse(input.equalityValues(predicate).map { values =>
        values.map { v =>
          val n = Literal(Length(v).eval())
          And(LessThanOrEqual(lo, n), GreaterThanOrEqual(hi, n)): Expression
        }.foldLeft(Literal.FalseLiteral: Expression)(Or)
      })
  }
}
