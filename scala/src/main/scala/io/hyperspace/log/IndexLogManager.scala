package io.hyperspace.log

import java.io.IOException

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import io.hyperspace.HyperspaceCorruptedLogException

/**
 * Reads and appends the log of one index (`<index>/_hyperspace_log/`). Entries are immutable;
 * appending entry `n` is an atomic put-if-absent, so it doubles as the lock of an operation.
 *
 * The index lives where its log is: every entry read is bound to `indexPath` (its
 * `content.root` is replaced by it), so an index directory copied or moved elsewhere reads,
 * writes and deletes only there, never at the place its entries were written.
 *
 * Only files named `0` or `[1-9][0-9]*` (ASCII) are entries; anything else in the log directory
 * (temporary files, `latestStable`, stray copies like `0099`) is ignored, and a directory with
 * an entry's name only keeps that id from being used.
 */
class IndexLogManager(val indexPath: Path, hadoopConf: Configuration) {

  val logPath: Path = new Path(indexPath, IndexLogManager.LogDirName)
  private val latestStablePath = new Path(logPath, IndexLogManager.LatestStableName)
  // The store's root is the system path the index is in (where an S3 store keeps its probe).
  private val store = LogStore.forPath(Option(indexPath.getParent).getOrElse(indexPath), hadoopConf)
  private def fs: FileSystem = indexPath.getFileSystem(hadoopConf)

  /** (entry file ids, every id-like name including directories), both ascending. */
  private def listing: (Seq[Long], Seq[Long]) =
    if (!fs.exists(logPath)) (Nil, Nil)
    else {
      val named = fs.listStatus(logPath).toSeq
        .flatMap(s => IndexLogManager.idOf(s.getPath.getName).map(id => (id, s.isFile)))
      (named.filter(_._2).map(_._1).sorted, named.map(_._1).sorted)
    }

  /** The ids of the entries present, ascending. */
  def entryIds: Seq[Long] = listing._1

  /** The id the next entry must take: above every entry and every name that looks like one. */
  def nextId: Long = listing._2.lastOption.map(_ + 1).getOrElse(0L)

  /**
   * Entry `id`, if it exists; an entry that cannot be read or parsed fails with a
   * [[HyperspaceCorruptedLogException]] naming its file.
   */
  def entry(id: Long): Option[LogEntry] = entryText(id).map(parseEntry(id, _))

  /** The stored text of entry `id`, if it exists (what [[entry]] parses; caches key on it). */
  def entryText(id: Long): Option[String] = {
    val path = entryPath(id)
    try store.read(path)
    catch {
      case e: IOException =>
        throw new HyperspaceCorruptedLogException(
          s"Corrupted index log entry $path: it cannot be read (${e.getMessage}).", e)
    }
  }

  /** Entry `id` parsed from `json`, its [[entryText]]. */
  def parseEntry(id: Long, json: String): LogEntry = {
    val path = entryPath(id)
    val e = LogEntry.fromJson(json, path.toString)
    if (e.id != id) {
      throw new HyperspaceCorruptedLogException(
        s"Corrupted index log entry $path: it says id ${e.id} but is stored as entry $id.")
    }
    e.copy(content = e.content.copy(root = indexPath.toString))
  }

  /** Every entry, by id; fails on a damaged one. */
  def entries: Seq[LogEntry] = entryIds.flatMap(entry)

  /** Every entry that can be read, by id (damaged ones skipped). */
  def readableEntries: Seq[LogEntry] = entryIds.flatMap(readable)

  private def readable(id: Long): Option[LogEntry] =
    try entry(id)
    catch { case NonFatal(_) => None }

  /** The newest entry, stable or not; fails if it is damaged. */
  def latest: Option[LogEntry] = entryIds.lastOption.flatMap(entry)

  /** Why the newest entry cannot be read, if it cannot (the index is then CORRUPT). */
  def damage: Option[HyperspaceCorruptedLogException] =
    entryIds.lastOption.flatMap { id =>
      try { entry(id); None }
      catch { case e: HyperspaceCorruptedLogException => Some(e) }
    }

  /**
   * The newest stable entry: the one `latestStable` names when that pointer is readable and
   * right, else found by scanning back from the newest entry (damaged older entries are
   * skipped). Fails if the newest entry is damaged: what it said is unknown, so readers must
   * not fall back to an older state of the index.
   */
  def latestStable: Option[LogEntry] = {
    val ids = entryIds
    ids.lastOption.flatMap(entry) match { // fails on a damaged newest entry
      case Some(newest) if newest.isStable => Some(newest)
      case _ =>
        // The pointer is updated after the entry is written: trust it only if nothing newer is stable.
        pointer.flatMap(readable).filter(_.isStable) match {
          case Some(e) if !ids.exists(id => id > e.id && readable(id).exists(_.isStable)) => Some(e)
          case _ => ids.reverseIterator.flatMap(readable).find(_.isStable)
        }
    }
  }

  /**
   * The newest stable entry that can be read, whatever the entries after it: what delete and
   * vacuum of a CORRUPT index start from.
   */
  def newestReadableStable: Option[LogEntry] =
    entryIds.reverseIterator.flatMap(readable).find(_.isStable)

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
    scala.util.Try(store.read(latestStablePath)).toOption.flatten
      .flatMap(s => IndexLogManager.idOf(s.trim))

  /** Appends `e` if its id is free; false if another writer got that id first. */
  def tryAppend(e: LogEntry): Boolean = store.putIfAbsent(entryPath(e.id), e.toJson)

  /** Points `latestStable` at `id` (atomically replaced). */
  def setLatestStable(id: Long): Unit = store.replace(latestStablePath, id.toString)

  /** The directory of data version `version` of this index. */
  def versionPath(version: Int): Path = new Path(indexPath, Content.versionDirName(version))

  private def entryPath(id: Long): Path = new Path(logPath, id.toString)
}

object IndexLogManager {
  val LogDirName = "_hyperspace_log"
  val LatestStableName = "latestStable"

  private val EntryName = "0|[1-9][0-9]{0,18}".r

  /** The id a log file name denotes: `0` or `[1-9][0-9]*` in ASCII, within a Long. */
  def idOf(name: String): Option[Long] = name match {
    case EntryName() => name.toLongOption
    case _ => None
  }
}
