package io.hyperspace.expressions

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BinaryComparison, BindReferences, BoundReference, Expression, GenericInternalRow, In, JoinedRow, Literal, Predicate}
import org.apache.spark.sql.types.{BooleanType, ByteType, DataType, DateType, DayTimeIntervalType, DoubleType, FloatType, IntegerType, LongType, ShortType, TimestampNTZType, TimestampType, YearMonthIntervalType}

/**
 * A predicate evaluated by generated code that does not hold the constants it compares with:
 * they are read from a row of their own, so two lookups that differ only in their key compile
 * one class between them.
 *
 * Spark writes a number, date or timestamp constant into the generated source itself, and caches
 * compiled classes by their source: every new key of a point lookup compiled a class of its own,
 * about 5 ms of a ~55 ms split index lookup read in the driver (JFR samples,
 * benchmarks/results/h-19-shared-code.notes.md). A job pays that once per query on its driver too,
 * but a driver-side read is where a query's time is that small.
 *
 * Only the constants compared with (the operands of `=`, `<=>`, `<`, `<=`, `>`, `>=` and `IN`)
 * are moved: those operators generate the same code for any operand, while other expressions
 * may require a constant argument (the scale of `round`, a `LIKE` pattern) and read it while
 * generating their code.
 */
object SharedCodePredicate {

  /** `condition` over rows of `input`; the returned function is for one thread at a time. */
  def create(condition: Expression, input: Seq[Attribute]): InternalRow => Boolean = {
    val bound = BindReferences.bindReference(condition, input)
    val constants = ArrayBuffer.empty[Any]
    def operand(e: Expression): Expression = e match {
      case l @ Literal(value, dataType) if value != null && writtenIntoCode(dataType) =>
        constants += value
        BoundReference(input.size + constants.size - 1, l.dataType, nullable = false)
      case other => other
    }
    val parameterized = bound.transformUp {
      case c: BinaryComparison => c.withNewChildren(c.children.map(operand))
      case in: In => in.withNewChildren(in.children.map(operand))
    }
    val predicate = Predicate.create(parameterized)
    predicate.initialize(0)
    if (constants.isEmpty) predicate.eval
    else {
      val row = new JoinedRow(null, new GenericInternalRow(constants.toArray))
      r => predicate.eval(row.withLeft(r))
    }
  }

  /** Types whose constants Spark's `Literal` writes into generated source (others it references). */
  private def writtenIntoCode(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType |
        TimestampType | TimestampNTZType | _: YearMonthIntervalType | _: DayTimeIntervalType => true
    case _ => false
  }
}
