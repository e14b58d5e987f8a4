package io.hyperspace.index.dataskipping.expressions

import org.apache.spark.sql.catalyst.expressions.XxHash64Function
import org.apache.spark.sql.types._

/**
 * The 64-bit hash a Bloom filter sketch records for a value, in Spark's internal representation
 * (UTF8String, Decimal, days, micros, ...). Build time hashes the rows' values and query time the
 * predicate's literals with this same function, so the two always agree.
 */
object ValueHash {
  private val Seed = 0x5eed5eedL

  /** The hash of a non-null internal `value` of `dataType`. */
  def apply(value: Any, dataType: DataType): Long =
    XxHash64Function.hash(normalize(value, dataType), dataType, Seed)

  /**
   * `-0.0 = 0.0` and every NaN equals every other NaN in Spark SQL, but their bit patterns differ:
   * hash one representative of each so an equality filter finds them all.
   */
  def normalize(value: Any, dataType: DataType): Any = (dataType, value) match {
    case (DoubleType, d: Double) if d == 0.0d => 0.0d
    case (DoubleType, d: Double) if d.isNaN => Double.NaN
    case (FloatType, f: Float) if f == 0.0f => 0.0f
    case (FloatType, f: Float) if f.isNaN => Float.NaN
    case _ => value
  }

  /** A second, independent 64-bit hash derived from the first (the finalizer of MurmurHash3). */
  def mix(h: Long): Long = {
    var x = h
    x ^= x >>> 33
    x *= 0xff51afd7ed558ccdL
    x ^= x >>> 33
    x *= 0xc4ceb9fe1a85ec53L
    x ^= x >>> 33
    x
  }
}
