package io.hyperspace.index

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.LogStore

/**
 * A session's system path as the optimizer rule reads its catalog version token: resolved once
 * per configured value (qualified, checked to be a directory: [[IndexCatalog.systemPath]]), so
 * that each of the rule's passes — every fixed-point iteration of every query and subquery —
 * reads the token file and nothing else. The token itself is read on every call: an operation
 * committed by any session or process is seen by the next pass.
 */
final class CatalogRoot private (val configured: String, val path: Path, val conf: Configuration) {
  private val store = LogStore.forPath(path, conf)
  private val tokenPath = new Path(path, CatalogVersion.FileName)

  /** The current token ([[CatalogVersion.read]]). */
  def version(): Option[String] = store.read(tokenPath).map(_.trim)
}

object CatalogRoot {

  /**
   * `last` when it was resolved from the session's current `spark.hyperspace.system.path`,
   * else that path resolved now. The Hadoop configuration is the session's at resolution: the
   * rule only reads with it, and filesystems are cached by scheme and authority in any case.
   */
  def of(spark: SparkSession, last: Option[CatalogRoot]): CatalogRoot = {
    val configured = HyperspaceConf.systemPath(spark)
    last.filter(_.configured == configured).getOrElse {
      val catalog = new IndexCatalog(spark)
      new CatalogRoot(configured, catalog.systemPath, catalog.hadoopConf)
    }
  }
}
