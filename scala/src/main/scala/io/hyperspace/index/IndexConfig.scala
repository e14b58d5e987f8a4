package io.hyperspace.index

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import io.hyperspace.HyperspaceException

/**
 * What to index: `IndexConfig("idx", Seq("a"), Seq("b"))`.
 *
 * @param name            the index name (a directory name under the system path)
 * @param indexedColumns  columns the data is bucketed and sorted by, in order
 * @param includedColumns further columns stored in the index so queries need not read the source
 * @param numBuckets      bucket count; None takes `spark.hyperspace.index.numBuckets` at creation
 * @param lineage         whether to record each row's source file; None takes
 *                        `spark.hyperspace.index.lineage.enabled` at creation
 * Both defaults are stored in the index, so later operations use the index's own values.
 */
case class IndexConfig(
    name: String,
    indexedColumns: Seq[String],
    includedColumns: Seq[String] = Nil,
    numBuckets: Option[Int] = None,
    lineage: Option[Boolean] = None) extends IndexKindConfig {

  override def kindName: String = io.hyperspace.index.covering.CoveringIndex.Kind

  /** The original Hyperspace's name for [[name]]. */
  def indexName: String = name
}

object IndexConfig {

  /** Java-friendly constructor with the original Hyperspace's three arguments. */
  def create(name: String, indexed: java.util.List[String], included: java.util.List[String]): IndexConfig = {
    import scala.jdk.CollectionConverters._
    IndexConfig(name, indexed.asScala.toSeq, included.asScala.toSeq)
  }

  /**
   * Parses `{"name": ..., "indexedColumns": [...], "includedColumns": [...], "numBuckets": n|null,
   * "lineage": b|null}` — how the Python bindings pass a config without py4j collections.
   */
  def fromJson(json: String): IndexConfig = {
    val node = new ObjectMapper().readTree(json)
    def strings(field: String): Seq[String] = Option(node.get(field)).filterNot(_.isNull) match {
      case Some(arr) if arr.isArray =>
        (0 until arr.size()).map(i => arr.get(i)).map { v =>
          if (!v.isTextual) throw new HyperspaceException(s"IndexConfig.$field must hold strings; got $v.")
          v.asText()
        }
      case Some(other) => throw new HyperspaceException(s"IndexConfig.$field must be a list; got $other.")
      case None => Nil
    }
    def optional(field: String): Option[JsonNode] = Option(node.get(field)).filterNot(_.isNull)
    IndexConfig(
      name = optional("name").map(_.asText()).getOrElse(""),
      indexedColumns = strings("indexedColumns"),
      includedColumns = strings("includedColumns"),
      numBuckets = optional("numBuckets").map { n =>
        if (!n.isInt) throw new HyperspaceException(s"IndexConfig.numBuckets must be an integer; got $n.")
        n.asInt()
      },
      lineage = optional("lineage").map { b =>
        if (!b.isBoolean) throw new HyperspaceException(s"IndexConfig.lineage must be a boolean; got $b.")
        b.asBoolean()
      })
  }
}
