package io.hyperspace.index

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.LogStore

/**
 * A session's system path as the optimizer rule reads its catalog version token: resolved once
 * per session and configured value (qualified, checked to be a directory:
 * [[IndexCatalog.systemPath]]), so that each of the rule's passes — every fixed-point iteration of
 * every query and subquery — reads the token file and nothing else. The token itself is read on
 * every call: an operation committed by any session or process is seen by the next pass. `conf`
 * also serves the rule's other reads of index files (logs, listings of index data).
 */
final class CatalogRoot private (val configured: String, val path: Path, val conf: Configuration) {
  private val store = LogStore.forPath(path, conf)
  private val tokenPath = new Path(path, CatalogVersion.FileName)

  /** The current token ([[CatalogVersion.read]]). */
  def version(): Option[String] = store.read(tokenPath).map(_.trim)
}

object CatalogRoot {

  // Per session, not per rule: Spark builds the optimizer's rules anew for every run of the
  // optimizer (every query's planning), so a root held by the rule was resolved again per query —
  // a copy of the session's ~1,100 Hadoop settings and a status call each time. Weak keys: a
  // session no longer used is dropped with its root.
  private val resolved = java.util.Collections.synchronizedMap(new java.util.WeakHashMap[SparkSession, CatalogRoot]())

  /** The root of `spark`'s current system path: the one resolved by an earlier query of the session, if still current. */
  def forSession(spark: SparkSession): CatalogRoot = {
    val last = Option(resolved.get(spark))
    val root = of(spark, last)
    if (!last.contains(root)) resolved.put(spark, root)
    root
  }

  /** The root the optimizer rule last resolved for `spark`, if any. */
  private[hyperspace] def resolvedFor(spark: SparkSession): Option[CatalogRoot] = Option(resolved.get(spark))

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
