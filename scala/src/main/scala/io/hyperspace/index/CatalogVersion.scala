package io.hyperspace.index

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.hyperspace.log.LogStore

/**
 * A token under the system path (`_hyperspace_catalog_version`) that every committed operation
 * replaces. Query planning reads this one small file to know whether its cached view of the
 * indexes is still current, instead of re-reading every index's log on every query — so
 * planning cost does not grow with the number of indexes, while changes made by any session or
 * process are still seen at the next query.
 */
object CatalogVersion {
  val FileName = "_hyperspace_catalog_version"

  private def path(systemPath: Path): Path = new Path(systemPath, FileName)

  /** The current token; None when no operation has run under this system path yet. */
  def read(systemPath: Path, conf: Configuration): Option[String] =
    LogStore.forPath(systemPath, conf).read(path(systemPath)).map(_.trim)

  /**
   * Replaces the token after an operation committed. Best effort: the operation has already
   * committed, so a failure here only delays other sessions seeing it until the next operation.
   */
  def bump(systemPath: Path, conf: Configuration): Unit =
    try LogStore.forPath(systemPath, conf).replace(path(systemPath), UUID.randomUUID().toString)
    catch { case NonFatal(_) => () }
}
