package io.hyperspace.index.dataskipping.expressions

import java.nio.ByteBuffer

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate
import org.apache.spark.sql.catalyst.trees.UnaryLike
import org.apache.spark.sql.catalyst.util.{GenericArrayData, TypeUtils}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The aggregate behind the value list and Bloom filter sketches: per group (one source file) it
 * returns `struct<values: array<T>, bloom: binary>` where exactly one field is set:
 *
 *  - `values`: the sorted distinct values (a null element if the file has nulls), when there are
 *    at most `maxValues` of them; `maxValues <= 0` never keeps a list.
 *  - `bloom`: otherwise a [[BloomFilterBits]] over the non-null values, sized for the group's
 *    own distinct count at false positive probability `fpp`, so small files get small filters.
 *
 * The buffer moves through three representations, each bounded: the distinct values (up to
 * `maxValues`), then their 64-bit hashes (up to [[DistinctSketchAggregate.HashLimit]], which
 * gives the exact distinct count), then a power-of-two bitmap sized for `bitmapCapacity`
 * values that is folded at the end to the size the estimated distinct count needs.
 */
case class DistinctSketchAggregate(
    child: Expression,
    maxValues: Int,
    fpp: Double,
    bitmapCapacity: Long,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0)
  extends TypedImperativeAggregate[DistinctSketchAggregate.State] with UnaryLike[Expression] {

  import DistinctSketchAggregate._

  private def valueType: DataType = child.dataType
  private def numHashes: Int = BloomFilterBits.optimalHashes(fpp)
  private def bitmapBits: Long =
    BloomFilterBits.powerOfTwoAtLeast(BloomFilterBits.optimalBits(math.max(bitmapCapacity, 4L * HashLimit), fpp))

  override def dataType: DataType = resultType(valueType)
  override def nullable: Boolean = false
  override def prettyName: String = "hs_distinct_sketch"

  override def createAggregationBuffer(): State = {
    val s = new State
    if (maxValues > 0) s.values = new java.util.HashSet[Any]() else s.hashes = new LongOpenSet()
    s
  }

  override def update(s: State, input: InternalRow): State = {
    val v = child.eval(input)
    if (s.values != null) {
      s.values.add(own(v))
      if (s.values.size > maxValues) toHashes(s)
    } else if (v != null) {
      val h = ValueHash(v, valueType)
      if (s.hashes != null) {
        s.hashes.add(h)
        if (s.hashes.size > HashLimit) toBits(s)
      } else s.bits.put(h)
    }
    s
  }

  override def merge(s: State, other: State): State = {
    if (s.values != null && other.values != null) {
      s.values.addAll(other.values)
      if (s.values.size > maxValues) toHashes(s)
      return s
    }
    if (s.values != null) toHashes(s)
    if (other.values != null) toHashes(other)
    if (s.bits != null || other.bits != null) {
      if (s.bits == null) toBits(s)
      if (other.bits == null) toBits(other)
      s.bits.merge(other.bits)
    } else {
      other.hashes.foreach(h => s.hashes.add(h))
      if (s.hashes.size > HashLimit) toBits(s)
    }
    s
  }

  private def toHashes(s: State): Unit = {
    val hashes = new LongOpenSet(s.values.size)
    s.values.forEach(v => if (v != null) hashes.add(ValueHash(v, valueType)))
    s.values = null
    s.hashes = hashes
    if (hashes.size > HashLimit) toBits(s)
  }

  private def toBits(s: State): Unit = {
    val bits = BloomFilterBits.empty(numHashes, bitmapBits)
    s.hashes.foreach(bits.put)
    s.hashes = null
    s.bits = bits
  }

  override def eval(s: State): Any = {
    if (s.values != null) {
      val ordering = TypeUtils.getInterpretedOrdering(valueType)
      val (nulls, nonNull) = s.values.asScala.toSeq.partition(_ == null)
      InternalRow(new GenericArrayData((nulls ++ nonNull.sorted(ordering)).toArray), null)
    } else if (s.hashes != null) {
      val bits = BloomFilterBits.empty(numHashes, BloomFilterBits.optimalBits(s.hashes.size, fpp))
      s.hashes.foreach(bits.put)
      InternalRow(null, bits.toBytes)
    } else {
      val needed = BloomFilterBits.optimalBits(s.bits.estimatedDistinct, fpp)
      val target = math.min(s.bits.numBits, BloomFilterBits.powerOfTwoAtLeast(needed))
      InternalRow(null, s.bits.foldTo(target).toBytes)
    }
  }

  override def serialize(s: State): Array[Byte] = {
    if (s.values != null) {
      val row = valuesProjection(InternalRow(new GenericArrayData(s.values.asScala.toArray)))
      ByteBuffer.allocate(1 + row.getSizeInBytes).put(ValuesMode).put(row.getBytes).array()
    } else if (s.hashes != null) {
      val bytes = s.hashes.toBytes
      ByteBuffer.allocate(1 + bytes.length).put(HashesMode).put(bytes).array()
    } else {
      val bytes = s.bits.toBytes
      ByteBuffer.allocate(1 + bytes.length).put(BitsMode).put(bytes).array()
    }
  }

  override def deserialize(bytes: Array[Byte]): State = {
    val s = new State
    val rest = java.util.Arrays.copyOfRange(bytes, 1, bytes.length)
    bytes(0) match {
      case ValuesMode =>
        val row = new UnsafeRow(1)
        row.pointTo(rest, rest.length)
        val set = new java.util.HashSet[Any]()
        row.getArray(0).foreach(valueType, (_, v) => set.add(own(v)))
        s.values = set
      case HashesMode => s.hashes = LongOpenSet.read(ByteBuffer.wrap(rest))
      case BitsMode => s.bits = BloomFilterBits.fromBytes(rest)
    }
    s
  }

  @transient private lazy val valuesProjection = UnsafeProjection.create(Array[DataType](ArrayType(valueType)))

  // Rows are reused by Spark's readers: keep our own copy of values that point into them.
  private def own(v: Any): Any = v match {
    case s: UTF8String => s.copy()
    case b: Array[Byte] => b.clone()
    case other => ValueHash.normalize(other, valueType)
  }

  override def withNewMutableAggBufferOffset(offset: Int): DistinctSketchAggregate =
    copy(mutableAggBufferOffset = offset)

  override def withNewInputAggBufferOffset(offset: Int): DistinctSketchAggregate =
    copy(inputAggBufferOffset = offset)

  override protected def withNewChildInternal(newChild: Expression): DistinctSketchAggregate =
    copy(child = newChild)
}

object DistinctSketchAggregate {
  /** Distinct hashes kept exactly (8 to 16 bytes each) before switching to a bitmap. */
  val HashLimit: Int = 1 << 16

  private val ValuesMode: Byte = 0
  private val HashesMode: Byte = 1
  private val BitsMode: Byte = 2

  /** Field names of the aggregate's result. */
  val ValuesField = "values"
  val BloomField = "bloom"

  /** The aggregate's result type for values of `valueType`. */
  def resultType(valueType: DataType): StructType = StructType(Seq(
      StructField(ValuesField, ArrayType(valueType, containsNull = true)),
      StructField(BloomField, BinaryType)))

  /** The aggregation buffer: exactly one of the three fields is set. */
  final class State {
    var values: java.util.HashSet[Any] = _
    var hashes: LongOpenSet = _
    var bits: BloomFilterBits = _
  }
}
