package io.hyperspace.index.zorder

import io.hyperspace.index.{ConfigJson, IndexKindConfig}

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
    val config = ConfigJson.parse(json, "ZOrderCoveringIndexConfig")
      .allowOnly("name", "indexedColumns", "includedColumns", "lineage")
    ZOrderCoveringIndexConfig(
      name = config.string("name").getOrElse(""),
      indexedColumns = config.strings("indexedColumns"),
      includedColumns = config.strings("includedColumns"),
      lineage = config.boolean("lineage"))
  }
}
