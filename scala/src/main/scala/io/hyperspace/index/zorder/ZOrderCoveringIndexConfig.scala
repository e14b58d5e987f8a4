package io.hyperspace.index.zorder

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import io.hyperspace.HyperspaceException
import io.hyperspace.index.IndexKindConfig

/**
 * A covering index whose rows are laid out along a Z-order curve over `indexedColumns`, the
 * original Hyperspace's `ZOrderCoveringIndexConfig(indexName, indexedColumns, includedColumns)`.
 * Each data file holds a contiguous stretch of the curve and the log records its range of every
 * indexed column, so a filter with ranges on any of them reads only the files that can match.
 *
 * @param name            the index name (a directory name under the system path)
 * @param indexedColumns  the columns of the Z-order curve (one or more)
 * @param includedColumns further columns stored in the index so queries need not read the source
 * @param lineage         whether to record each row's source file; None takes
 *                        `spark.hyperspace.index.lineage.enabled` at creation
 */
case class ZOrderCoveringIndexConfig(
    name: String,
    indexedColumns: Seq[String],
    includedColumns: Seq[String] = Nil,
    lineage: Option[Boolean] = None) extends IndexKindConfig {

  override def kindName: String = ZOrderCoveringIndex.Kind

  /** The original Hyperspace's name for [[name]]. */
  def indexName: String = name
}

object ZOrderCoveringIndexConfig {

  /** Java-friendly constructor with the original Hyperspace's three arguments. */
  def create(name: String, indexed: java.util.List[String], included: java.util.List[String])
      : ZOrderCoveringIndexConfig = {
    import scala.jdk.CollectionConverters._
    ZOrderCoveringIndexConfig(name, indexed.asScala.toSeq, included.asScala.toSeq)
  }

  /**
   * Parses `{"name": ..., "indexedColumns": [...], "includedColumns": [...], "lineage": b|null}`,
   * how the Python bindings pass a config.
   */
  def fromJson(json: String): ZOrderCoveringIndexConfig = {
    val node = new ObjectMapper().readTree(json)
    if (node == null || !node.isObject) {
      throw new HyperspaceException(s"ZOrderCoveringIndexConfig must be a JSON object; got $json.")
    }
    def optional(field: String): Option[JsonNode] = Option(node.get(field)).filterNot(_.isNull)
    def strings(field: String): Seq[String] = optional(field) match {
      case Some(arr) if arr.isArray =>
        (0 until arr.size()).map(i => arr.get(i)).map { v =>
          if (!v.isTextual)
            throw new HyperspaceException(s"ZOrderCoveringIndexConfig.$field must hold strings; got $v.")
          v.asText()
        }
      case Some(other) => throw new HyperspaceException(s"ZOrderCoveringIndexConfig.$field must be a list; got $other.")
      case None => Nil
    }
    ZOrderCoveringIndexConfig(
      name = optional("name").map(_.asText()).getOrElse(""),
      indexedColumns = strings("indexedColumns"),
      includedColumns = strings("includedColumns"),
      lineage = optional("lineage").map { b =>
        if (!b.isBoolean) throw new HyperspaceException(s"ZOrderCoveringIndexConfig.lineage must be a boolean; got $b.")
        b.asBoolean()
      })
  }
}
