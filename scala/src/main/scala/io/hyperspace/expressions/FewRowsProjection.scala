package io.hyperspace.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, InterpretedUnsafeProjection, UnsafeProjection, UnsafeRow}

/**
 * An `UnsafeProjection` for the rows of a read in the driver, whose counts run from a lookup's few
 * rows to a range's hundreds of thousands: Spark's interpreted projection for the first
 * [[FewRowsProjection.CompileAfter]] rows, then Spark's generated code.
 *
 * Generating a projection's code costs the same for one row as for a million: ~1.1–1.7 ms for
 * the 16 columns of TPC-H lineitem, where the interpreted projection is built in ~0.03–0.08 ms and
 * converts a row in ~0.6 µs against the generated code's ~0.37 µs (20,000 rows, load 1.7–2.3,
 * 2026-11-28; benchmarks/results/archive/h-18-floor.notes.md). A `SELECT *` lookup's four rows paid the
 * generation in full on every query — a seventh of its read in the driver. Past a few thousand
 * rows the generated code has paid for itself, so from there on it is the one used.
 *
 * Projections with a nondeterministic expression are generated at once: handing over to a second
 * projection would start its random sequence (or row counter) again. For one thread at a time.
 */
final class FewRowsProjection private (exprs: Seq[Expression]) extends (InternalRow => UnsafeRow) {

  private val interpreted = InterpretedUnsafeProjection.createProjection(exprs)
  private var generated: UnsafeProjection = _
  private var rows = 0

  override def apply(row: InternalRow): UnsafeRow =
    if (generated ne null) generated(row)
    else if (rows < FewRowsProjection.CompileAfter) {
      rows += 1
      interpreted(row)
    } else {
      generated = UnsafeProjection.create(exprs)
      generated(row)
    }
}

object FewRowsProjection {

  /** The rows converted by the interpreted projection before the code is generated. */
  val CompileAfter = 4096

  /** `exprs` evaluated over rows of `input`, as rows of their own (reused: copy a row to keep it). */
  def create(exprs: Seq[Expression], input: Seq[Attribute]): InternalRow => UnsafeRow = {
    val bound = BindReferences.bindReferences(exprs, input)
    if (bound.forall(_.deterministic)) new FewRowsProjection(bound)
    else {
      val projection = UnsafeProjection.create(bound)
      projection.initialize(0)
      row => projection(row)
    }
  }
}
