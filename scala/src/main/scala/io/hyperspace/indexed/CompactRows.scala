package io.hyperspace.indexed

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * The compact stored form of an Indexed DataFrame's rows (`spark.hyperspace.indexed.rowFormat`
 * `compact`): a row is a null bitmap, then each non-null field in its own encoding, so that a
 * lookup decodes only the rows it reads (block compression decodes a whole block per row).
 *
 *  - integral, date/time and interval values and decimals of up to 18 digits: zig-zag varints
 *    of their long (an UnsafeRow spends 8 bytes on each);
 *  - strings: a code into a per-partition dictionary while it has room (a few thousand short
 *    values: labels, categories, enums), else inline (`varint length, bytes`);
 *  - floating point: their 4 or 8 bytes; booleans and bytes: one byte; binary and wide decimals:
 *    inline bytes.
 *
 * Rows are decoded into a reused [[UnsafeRowWriter]] only when produced. Nested types and
 * calendar intervals are not encoded: a schema with one keeps the UnsafeRow form.
 *
 * A version's dictionaries extend its parent's (appended codes only), so the rows of every
 * ancestor decode with a descendant's dictionaries.
 */
private[indexed] final class CompactRows private (
    val schema: StructType,
    // Per field: the dictionary's values in code order (null for a field that is no string).
    val dictionaries: Array[Array[UTF8String]]) extends Serializable {

  import CompactRows._

  private val numFields = schema.length
  private val nullBytes = (numFields + 7) / 8
  private val kinds: Array[Int] = schema.fields.map(f => kindOf(f.dataType))
  private val decimals: Array[DecimalType] = schema.fields.map {
    case StructField(_, d: DecimalType, _, _) => d
    case _ => null
  }

  /** Heap bytes of the dictionaries (values with their objects, and the code arrays). */
  def dictionaryBytes: Long = dictionaries.iterator.filter(_ != null).map { values =>
    16L + 4L * values.length + values.iterator.map(v => 40L + v.numBytes()).sum
  }.sum

  /** A writer of rows that extends this form's dictionaries (a new version's). */
  def writer(): CompactRows.Writer = new CompactRows.Writer(this)

  /** A reusable writer of decoded rows for [[decode]]. */
  def newRowWriter(): UnsafeRowWriter = new UnsafeRowWriter(numFields, 64)

  /**
   * Decodes the row whose encoding starts at `bytes(offset)` into `out` (reset first; its row is
   * the result) and returns the offset where the encoding ends. `scratch` (one long, the
   * caller's: a form is read by many threads at once) holds each varint read. With `wanted`
   * (null: all), a field not wanted is skipped and left null: a join reading two of ten columns
   * decodes two.
   */
  def decode(bytes: Array[Byte], offset: Int, out: UnsafeRowWriter, scratch: Array[Long],
      wanted: Array[Boolean] = null): Int = {
    out.reset()
    out.zeroOutNullBytes()
    var pos = offset + nullBytes
    var i = 0
    while (i < numFields) {
      val isNull = (bytes(offset + (i >>> 3)) & (1 << (i & 7))) != 0
      if (isNull) {
        // A wide decimal keeps its variable-length slot even when null (as UnsafeProjection writes it).
        if (kinds(i) == WideDecimalKind) out.write(i, null: Decimal, decimals(i).precision, decimals(i).scale)
        else out.setNullAt(i)
      } else if (wanted != null && !wanted(i)) {
        pos = skip(bytes, pos, kinds(i), scratch)
        if (kinds(i) == WideDecimalKind) out.write(i, null: Decimal, decimals(i).precision, decimals(i).scale)
        else out.setNullAt(i)
      } else {
        kinds(i) match {
          case VarLongKind =>
            pos = getVarLong(bytes, pos, scratch)
            out.write(i, unzig(scratch(0)))
          case VarIntKind =>
            pos = getVarLong(bytes, pos, scratch)
            out.write(i, unzig(scratch(0)).toInt)
          case ShortKind =>
            pos = getVarLong(bytes, pos, scratch)
            out.write(i, unzig(scratch(0)).toShort)
          case ByteKind =>
            out.write(i, bytes(pos)); pos += 1
          case BooleanKind =>
            out.write(i, bytes(pos) != 0); pos += 1
          case FloatKind =>
            out.write(i, java.lang.Float.intBitsToFloat(Platform.getInt(bytes, Platform.BYTE_ARRAY_OFFSET + pos)));
            pos += 4
          case DoubleKind =>
            out.write(i, java.lang.Double.longBitsToDouble(Platform.getLong(bytes, Platform.BYTE_ARRAY_OFFSET + pos)));
            pos += 8
          case SmallDecimalKind =>
            pos = getVarLong(bytes, pos, scratch)
            val d = decimals(i)
            out.write(i, Decimal.createUnsafe(unzig(scratch(0)), d.precision, d.scale), d.precision, d.scale)
          case WideDecimalKind =>
            pos = getVarLong(bytes, pos, scratch)
            val n = scratch(0).toInt
            val unscaled = new java.math.BigInteger(java.util.Arrays.copyOfRange(bytes, pos, pos + n))
            pos += n
            val d = decimals(i)
            out.write(i, Decimal(new java.math.BigDecimal(unscaled, d.scale), d.precision, d.scale),
              d.precision, d.scale)
          case StringKind =>
            pos = getVarLong(bytes, pos, scratch)
            val tag = scratch(0)
            if ((tag & 1L) == 0L) out.write(i, dictionaries(i)((tag >>> 1).toInt))
            else {
              val n = (tag >>> 1).toInt
              out.write(i, bytes, pos, n)
              pos += n
            }
          case BinaryKind =>
            pos = getVarLong(bytes, pos, scratch)
            val n = scratch(0).toInt
            out.write(i, bytes, pos, n)
            pos += n
          case NullKind => out.setNullAt(i)
        }
      }
      i += 1
    }
    pos
  }

  // The offset after the non-null value of kind `kind` at `bytes(pos)`.
  private def skip(bytes: Array[Byte], pos: Int, kind: Int, scratch: Array[Long]): Int = kind match {
    case ByteKind | BooleanKind => pos + 1
    case FloatKind => pos + 4
    case DoubleKind => pos + 8
    case NullKind => pos
    case WideDecimalKind | BinaryKind =>
      val at = getVarLong(bytes, pos, scratch)
      at + scratch(0).toInt
    case StringKind =>
      val at = getVarLong(bytes, pos, scratch)
      if ((scratch(0) & 1L) == 0L) at else at + (scratch(0) >>> 1).toInt
    case _ => getVarLong(bytes, pos, scratch)
  }
}

private[indexed] object CompactRows {

  private final val VarLongKind = 0
  private final val VarIntKind = 1
  private final val ShortKind = 2
  private final val ByteKind = 3
  private final val BooleanKind = 4
  private final val FloatKind = 5
  private final val DoubleKind = 6
  private final val SmallDecimalKind = 7
  private final val WideDecimalKind = 8
  private final val StringKind = 9
  private final val BinaryKind = 10
  private final val NullKind = 11
  private final val Unsupported = -1

  /** Most values a field's dictionary takes: a code then fits in two varint bytes. */
  val MaxDictionaryValues: Int = 8192

  /** Longest string a dictionary takes (a longer one is rarely repeated, and costs its bytes anyway). */
  val MaxDictionaryValueBytes: Int = 64

  private def kindOf(t: DataType): Int = t match {
    case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => VarLongKind
    case IntegerType | DateType | _: YearMonthIntervalType => VarIntKind
    case ShortType => ShortKind
    case ByteType => ByteKind
    case BooleanType => BooleanKind
    case FloatType => FloatKind
    case DoubleType => DoubleKind
    case d: DecimalType if d.precision <= Decimal.MAX_LONG_DIGITS => SmallDecimalKind
    case _: DecimalType => WideDecimalKind
    case _: StringType => StringKind
    case BinaryType => BinaryKind
    case NullType => NullKind
    case _ => Unsupported
  }

  /** Whether every field of `schema` has a compact encoding. */
  def supports(schema: StructType): Boolean = schema.fields.forall(f => kindOf(f.dataType) != Unsupported)

  /** The form of a new index's rows (no dictionary values yet). */
  def apply(schema: StructType): CompactRows = {
    require(supports(schema), s"no compact row form for $schema")
    new CompactRows(schema,
      schema.fields.map(f => if (kindOf(f.dataType) == StringKind) Array.empty[UTF8String] else null))
  }

  private def zig(v: Long): Long = (v << 1) ^ (v >> 63)
  private def unzig(v: Long): Long = (v >>> 1) ^ -(v & 1)

  /** Writes `v` as an unsigned varint at `b(p)`; returns the offset after it. */
  def putVarLong(b: Array[Byte], p: Int, v: Long): Int = {
    var pos = p
    var x = v
    while ((x & ~0x7fL) != 0L) {
      b(pos) = ((x & 0x7f) | 0x80).toByte
      pos += 1
      x >>>= 7
    }
    b(pos) = x.toByte
    pos + 1
  }

  /** Reads an unsigned varint at `b(p)` into `out(0)`; returns the offset after it. */
  def getVarLong(b: Array[Byte], p: Int, out: Array[Long]): Int = {
    var pos = p
    var shift = 0
    var v = 0L
    var x = b(pos)
    while (x < 0) {
      v |= (x & 0x7fL) << shift
      shift += 7
      pos += 1
      x = b(pos)
    }
    out(0) = v | (x.toLong << shift)
    pos + 1
  }

  /**
   * Encodes rows of one version, extending its parent's dictionaries; [[result]] is the form
   * the version's rows decode with.
   */
  final class Writer private[CompactRows] (parent: CompactRows) {
    private val schema = parent.schema
    private val kinds = parent.kinds
    private val nullBytes = parent.nullBytes
    private val values: Array[scala.collection.mutable.ArrayBuffer[UTF8String]] =
      parent.dictionaries.map(d => if (d == null) null else scala.collection.mutable.ArrayBuffer.from(d))
    private val codes: Array[java.util.HashMap[UTF8String, Integer]] = values.map { v =>
      if (v == null) null
      else {
        val m = new java.util.HashMap[UTF8String, Integer]()
        v.indices.foreach(c => m.put(v(c), Integer.valueOf(c)))
        m
      }
    }
    private var buffer = new Array[Byte](256)
    private var length = 0

    /** The bytes of the last row encoded (`[0, encodedLength)`). */
    def encoded: Array[Byte] = buffer
    def encodedLength: Int = length

    private def ensure(more: Int): Unit = if (length + more > buffer.length) {
      buffer = java.util.Arrays.copyOf(buffer, math.max(length + more, buffer.length * 2))
    }

    private def putVar(v: Long): Unit = { ensure(10); length = putVarLong(buffer, length, v) }

    private def putBytes(b: Array[Byte], from: Int, n: Int): Unit = {
      ensure(n)
      System.arraycopy(b, from, buffer, length, n)
      length += n
    }

    private def putFixed(v: Long, n: Int): Unit = {
      ensure(n)
      var k = 0
      while (k < n) { buffer(length + k) = (v >>> (8 * k)).toByte; k += 1 }
      length += n
    }

    /** Encodes `row` (of the schema) into [[encoded]]. */
    def encode(row: InternalRow): Unit = {
      length = 0
      ensure(nullBytes)
      java.util.Arrays.fill(buffer, 0, nullBytes, 0.toByte)
      length = nullBytes
      var i = 0
      while (i < kinds.length) {
        if (row.isNullAt(i)) buffer(i >>> 3) = (buffer(i >>> 3) | (1 << (i & 7))).toByte
        else kinds(i) match {
          case VarLongKind => putVar(zig(row.getLong(i)))
          case VarIntKind => putVar(zig(row.getInt(i).toLong))
          case ShortKind => putVar(zig(row.getShort(i).toLong))
          case ByteKind => putFixed(row.getByte(i).toLong, 1)
          case BooleanKind => putFixed(if (row.getBoolean(i)) 1L else 0L, 1)
          case FloatKind =>
            ensure(4)
            Platform.putInt(buffer, Platform.BYTE_ARRAY_OFFSET + length,
              java.lang.Float.floatToRawIntBits(row.getFloat(i)))
            length += 4
          case DoubleKind =>
            ensure(8)
            Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + length,
              java.lang.Double.doubleToRawLongBits(row.getDouble(i)))
            length += 8
          case SmallDecimalKind =>
            val d = schema(i).dataType.asInstanceOf[DecimalType]
            putVar(zig(row.getDecimal(i, d.precision, d.scale).toUnscaledLong))
          case WideDecimalKind =>
            val d = schema(i).dataType.asInstanceOf[DecimalType]
            val b = row.getDecimal(i, d.precision, d.scale).toJavaBigDecimal.unscaledValue().toByteArray
            putVar(b.length.toLong)
            putBytes(b, 0, b.length)
          case StringKind => putString(i, row.getUTF8String(i))
          case BinaryKind =>
            val b = row.getBinary(i)
            putVar(b.length.toLong)
            putBytes(b, 0, b.length)
          case NullKind =>
            buffer(i >>> 3) = (buffer(i >>> 3) | (1 << (i & 7))).toByte
        }
        i += 1
      }
    }

    private def putString(i: Int, s: UTF8String): Unit = {
      val code = codes(i).get(s)
      if (code != null) putVar(code.longValue() << 1)
      else if (s.numBytes() <= MaxDictionaryValueBytes && values(i).length < MaxDictionaryValues) {
        // A copy: `s` may be a view of a reused input row.
        val own = s.copy()
        codes(i).put(own, Integer.valueOf(values(i).length))
        values(i) += own
        putVar((values(i).length - 1).toLong << 1)
      } else {
        val b = s.getBytes
        putVar((b.length.toLong << 1) | 1L)
        putBytes(b, 0, b.length)
      }
    }

    /** The form of the rows written: the parent's dictionaries with this writer's values added. */
    def result(): CompactRows = new CompactRows(schema, values.map(v => if (v == null) null else v.toArray))
  }
}
