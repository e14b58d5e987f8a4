package io.hyperspace.indexed

import java.util.Arrays

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow, Murmur3Hash, Pmod, Literal}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.HyperspaceException

/** A binary key compared by content (a `byte[]` compares by identity). */
final case class BinaryKey(bytes: Array[Byte]) {
  override def equals(other: Any): Boolean = other match {
    case BinaryKey(o) => Arrays.equals(bytes, o)
    case _ => false
  }
  override def hashCode(): Int = Arrays.hashCode(bytes)
}

/**
 * Turns the key column of a row into the object the partition's trie is keyed by. The object
 * carries the real key value, so trie lookups compare keys, never just hashes. Values that SQL
 * considers equal map to equal objects: `-0.0` and `0.0` are one key, every NaN is one key (as
 * in Spark's joins and grouping), and a decimal is keyed by its unscaled value (every value of a
 * `DecimalType(p, s)` column has scale `s`). SQL NULL maps to `null`, which matches nothing.
 */
final case class KeyCodec(dataType: DataType) {

  /**
   * The key of `row(ordinal)`, or null for SQL NULL. A string key may point into `row`'s memory:
   * use it only while that memory is alive and unchanged (it is, for rows stored in batches).
   */
  def key(row: InternalRow, ordinal: Int): AnyRef = {
    if (row.isNullAt(ordinal)) return null
    dataType match {
      case BooleanType => java.lang.Boolean.valueOf(row.getBoolean(ordinal))
      case ByteType => Integer.valueOf(row.getByte(ordinal).toInt)
      case ShortType => Integer.valueOf(row.getShort(ordinal).toInt)
      case IntegerType | DateType | _: YearMonthIntervalType => Integer.valueOf(row.getInt(ordinal))
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType =>
        java.lang.Long.valueOf(row.getLong(ordinal))
      // Keyed by bits: the trie compares boxed numbers with Scala's `==`, where NaN != NaN.
      // floatToIntBits/doubleToLongBits map every NaN to one pattern; -0.0 is folded first.
      case FloatType =>
        val f = row.getFloat(ordinal)
        Integer.valueOf(java.lang.Float.floatToIntBits(if (f == 0.0f) 0.0f else f))
      case DoubleType =>
        val d = row.getDouble(ordinal)
        java.lang.Long.valueOf(java.lang.Double.doubleToLongBits(if (d == 0.0d) 0.0d else d))
      case t: DecimalType =>
        val d = row.getDecimal(ordinal, t.precision, t.scale)
        if (t.precision <= Decimal.MAX_LONG_DIGITS) java.lang.Long.valueOf(d.toUnscaledLong)
        else d.toJavaBigDecimal.unscaledValue()
      case _: StringType => row.getUTF8String(ordinal)
      case BinaryType => BinaryKey(row.getBinary(ordinal))
      case other => throw new IllegalStateException(s"unsupported key type $other")
    }
  }

  /**
   * Whether every key of this type is one `long` (its [[longKey]]), so a partition can index it
   * in a primitive [[LongPointerTable]]: integral, date/time, interval, floating point (by its
   * normalised bits), boolean and decimals of up to 18 digits (by the unscaled value).
   */
  val isLong: Boolean = dataType match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType |
        DateType | TimestampType | TimestampNTZType | _: YearMonthIntervalType |
        _: DayTimeIntervalType => true
    case t: DecimalType => t.precision <= Decimal.MAX_LONG_DIGITS
    case _ => false
  }

  /**
   * The `long` form of the non-null key `row(ordinal)` when [[isLong]], without boxing. Equal
   * to [[longOf]] of [[key]], which the stored rows and lookup values both go through.
   */
  def longKey(row: InternalRow, ordinal: Int): Long = dataType match {
    case BooleanType => if (row.getBoolean(ordinal)) 1L else 0L
    case ByteType => row.getByte(ordinal).toLong
    case ShortType => row.getShort(ordinal).toLong
    case IntegerType | DateType | _: YearMonthIntervalType => row.getInt(ordinal).toLong
    case FloatType =>
      val f = row.getFloat(ordinal)
      java.lang.Float.floatToIntBits(if (f == 0.0f) 0.0f else f).toLong
    case DoubleType =>
      val d = row.getDouble(ordinal)
      java.lang.Double.doubleToLongBits(if (d == 0.0d) 0.0d else d)
    case t: DecimalType => row.getDecimal(ordinal, t.precision, t.scale).toUnscaledLong
    case _ => row.getLong(ordinal)
  }

  /** The `long` form of a non-null [[key]] object of a type that [[isLong]]. */
  def longOf(key: AnyRef): Long = key match {
    case b: java.lang.Boolean => if (b.booleanValue()) 1L else 0L
    case n: java.lang.Number => n.longValue()
    case other => throw new IllegalArgumentException(s"not a $dataType key: $other")
  }

  /** The key of a Catalyst value of the key type (a lookup literal); null for NULL. */
  def keyOfValue(value: Any): AnyRef = {
    val row = new GenericInternalRow(Array[Any](value))
    key(row, 0) match {
      case s: UTF8String => s.clone() // lookup keys travel to executors; own their bytes
      case k => k
    }
  }

  /**
   * The expression the rows are hash-partitioned by: the key itself, NaN/-0.0 normalised for
   * floating point keys exactly as Spark normalises join keys, so a probe side shuffled by
   * Spark's `HashPartitioning` on the (normalised) join key lands on the matching partition.
   */
  def partitionKey(key: Expression): Expression = dataType match {
    case FloatType | DoubleType => NormalizeNaNAndZero(key)
    case _ => key
  }

  /** Spark's `HashPartitioning(key, n)` partition id expression, over `partitionKey(key)`. */
  def partitionIdExpression(key: Expression, numPartitions: Int): Expression =
    Pmod(new Murmur3Hash(Seq(partitionKey(key))), Literal(numPartitions))

  /** Rough bytes a key object of this type occupies on the heap, beyond the trie entry. */
  def keyHeapBytes(key: AnyRef): Long = key match {
    case _: UTF8String => 24L // points into the row batch: no bytes of its own
    case b: BinaryKey => 32L + b.bytes.length
    case b: java.math.BigInteger => 48L + b.bitLength() / 8
    case _ => 16L
  }
}

object KeyCodec {

  /** Whether `dataType` can be an index key; atomic types with binary equality only. */
  def supports(dataType: DataType): Boolean = dataType match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType |
        DateType | TimestampType | TimestampNTZType | BinaryType => true
    case _: DecimalType | _: YearMonthIntervalType | _: DayTimeIntervalType => true
    // A string with a non-binary collation (e.g. UTF8_LCASE) makes 'a' equal 'A': bytes
    // would not be the key.
    case s: StringType => s == StringType
    case _ => false
  }

  /** The codec for key column `column` of type `dataType`; fails naming the column otherwise. */
  def forColumn(column: String, dataType: DataType): KeyCodec = {
    if (!supports(dataType)) {
      throw new HyperspaceException(
        s"Cannot index on column '$column' of type ${dataType.simpleString}: the key must be an " +
          "atomic type (boolean, integral, floating point, decimal, string with a binary " +
          "collation, binary, date, timestamp, timestamp_ntz or an ANSI interval).")
    }
    KeyCodec(dataType)
  }
}
