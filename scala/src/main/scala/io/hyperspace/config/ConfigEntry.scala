package io.hyperspace.config

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession

import io.hyperspace.HyperspaceException

/**
 * One typed `spark.hyperspace.*` setting: its key, its documentation, how a string value is
 * parsed and checked, and its default. Values are read from the session's runtime conf at every
 * use (never cached), so `spark.conf.set` takes effect on the next operation or query.
 *
 * Spark's own `ConfigBuilder` is `private[spark]`; this is the same idea, kept small.
 */
final case class ConfigEntry[T](
    key: String,
    doc: String,
    typeName: String,
    parse: String => T,
    check: T => Option[String],
    defaultOf: SparkSession => T,
    render: T => String,
    alternatives: Seq[String] = Nil) {

  /** Every key this setting is read from: its own, then the alternatives (older names). */
  def keys: Seq[String] = key +: alternatives

  /**
   * The value in `spark`'s session conf, or the default; a bad value fails with the key named.
   * The setting's own key wins; an alternative key is read only while the own key is unset.
   */
  def readFrom(spark: SparkSession): T =
    keys.iterator.map(k => k -> spark.conf.getOption(k)).collectFirst { case (k, Some(raw)) =>
      if (k == key) parseAndCheck(raw) else parseAndCheck(raw, k)
    }.getOrElse(defaultOf(spark))

  /** Parses and validates `raw`; throws a [[HyperspaceException]] naming the key otherwise. */
  def parseAndCheck(raw: String): T = parseAndCheck(raw, key)

  /** [[parseAndCheck]] of a value found under `foundUnder` (one of [[keys]]), named in errors. */
  private def parseAndCheck(raw: String, foundUnder: String): T = {
    val name = if (foundUnder == key) key else s"$foundUnder (an older name of $key)"
    val value = try parse(raw.trim)
    catch {
      case NonFatal(_) =>
        throw new HyperspaceException(
          s"Invalid value '$raw' for $name: expected $typeName.")
    }
    check(value).foreach { problem =>
      throw new HyperspaceException(s"Invalid value '$raw' for $name: $problem.")
    }
    value
  }

  /** The default for `spark`, rendered as a conf string. */
  def defaultString(spark: SparkSession): String = render(defaultOf(spark))
}

/** Builds [[ConfigEntry]]s in the style of Spark's `ConfigBuilder`. */
final case class ConfigBuilder(key: String, docText: String = "", alternatives: Seq[String] = Nil) {

  /** Attaches the user-facing description. */
  def doc(text: String): ConfigBuilder = copy(docText = text)

  /**
   * Also reads the setting from `oldKey` (e.g. the original Hyperspace's name for it) while
   * `key` itself is unset.
   */
  def withAlternative(oldKey: String): ConfigBuilder = copy(alternatives = alternatives :+ oldKey)

  /** A boolean setting (`true` / `false`, case-insensitive). */
  def booleanConf: TypedConfigBuilder[Boolean] =
    TypedConfigBuilder(this, "a boolean (true or false)",
      s =>
        s.toLowerCase match {
          case "true" => true
          case "false" => false
          case other => throw new IllegalArgumentException(other)
        }, _.toString)

  /** An integer setting. */
  def intConf: TypedConfigBuilder[Int] =
    TypedConfigBuilder(this, "an integer", _.toInt, _.toString)

  /** A floating-point setting. */
  def doubleConf: TypedConfigBuilder[Double] =
    TypedConfigBuilder(this, "a number",
      s => {
        val d = s.toDouble
        if (d.isNaN) throw new IllegalArgumentException(s) else d
      }, _.toString)

  /** A size in bytes, written as Spark writes sizes (`256m`, `1g`, `1048576`). */
  def bytesConf: TypedConfigBuilder[Long] =
    TypedConfigBuilder(this, "a size such as 256m, 1g or a number of bytes",
      s => org.apache.spark.network.util.JavaUtils.byteStringAsBytes(s), _.toString)

  /** A duration, written as Spark writes durations (`60s`, `2min`, `500ms`); read in milliseconds. */
  def timeConf: TypedConfigBuilder[Long] =
    TypedConfigBuilder(this, "a duration such as 60s, 2min or 500ms",
      s => org.apache.spark.network.util.JavaUtils.timeStringAsMs(s), ms => s"${ms}ms")

  /** A string setting. */
  def stringConf: TypedConfigBuilder[String] =
    TypedConfigBuilder(this, "a string", identity, identity)
}

/** The second half of the builder, once the value type is known. */
final case class TypedConfigBuilder[T](
    parent: ConfigBuilder,
    typeName: String,
    parse: String => T,
    render: T => String,
    checks: Seq[T => Option[String]] = Nil) {

  /** Adds a check; `message` says what a valid value is (it follows "Invalid value ... :"). */
  def checkValue(valid: T => Boolean, message: String): TypedConfigBuilder[T] =
    copy(checks = checks :+ ((v: T) => if (valid(v)) None else Some(message)))

  /** Restricts a string setting to `values` (compared case-insensitively, stored lower-case). */
  def checkValues(values: Set[String])(implicit ev: T =:= String): TypedConfigBuilder[T] = {
    val allowed = values.map(_.toLowerCase)
    copy(
      parse = (s: String) => parse(s.toLowerCase),
      checks = checks :+
        ((v: T) =>
          if (allowed.contains(ev(v))) None
          else Some(s"expected one of ${allowed.toSeq.sorted.mkString(", ")}")))
  }

  /** Finishes the entry with a fixed default. */
  def createWithDefault(default: T): ConfigEntry[T] = createWithDefaultFunction(_ => default)

  /** Finishes the entry with a default that depends on the session (e.g. the warehouse). */
  def createWithDefaultFunction(default: SparkSession => T): ConfigEntry[T] = {
    val allChecks = checks
    ConfigEntry[T](parent.key, parent.docText, typeName, parse,
      v => allChecks.iterator.map(_(v)).collectFirst { case Some(p) => p },
      default, render, parent.alternatives)
  }
}
