package io.hyperspace.index.split

import io.hyperspace.index.{ConfigJson, IndexKindConfig}

/**
 * A split index (the PDW paper's index split from its data): only the key columns and where each
 * row lives in the source — file, Parquet row group, row — hash-bucketed and sorted by key. A
 * selective filter on the keys reads the matching locations from it and then only those row
 * groups of only those source files, with every column of the source (docs/split-index.md).
 * Over CSV and JSON sources it is file-level: (keys, file) pairs, seeks read whole files.
 *
 * @param name           the index name (a directory name under the system path)
 * @param indexedColumns the key columns (top-level columns of the source)
 */
case class SplitIndexConfig(name: String, indexedColumns: Seq[String]) extends IndexKindConfig {
  override def kindName: String = SplitIndex.Kind
}

object SplitIndexConfig {

  /** Java-friendly constructor. */
  def create(name: String, indexed: java.util.List[String]): SplitIndexConfig = {
    import scala.jdk.CollectionConverters._
    SplitIndexConfig(name, indexed.asScala.toSeq)
  }

  /** Parses `{"name": ..., "indexedColumns": [...]}`, how the Python bindings and SQL pass a config. */
  def fromJson(json: String): SplitIndexConfig = {
    val config = ConfigJson.parse(json, "SplitIndexConfig").allowOnly("name", "indexedColumns")
    SplitIndexConfig(config.string("name").getOrElse(""), config.strings("indexedColumns"))
  }
}
