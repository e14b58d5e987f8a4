package io.hyperspace.expressions

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BinaryComparison, BindReferences, BoundReference, Expression, GenericInternalRow, In, InSet, JoinedRow, Literal, Predicate, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.types.{BooleanType, ByteType, DataType, DateType, DayTimeIntervalType, DoubleType, FloatType, IntegerType, LongType, ShortType, TimestampNTZType, TimestampType, YearMonthIntervalType}

/**
 * A predicate evaluated by generated code that does not hold the constants it compares with:
 * they are read from a row of their own, so two lookups that differ only in their key compile
 * one class between them.
 *
 * Spark writes a number, date or timestamp constant into the generated source itself, and caches
 * compiled classes by their source: every new key of a point lookup compiled a class of its own,
 * about 5 ms of a ~55 ms split index lookup read in the driver (JFR samples,
 * benchmarks/results/archive/h-19-shared-code.notes.md). A job pays that once per query on its driver too,
 * but a driver-side read is where a query's time is that small.
 *
 * Only the constants compared with (the operands of `=`, `<=>`, `<`, `<=`, `>`, `>=` and `IN`)
 * are moved: those operators generate the same code for any operand, while other expressions
 * may require a constant argument (the scale of `round`, a `LIKE` pattern) and read it while
 * generating their code. A long `IN` list, which Spark's optimizer turns into an `InSet`, is
 * tested against its set by reference ([[ReferencedInSet]]): for numbers of up to four bytes and
 * dates, `InSet` writes up to 400 values into a `switch` of its generated code.
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
      case InSet(child, values) if values.nonEmpty && switchedInCode(child.dataType) => ReferencedInSet(child, values)
    }
    val predicate = Predicate.create(parameterized)
    predicate.initialize(0)
    if (constants.isEmpty) predicate.eval
    else {
      val row = new JoinedRow(null, new GenericInternalRow(constants.toArray))
      r => predicate.eval(row.withLeft(r))
    }
  }

  /** Types whose `InSet` Spark generates as a `switch` over the values (others test a referenced set). */
  private def switchedInCode(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | DateType => true
    case _ => false
  }

  /** Types whose constants Spark's `Literal` writes into generated source (others it references). */
  private def writtenIntoCode(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType |
        TimestampType | TimestampNTZType | _: YearMonthIntervalType | _: DayTimeIntervalType => true
    case _ => false
  }
}

/**
 * `child IN values` (a non-empty set of byte, short, int or date values, NULL allowed), as Spark's
 * `InSet` evaluates it: NULL for a NULL `child`, true when the set holds it, else NULL if the set
 * holds NULL, else false. Its generated code reads the set from a reference, so it is the same for
 * any values.
 */
private[expressions] case class ReferencedInSet(child: Expression, values: Set[Any])
  extends UnaryExpression with Predicate {

  private val holdsNull = values.contains(null)

  override def nullable: Boolean = child.nullable || holdsNull

  override def eval(input: InternalRow): Any = child.eval(input) match {
    case null => null
    case v if values.contains(v) => true
    case _ => if (holdsNull) null else false
  }

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode =
    nullSafeCodeGen(ctx, ev,
      c => {
        // Named by the interface: the class of a Scala set depends on its size.
        val set = ctx.addReferenceObj("set", values, "scala.collection.immutable.Set")
        s"${ev.value} = $set.contains($c);" + (if (holdsNull) s"\n${ev.isNull} = !${ev.value};" else "")
      })

  override def toString: String = s"$child INSET (${values.size} values, by reference)"

  override protected def withNewChildInternal(newChild: Expression): ReferencedInSet = copy(child = newChild)
}
