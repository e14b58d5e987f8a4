package org.apache.spark.sql.execution.hyperspace

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.BroadcastMode
import org.apache.spark.sql.types.{BinaryType, DataType}
import org.apache.spark.unsafe.Platform

/**
 * A broadcast of rows grouped by the partition each row hashes to (an indexed join's broadcast
 * probe side): built once where the broadcast is built, so that a task takes its partitions'
 * rows without hashing every broadcast row, and reads them one after another.
 *
 * The broadcast value is an array with one row per partition, whose one binary column holds that
 * partition's rows back to back, each an 8-byte length and the row's bytes (unsafe rows are
 * multiples of 8 bytes, so every row stays 8-byte aligned). Spark's broadcast exchange measures
 * and ships an array of unsafe rows as it is; a hashed relation keyed by partition number cost a
 * page of memory to build and a random read per row to walk its chains.
 */
object PartitionedBroadcast {

  /**
   * The broadcast mode grouping rows of `types` by `partitionId` (a `HashPartitioning`'s
   * `partitionIdExpression` over `numPartitions`, bound to the rows).
   */
  def mode(partitionId: Expression, numPartitions: Int, types: Seq[DataType]): BroadcastMode =
    RowsByPartition(partitionId, numPartitions, types)

  /**
   * The rows of one partition, read from `value` (the value of a broadcast in [[mode]]) as unsafe
   * rows of `numFields` fields; the returned iterator reuses one row object.
   */
  def reader(value: Any, numFields: Int): Int => Iterator[InternalRow] = {
    val packed = value.asInstanceOf[Array[InternalRow]]
    p => {
      val holder = packed(p).asInstanceOf[UnsafeRow]
      val offsetAndSize = holder.getLong(0)
      val base = holder.getBaseObject
      val start = holder.getBaseOffset + (offsetAndSize >>> 32)
      val end = start + offsetAndSize.toInt
      new Iterator[InternalRow] {
        private val row = new UnsafeRow(numFields)
        private var at = start
        override def hasNext: Boolean = at < end
        override def next(): InternalRow = {
          val size = Platform.getLong(base, at).toInt
          row.pointTo(base, at + 8, size)
          at += 8 + size
          row
        }
      }
    }
  }

  private case class RowsByPartition(partitionId: Expression, numPartitions: Int, types: Seq[DataType])
    extends BroadcastMode {

    override def transform(rows: Array[InternalRow]): Any = transform(rows.iterator, None)

    override def transform(rows: Iterator[InternalRow], sizeHint: Option[Long]): Any = {
      val partitionOf = UnsafeProjection.create(Seq(partitionId))
      lazy val toUnsafe = UnsafeProjection.create(types.toArray)
      val buffers = Array.fill(numPartitions)(new Bytes)
      rows.foreach { row =>
        val unsafe = row match {
          case u: UnsafeRow => u
          case other => toUnsafe(other)
        }
        buffers(partitionOf(unsafe).getInt(0)).append(unsafe)
      }
      val holder = UnsafeProjection.create(Array[DataType](BinaryType))
      buffers.map(b => holder(new GenericInternalRow(Array[Any](b.toArray))).copy(): InternalRow)
    }

    override def canonicalized: BroadcastMode = copy(partitionId = partitionId.canonicalized)
  }

  /** A growing byte buffer of length-prefixed rows. */
  private final class Bytes {
    private var bytes = new Array[Byte](64)
    private var length = 0

    def append(row: UnsafeRow): Unit = {
      val size = row.getSizeInBytes
      ensure(8 + size)
      Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + length, size.toLong)
      row.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET + length + 8)
      length += 8 + size
    }

    def toArray: Array[Byte] = java.util.Arrays.copyOf(bytes, length)

    private def ensure(more: Int): Unit = if (length + more > bytes.length) {
      val grown = math.max(bytes.length.toLong * 2, (length + more).toLong)
      require(grown <= Int.MaxValue - 16, "a broadcast partition's rows exceed 2 GB")
      bytes = java.util.Arrays.copyOf(bytes, grown.toInt)
    }
  }
}
