package io.hyperspace.log

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import io.hyperspace.HyperspaceException

/**
 * Reads and appends the log of one index (`<index>/_hyperspace_log/`). Entries are immutable;
 * appending entry `n` is an atomic put-if-absent, so it doubles as the lock of an operation.
 */
class IndexLogManager(val indexPath: Path, hadoopConf: Configuration) {

  val logPath: Path = new Path(indexPath, IndexLogManager.LogDirName)
  private val latestStablePath = new Path(logPath, IndexLogManager.LatestStableName)
  private val store = LogStore.forPath(indexPath, hadoopConf)
  private def fs: FileSystem = indexPath.getFileSystem(hadoopConf)

  /** The ids of the entries present, ascending. */
  def entryIds: Seq[Long] =
    if (!fs.exists(logPath)) Nil
    else fs.listStatus(logPath).toSeq.map(_.getPath.getName)
      .filter(n => n.nonEmpty && n.forall(_.isDigit))
      .flatMap(n => scala.util.Try(n.toLong).toOption)
      .sorted

  /** Entry `id`, if it exists; a corrupted entry fails with its file named. */
  def entry(id: Long): Option[LogEntry] = {
    val path = entryPath(id)
    store.read(path).map { json =>
      val e = LogEntry.fromJson(json, path.toString)
      if (e.id != id) {
        throw new HyperspaceException(
          s"Corrupted index log entry $path: it says id ${e.id} but is stored as entry $id.")
      }
      e
    }
  }

  /** Every entry, by id. */
  def entries: Seq[LogEntry] = entryIds.flatMap(entry)

  /** The newest entry, stable or not. */
  def latest: Option[LogEntry] = entryIds.lastOption.flatMap(entry)

  /**
   * The newest stable entry: the one `latestStable` names when that pointer is readable and
   * right, else found by scanning back from the newest entry.
   */
  def latestStable: Option[LogEntry] = {
    val pointed = pointer
      .flatMap(id => scala.util.Try(entry(id)).toOption.flatten)
      .filter(_.isStable)
    val ids = entryIds
    pointed match {
      // The pointer is updated after the entry is written: trust it only if nothing newer is stable.
      case Some(e) if !ids.exists(id => id > e.id && entry(id).exists(_.isStable)) => Some(e)
      case _ => ids.reverseIterator.flatMap(entry).find(_.isStable)
    }
  }

  /**
   * The id of the newest stable entry, cheaply: the `latestStable` pointer when no newer entry
   * exists, else found as [[latestStable]] does.
   */
  def latestStableId: Option[Long] = {
    val ids = entryIds
    pointer match {
      case Some(id) if ids.lastOption.contains(id) => Some(id)
      case _ => latestStable.map(_.id)
    }
  }

  /** The id `latestStable` holds, if the file is there and readable. */
  private def pointer: Option[Long] =
    store.read(latestStablePath).flatMap(s => scala.util.Try(s.trim.toLong).toOption)

  /** Appends `e` if its id is free; false if another writer got that id first. */
  def tryAppend(e: LogEntry): Boolean = store.putIfAbsent(entryPath(e.id), e.toJson)

  /** Points `latestStable` at `id` (atomically replaced). */
  def setLatestStable(id: Long): Unit = store.replace(latestStablePath, id.toString)

  private def entryPath(id: Long): Path = new Path(logPath, id.toString)
}

object IndexLogManager {
  val LogDirName = "_hyperspace_log"
  val LatestStableName = "latestStable"
}
