package io.hyperspace.index.zorder

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types.{DataType, LongType}

/**
 * A row's position on the Z-order curve over `children`: each child's value is first turned into
 * its rank among `boundaries` (sorted, distinct values of the child's type, from a sample of the
 * data), so a skewed column spreads over the curve as evenly as a uniform one would — raw values
 * would leave most of the curve empty and put a hot range in one file. NULL ranks 0, below every
 * value (a NULL is never in a range, so NULL rows gather in the files a range skips). The ranks'
 * bits are then interleaved, most significant first, `bits` per child, into a non-negative long.
 */
case class ZOrderValue(children: Seq[Expression], boundaries: Seq[IndexedSeq[Any]], bits: Int)
  extends Expression with CodegenFallback {

  require(children.size == boundaries.size && children.nonEmpty && bits > 0 && bits * children.size <= 62,
    s"ZOrderValue over ${children.size} columns with $bits bits each")
  require(boundaries.forall(_.size < (1L << bits) - 1), "more boundaries than ranks")

  override def nullable: Boolean = false
  override def dataType: DataType = LongType

  @transient private lazy val orderings = children.map(c => TypeUtils.getInterpretedOrdering(c.dataType))

  /** The number of boundaries at or below `v`: 0 .. boundaries.size. */
  private def rankAmong(bounds: IndexedSeq[Any], v: Any, ordering: Ordering[Any]): Long = {
    var (lo, hi) = (0, bounds.size)
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (ordering.lteq(bounds(mid), v)) lo = mid + 1 else hi = mid
    }
    lo.toLong
  }

  override def eval(input: InternalRow): Any = {
    val ranks = new Array[Long](children.size)
    var i = 0
    while (i < children.size) {
      val v = children(i).eval(input)
      ranks(i) = if (v == null) 0L else 1L + rankAmong(boundaries(i), v, orderings(i))
      i += 1
    }
    var z = 0L
    var bit = bits - 1
    while (bit >= 0) {
      i = 0
      while (i < ranks.length) {
        z = (z << 1) | ((ranks(i) >>> bit) & 1L)
        i += 1
      }
      bit -= 1
    }
    z
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(children = newChildren)
}
