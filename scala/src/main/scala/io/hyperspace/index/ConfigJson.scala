package io.hyperspace.index

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode

import io.hyperspace.HyperspaceException

/**
 * One kind's config read from its JSON object (how Python, SQL's `CONFIG '...'` and the advisor
 * pass a config), as strictly as the Scala API takes one: malformed JSON, a field of another type
 * and a field the kind does not know are each a [[HyperspaceException]] naming `what` (the config
 * class) and the field. An unknown field is refused rather than ignored, so a misspelt
 * `"numBucket"` cannot silently build an index with the default.
 */
private[hyperspace] final class ConfigJson private (what: String, node: ObjectNode) {

  /** Refuses every field but `known`, naming the first unknown one and the known ones. */
  def allowOnly(known: String*): ConfigJson = {
    node.fieldNames().asScala.find(f => !known.contains(f)).foreach { unknown =>
      throw new HyperspaceException(
        s"$what has no field '$unknown'; its fields are ${known.mkString(", ")}.")
    }
    this
  }

  /** The field, unless absent or JSON null. */
  def optional(field: String): Option[JsonNode] = Option(node.get(field)).filterNot(_.isNull)

  def string(field: String): Option[String] = optional(field).map { v =>
    if (!v.isTextual) throw new HyperspaceException(s"$what.$field must be a string; got $v.")
    v.asText()
  }

  def strings(field: String): Seq[String] = optional(field) match {
    case Some(arr) if arr.isArray =>
      arr.elements().asScala.map { v =>
        if (!v.isTextual) throw new HyperspaceException(s"$what.$field must hold strings; got $v.")
        v.asText()
      }.toSeq
    case Some(other) => throw new HyperspaceException(s"$what.$field must be a list; got $other.")
    case None => Nil
  }

  def int(field: String): Option[Int] = optional(field).map { n =>
    if (!n.isInt) throw new HyperspaceException(s"$what.$field must be an integer; got $n.")
    n.asInt()
  }

  def boolean(field: String): Option[Boolean] = optional(field).map { b =>
    if (!b.isBoolean) throw new HyperspaceException(s"$what.$field must be a boolean; got $b.")
    b.asBoolean()
  }
}

private[hyperspace] object ConfigJson {

  private val mapper = new ObjectMapper()

  /** `json` as the JSON object of a `what` (e.g. "IndexConfig"). */
  def parse(json: String, what: String): ConfigJson = {
    val node = try mapper.readTree(json)
    catch {
      case NonFatal(e) => throw new HyperspaceException(s"Invalid $what JSON: ${e.getMessage}", e)
    }
    node match {
      case obj: ObjectNode => new ConfigJson(what, obj)
      case _ => throw new HyperspaceException(s"$what must be a JSON object; got $json.")
    }
  }
}
