package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.Count
import org.apache.spark.sql.types.DataType

/**
 * The number of rows of each file where `expr` is NULL. With the file's row count (in every
 * sketch table row) it serves `IS NULL`, `<=> NULL` and `IS NOT NULL`, and skips files where
 * `expr` is always NULL for any predicate that is NULL when `expr` is (`expr > 5`,
 * `lower(expr) = 'x'`, `expr IN (...)`, `expr LIKE ...`).
 */
case class NullCountSketch(expr: String) extends Sketch {
  override def kind: String = NullCountSketch.Kind
  override def columnNames: Seq[String] = Seq("nulls")
  override def unsupportedType(dataType: DataType): Option[String] = None

  override def aggregates(value: Expression): Seq[Expression] =
    Seq(Subtract(Count(Seq(Literal(1))), Count(Seq(value))))

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] = {
    val (nulls, rows) = (input.column(0), input.rowCount)
    predicate match {
      case IsNull(v) if input.isValue(v) => Some(GreaterThan(nulls, Literal(0L)))
      case EqualNullSafe(v, n) if input.isValue(v) && isNull(n) => Some(GreaterThan(nulls, Literal(0L)))
      case EqualNullSafe(n, v) if input.isValue(v) && isNull(n) => Some(GreaterThan(nulls, Literal(0L)))
      case IsNotNull(v) if input.isValue(v) => Some(LessThan(nulls, rows))
      case _ if input.nullWhenNull(predicate) => Some(LessThan(nulls, rows))
      case _ => None
    }
  }

  private def isNull(e: Expression): Boolean = SketchPredicates.literalOf(e).exists(_.value == null)
}

object NullCountSketch {
  /** The kind name in the index log. */
  val Kind = "NullCount"
}
