package io.hyperspace.actions

import java.time.Instant

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

import io.hyperspace.HyperspaceException
import io.hyperspace.actions.DataVersions.Use
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.{Content, IndexLogManager, LogEntry, States}
import io.hyperspace.sources.ErasedFiles

/**
 * Vacuum removes the data versions an index no longer uses, once they have been unused for
 * `retentionMs` (`spark.hyperspace.index.vacuum.retention`, 7 days by default, as Delta keeps
 * the files a table no longer references): queries planned on an earlier version, and queries
 * still running on it, in any session or process, keep working. "Unused since" comes from the
 * log: the time of the first stable entry that stopped reading the version (see
 * [[DataVersions.uses]]). Versions only a failed or cancelled operation wrote were never read and
 * go at once.
 *
 * An ACTIVE index stays ACTIVE. A DELETED index's data was in use until the delete, so the same
 * retention counts from the delete: once every version is gone, the index ends DOESNOTEXIST and
 * its log is removed, freeing the name; before that, vacuum removes what has expired and the index
 * stays DELETED (restorable). Nothing but `v__=N` directories the log names and the log's own
 * files is ever removed: a file someone else put in the index directory stays, and so does the
 * directory then.
 */
class VacuumAction(spark: SparkSession, indexLog: IndexLogManager, indexName: String, retentionMs: Long)
  extends Action(spark, indexLog, indexName) with Logging {

  override def operation: String = Operations.VACUUM
  override protected def transientState: String = States.VACUUMING

  // Decided in validate, while no other operation can change the index.
  private var startedFrom: String = States.DELETED
  private var removable: Seq[Int] = Nil
  private var retainedUntil: Seq[(Int, Long)] = Nil

  /** The data versions the run removes. */
  def removedVersions: Seq[Int] = removable

  override protected def finalState: String =
    if (startedFrom == States.ACTIVE) States.ACTIVE
    else if (retainedUntil.isEmpty) States.DOESNOTEXIST
    else States.DELETED

  override protected def alreadyDone(base: Option[LogEntry]): Boolean =
    base.forall(_.state == States.DOESNOTEXIST)

  override protected def validate(base: Option[LogEntry]): Unit = {
    Action.requireState(indexName, operation, base, Set(States.ACTIVE, States.DELETED), "")
    startedFrom = base.get.state
    val now = System.currentTimeMillis()
    val uses = usesDespiteDamage(now)
    val present = DataVersions.present(spark, indexLog).sorted
    present.filterNot(uses.contains).foreach { v =>
      logWarning(s"Vacuum of index '$indexName' keeps ${Content.versionDirName(v)}: no log entry names it.")
    }
    val decided = present.flatMap(v => uses.get(v).map(v -> _))
    lazy val erased = erasedVersions(decided.collect { case (v, Use.UnusedSince(_)) => v }.toSet)
    removable = decided.collect {
      case (v, Use.NeverRead) => v
      case (v, Use.UnusedSince(t)) if now - t >= retentionMs || erased.contains(v) => v
    }
    retainedUntil = decided.collect {
      case (v, Use.Current) => v -> -1L
      case (v, Use.UnusedSince(t)) if now - t < retentionMs && !erased.contains(v) => v -> (t + retentionMs)
    }
  }

  /**
   * Of `unused` (data versions no longer current), those only ever read for table versions the
   * table has erased: every ACTIVE entry reading one was built from a table version some of whose
   * files are gone (Delta's VACUUM). Reads of those table versions fail without the index and no
   * longer use it ([[io.hyperspace.rules.TableVersions]]), so its copy of their rows goes now,
   * whatever the index's own retention: an erasure of the table erases the index's copy too.
   */
  private def erasedVersions(unused: Set[Int]): Set[Int] = {
    if (unused.isEmpty) Set.empty
    else {
      val conf = spark.sessionState.newHadoopConf()
      val readers = indexLog.readableEntries.filter(_.state == States.ACTIVE)
      unused.filter { v =>
        val reading = readers.filter(_.content.versionsUsed.contains(v))
        reading.nonEmpty && reading.forall { e =>
          e.tableVersion.isDefined && ErasedFiles.firstMissing(e.source.files.map(_.path), conf).isDefined
        }
      }
    }
  }

  /**
   * [[DataVersions.uses]] of the readable entries. A damaged entry (a CORRUPT index's newest, or
   * an old one) cannot say which versions it read, so every version counts as in use until the
   * entry after it was written (until now when none follows): vacuum then never removes data a
   * damaged entry may have served, and a CORRUPT index can still be deleted and vacuumed.
   */
  private def usesDespiteDamage(now: Long): Map[Int, DataVersions.Use] = {
    val readable = indexLog.readableEntries
    val readableIds = readable.map(_.id).toSet
    val damagedUntil = indexLog.entryIds.filterNot(readableIds).map { id =>
      readable.find(_.id > id).map(_.timestamp).getOrElse(now)
    }.reduceOption(_ max _)
    DataVersions.uses(readable).map {
      case (v, DataVersions.Use.NeverRead) if damagedUntil.isDefined =>
        v -> DataVersions.Use.UnusedSince(damagedUntil.get)
      case (v, DataVersions.Use.UnusedSince(t)) => v ->
          DataVersions.Use.UnusedSince(damagedUntil.fold(t)(math.max(t, _)))
      case other => other
    }
  }

  override protected def upToDate(base: Option[LogEntry]): Boolean =
    removable.isEmpty && finalState == startedFrom

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry =
    base.get.copy(id = id)

  override protected def op(begin: LogEntry): LogEntry = {
    removable.foreach(v => DataVersions.delete(spark, new Path(indexLog.indexPath, Content.versionDirName(v))))
    if (finalState == States.DOESNOTEXIST) begin.copy(content = begin.content.copy(files = Nil))
    else begin
  }

  override protected def afterCommit(committed: LogEntry): Unit = {
    if (committed.state == States.DOESNOTEXIST) VacuumAction.removeIndexDirectory(spark, indexLog)
  }

  /** One sentence on what the run did and what it kept. */
  def describe(committed: Boolean): String = {
    val removed =
      if (!committed || removable.isEmpty) "removed no data version"
      else s"removed data version(s) ${removable.mkString(", ")}"
    val waiting = retainedUntil.filter(_._2 >= 0)
    val kept =
      if (waiting.isEmpty) ""
      else s"; kept ${waiting.map(_._1).mkString(", ")} until ${Instant.ofEpochMilli(waiting.map(_._2).max)} " +
        s"(unused for less than the retention ${VacuumAction.hours(retentionMs)} h, " +
        s"${HyperspaceConf.VACUUM_RETENTION.key})"
    val outcome = finalState match {
      case States.DOESNOTEXIST if committed => s"Vacuumed index '$indexName': it is removed and the name is free"
      case States.DELETED => s"Vacuumed index '$indexName': it stays DELETED (restorable) until its data may go"
      case _ => s"Vacuumed index '$indexName'"
    }
    s"$outcome; $removed$kept."
  }
}

object VacuumAction {

  private[actions] def hours(ms: Long): String =
    f"${ms / 3600000.0}%.2f".stripSuffix("0").stripSuffix("0").stripSuffix(".")

  /**
   * The retention a vacuum runs with: `retainHours` if given, else the configured one. A shorter
   * one than configured could remove data still read by queries planned or running elsewhere,
   * so it is refused unless `spark.hyperspace.index.vacuum.retentionCheck.enabled` is false.
   */
  def retentionMs(spark: SparkSession, indexName: String, retainHours: Option[Double]): Long = {
    val configured = HyperspaceConf.vacuumRetentionMs(spark)
    retainHours match {
      case None => configured
      case Some(h) =>
        if (h.isNaN || h < 0 || h.isInfinite) {
          throw new HyperspaceException(
            s"Cannot vacuum index '$indexName': retain_hours must be a non-negative number of hours, not $h.")
        }
        val ms = math.round(h * 3600000.0)
        if (ms < configured && HyperspaceConf.vacuumRetentionCheckEnabled(spark)) {
          throw new HyperspaceException(
            s"Cannot vacuum index '$indexName' with retain_hours=$h: that is shorter than the " +
              s"retention of ${hours(configured)} hours (${HyperspaceConf.VACUUM_RETENTION.key}), " +
              "and would remove data versions that queries planned or still running, in this or " +
              "other sessions, may be reading, failing them. If you are sure none are, set " +
              s"${HyperspaceConf.VACUUM_RETENTION_CHECK_ENABLED.key}=false first (or lower the retention).")
        }
        ms
    }
  }

  /**
   * Removes a vacuumed index's log, freeing its name: the `latestStable` pointer first (readers
   * then find the DOESNOTEXIST entry by scanning), then the entries from the oldest, so a crash
   * midway still leaves DOESNOTEXIST as the newest entry and the next vacuum finishes the job.
   * Only the log's own files are deleted, then the log directory and the index directory if
   * they are empty: anything else someone put there stays.
   */
  def removeIndexDirectory(spark: SparkSession, indexLog: IndexLogManager): Unit = {
    val fs = indexLog.indexPath.getFileSystem(spark.sessionState.newHadoopConf())
    if (fs.exists(indexLog.logPath)) {
      val pointer = new Path(indexLog.logPath, IndexLogManager.LatestStableName)
      if (fs.exists(pointer)) fs.delete(pointer, false)
      indexLog.entryIds.foreach(id => fs.delete(new Path(indexLog.logPath, id.toString), false))
      fs.listStatus(indexLog.logPath).filter(s => s.isFile && isLogStoreLeftover(s.getPath.getName))
        .foreach(s => fs.delete(s.getPath, false))
      deleteIfEmpty(fs, indexLog.logPath)
    }
    deleteIfEmpty(fs, indexLog.indexPath)
  }

  /**
   * The data version directories of an index directory that lost its log (`_hyperspace_log`
   * removed, its `v__=N` directories left): every child is a data version or a dot-file, and no
   * log entry exists. Empty when the directory holds anything else or has a log.
   */
  def loglessVersions(spark: SparkSession, indexLog: IndexLogManager): Seq[Path] = {
    val fs = indexLog.indexPath.getFileSystem(spark.sessionState.newHadoopConf())
    if (!fs.exists(indexLog.indexPath) || indexLog.entryIds.nonEmpty) Nil
    else {
      val children = fs.listStatus(indexLog.indexPath).toSeq
      val versions = children.filter(c => c.isDirectory && Content.versionOf(c.getPath.getName).isDefined)
      val others = children.filterNot(versions.contains).filterNot { c =>
        c.getPath.getName.startsWith(".") ||
        (c.getPath.getName == IndexLogManager.LogDirName && fs.listStatus(c.getPath).isEmpty)
      }
      if (others.nonEmpty) Nil else versions.map(_.getPath)
    }
  }

  /**
   * Vacuum of an index directory whose log was lost: no entry says when its data versions were
   * last read, so, as Delta's VACUUM does for files its log no longer names, a version goes once
   * its newest file is older than the retention; the directory goes with the last one, freeing
   * the name. Returns the versions removed and those kept.
   */
  def removeLoglessData(spark: SparkSession, indexLog: IndexLogManager,
      retentionMs: Long): (Seq[String], Seq[String]) = {
    val fs = indexLog.indexPath.getFileSystem(spark.sessionState.newHadoopConf())
    val now = System.currentTimeMillis()
    val (expired, kept) = loglessVersions(spark, indexLog).partition { dir =>
      val files = fs.listFiles(dir, true)
      var newest = fs.getFileStatus(dir).getModificationTime
      while (files.hasNext) newest = math.max(newest, files.next().getModificationTime)
      now - newest >= retentionMs
    }
    expired.foreach { dir =>
      // A create may have started meanwhile: its log makes the directory an index again.
      if (indexLog.entryIds.isEmpty) DataVersions.delete(spark, dir)
    }
    if (kept.isEmpty && indexLog.entryIds.isEmpty) removeIndexDirectory(spark, indexLog)
    (expired.map(_.getName).sorted, kept.map(_.getName).sorted)
  }

  // Temporary files of the log store (`.<name>.<uuid>.tmp`) and Hadoop checksum files of log
  // files and of those (`.<name>.crc`, `..<name>.<uuid>.tmp.crc`).
  private val LeftoverName = """\.\.?(\d+|latestStable)(\.[0-9a-fA-F-]{36}\.tmp)?(\.crc)?""".r

  private def isLogStoreLeftover(name: String): Boolean =
    LeftoverName.matches(name) && (name.endsWith(".tmp") || name.endsWith(".crc"))

  private def deleteIfEmpty(fs: FileSystem, dir: Path): Unit =
    if (fs.exists(dir) && fs.listStatus(dir).isEmpty) fs.delete(dir, false)
}
