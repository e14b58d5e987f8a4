package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions.{Cast, EqualTo, Literal}
import org.apache.spark.sql.types._

import io.hyperspace.shims.Casting

/** Which casts preserve order (and equality) of the values they convert. */
object Casts {
  private def integralDigits(t: DataType): Option[Int] = t match {
    case ByteType => Some(3)
    case ShortType => Some(5)
    case IntegerType => Some(10)
    case LongType => Some(20)
    case _ => None
  }

  private val integralRank: Map[DataType, Int] =
    Map(ByteType -> 1, ShortType -> 2, IntegerType -> 3, LongType -> 4)

  /** Whether `cast(x as to)` is injective and non-decreasing for every non-null `x` of `from`. */
  def injective(from: DataType, to: DataType): Boolean = (from, to) match {
    case (a, b) if a == b => true
    case (a, b) if integralRank.contains(a) && integralRank.contains(b) => integralRank(a) < integralRank(b)
    case (a, d: DecimalType) if integralDigits(a).isDefined => d.precision - d.scale >= integralDigits(a).get
    case (ByteType | ShortType, FloatType) => true
    case (ByteType | ShortType | IntegerType, DoubleType) => true
    case (FloatType, DoubleType) => true
    case (DateType, TimestampType | TimestampNTZType) => true
    case (a: DecimalType, b: DecimalType) => b.scale >= a.scale && b.precision - b.scale >= a.precision - a.scale
    case _ => false
  }

  /**
   * Whether `cast(x as to)` is non-decreasing for every non-null `x` of `from` (never wrapping
   * around or failing): equal values may merge (bigint to double), order never inverts.
   */
  def orderPreserving(from: DataType, to: DataType): Boolean = injective(from, to) ||
    ((from, to) match {
      case (ByteType | ShortType | IntegerType | LongType | _: DecimalType | FloatType, FloatType | DoubleType) => true
      case _ => false
    })

  /**
   * The value `u` of the cast's input type with `cast(u) = lit`, if there is one; for an
   * injective cast there is at most one.
   */
  def preimage(cast: Cast, lit: Literal): Option[Literal] = {
    val from = cast.child.dataType
    val tz = cast.timeZoneId
    val u = scala.util.Try(Casting.tryCast(lit, from, tz).eval()).toOption.flatMap(Option(_))
    u.map(Literal(_, from)).filter { candidate =>
      val roundTrip = cast.withNewChildren(Seq(candidate)).eval()
      roundTrip != null && EqualTo(Literal(roundTrip, cast.dataType), lit).eval() == true
    }
  }
}
