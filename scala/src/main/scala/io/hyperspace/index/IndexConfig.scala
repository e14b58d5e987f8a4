package io.hyperspace.index

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
    val config = ConfigJson.parse(json, "IndexConfig")
      .allowOnly("name", "indexedColumns", "includedColumns", "numBuckets", "lineage")
    IndexConfig(
      name = config.string("name").getOrElse(""),
      indexedColumns = config.strings("indexedColumns"),
      includedColumns = config.strings("includedColumns"),
      numBuckets = config.int("numBuckets"),
      lineage = config.boolean("lineage"))
  }
}
