package io.hyperspace.index.dataskipping

import org.apache.spark.sql.types._

/** The value types built-in sketches accept, with the reasons given when they refuse one. */
private[dataskipping] object SketchTypes {

  // Strings with a non-default collation ("string collate ...") compare and hash by collation
  // rules, which the sketches' binary comparisons and hashes would not follow.
  private def binaryString(t: DataType): Boolean = t match {
    case s: StringType => s.typeName == "string"
    case _ => false
  }

  /** Atomic types with a total order Spark compares by: numbers, strings, dates, ... */
  def orderable(t: DataType): Boolean = t match {
    case _: NumericType | BooleanType | DateType | TimestampType | TimestampNTZType | BinaryType => true
    case _ => binaryString(t)
  }

  /** Atomic types whose values are equal exactly when their internal representations are. */
  def hashable(t: DataType): Boolean = orderable(t)

  /** None if `t` is orderable, else the reason. */
  def requireOrderable(t: DataType): Option[String] =
    if (orderable(t)) None
    else Some(s"it needs an atomic orderable type (numbers, strings with the default UTF8_BINARY " +
      s"collation, booleans, dates, timestamps, binary), not ${t.simpleString}")

  /** None if `t` is hashable, else the reason. */
  def requireHashable(t: DataType): Option[String] = requireOrderable(t)

  /** None if `t` is a string type, else the reason. */
  def requireString(t: DataType): Option[String] =
    if (binaryString(t)) None
    else Some(s"it needs a string (with the default UTF8_BINARY collation), not ${t.simpleString}")
}
