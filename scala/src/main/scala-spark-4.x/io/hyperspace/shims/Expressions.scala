package io.hyperspace.shims

import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Expression}
import org.apache.spark.sql.types.DataType

/** Casts with an explicit evaluation mode (the `Cast` constructor's shape is Spark's). */
object Casting {

  /** Spark's non-ANSI cast: null where the value does not convert. */
  def legacy(child: Expression, dataType: DataType, timeZoneId: Option[String] = None): Cast =
    Cast(child, dataType, timeZoneId, EvalMode.LEGACY)

  /** The ANSI cast: an error where the value does not convert. */
  def ansi(child: Expression, dataType: DataType, timeZoneId: Option[String] = None): Cast =
    Cast(child, dataType, timeZoneId, EvalMode.ANSI)

  /** `try_cast`: null where the value does not convert, also under ANSI. */
  def tryCast(child: Expression, dataType: DataType, timeZoneId: Option[String] = None): Cast =
    Cast(child, dataType, timeZoneId, EvalMode.TRY)
}
