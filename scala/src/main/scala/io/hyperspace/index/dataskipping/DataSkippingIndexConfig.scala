package io.hyperspace.index.dataskipping

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ArrayNode

import io.hyperspace.HyperspaceException
import io.hyperspace.index.{ConfigJson, IndexKindConfig}

/**
 * What a data skipping index holds: one row per source file with the given sketches, e.g.
 * {{{
 *   DataSkippingIndexConfig("events_skip", MinMaxSketch("ts"), BloomFilterSketch("user_id"),
 *     ValueListSketch("lower(country)"))
 * }}}
 * The same sketch may not appear twice. Column names and expressions are checked against the
 * source when the index is created.
 */
case class DataSkippingIndexConfig(name: String, sketches: Seq[Sketch]) extends IndexKindConfig {

  override def kindName: String = DataSkippingIndex.Kind

  if (name == null || name.trim.isEmpty) {
    throw new HyperspaceException("DataSkippingIndexConfig needs a non-empty index name.")
  }
  if (sketches.isEmpty) {
    throw new HyperspaceException(s"Data skipping index '$name' needs at least one sketch.")
  }
  sketches.groupBy(identity).collect { case (s, ss) if ss.size > 1 => s }.headOption.foreach { s =>
    throw new HyperspaceException(s"Sketch ${s.describe} appears more than once in data skipping index '$name'.")
  }

  /** The original Hyperspace's name for [[name]]. */
  def indexName: String = name

  /** The JSON form [[DataSkippingIndexConfig.fromJson]] reads. */
  def toJson: String = {
    val mapper = new ObjectMapper()
    val node = mapper.createObjectNode()
    node.put("name", name)
    val arr = node.putArray("sketches")
    sketches.foreach(s => arr.add(SketchSerde.toJsonNode(s)))
    mapper.writeValueAsString(node)
  }
}

object DataSkippingIndexConfig {

  /** `DataSkippingIndexConfig("idx", MinMaxSketch("a"), BloomFilterSketch("b"))`. */
  def apply(name: String, sketch: Sketch, moreSketches: Sketch*): DataSkippingIndexConfig =
    DataSkippingIndexConfig(name, sketch +: moreSketches)

  /** Java-friendly constructor. */
  def create(name: String, sketches: java.util.List[Sketch]): DataSkippingIndexConfig =
    DataSkippingIndexConfig(name, sketches.asScala.toSeq)

  /**
   * Parses `{"name": "idx", "sketches": [{"kind": ..., "expr": ..., "params": {...}}, ...]}`
   * (sketches as in [[SketchSerde]]) — how the Python bindings pass a config.
   */
  def fromJson(json: String): DataSkippingIndexConfig = {
    val config = ConfigJson.parse(json, "DataSkippingIndexConfig").allowOnly("name", "sketches")
    val name = config.string("name").getOrElse {
      throw new HyperspaceException(s"DataSkippingIndexConfig.name must be a string; got none.")
    }
    val sketches = config.optional("sketches") match {
      case Some(arr: ArrayNode) => arr.elements().asScala.map(SketchSerde.fromJsonNode).toSeq
      case other => throw new HyperspaceException(
          s"DataSkippingIndexConfig '$name': sketches must be a list; got ${other.orNull}.")
    }
    DataSkippingIndexConfig(name, sketches)
  }
}
