package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.index.{BoundedCache, IndexDataFiles}
import io.hyperspace.log.{IndexLogManager, LogEntry, States}
import io.hyperspace.sources.{ErasedFiles, VersionedTable}

/**
 * Which version of an index serves a scan of a table at a given table version (time travel).
 * An index's log entries record the table version each was built from (its signature); a scan
 * is served by the newest ACTIVE entry built from that version or an older one (an older one is
 * then stale, made up for by hybrid scan where allowed), and never by one built from a newer
 * version: that one may hold rows the table did not have yet, and hybrid scan cannot take rows
 * away from an index that has no lineage.
 */
object TableVersions {

  // (index identity, table version) -> the entry to use, or None. Entries are immutable, and the
  // data of an older entry only goes away through vacuum, which the read of its files notices.
  private val chosen = new BoundedCache[((String, String, Long), Long), Option[LogEntry]](256)

  /** The table version `entry` was built from, when it was built from a table format's table. */
  def versionOf(entry: LogEntry): Option[Long] = entry.tableVersion

  /**
   * The entry of `entry`'s index that serves a scan of `table`: `entry` itself unless it was
   * built from a newer table version, else the newest older ACTIVE entry of the same index whose
   * data is all there, else the reason there is none.
   */
  def entryFor(spark: SparkSession, entry: LogEntry, table: Option[VersionedTable]): Either[Reason, LogEntry] =
    (table, versionOf(entry)) match {
      case (Some(t), Some(built)) if built > t.version =>
        chosen.getOrElseUpdate((entry.identity, t.version), olderEntry(spark, entry, t.version))
          .toRight(Reason.NewerThanTable(built, t.version))
      case _ => Right(entry)
    }

  // (table root, version) -> a file of that version the table no longer holds. Only erasures are
  // kept: a file once removed does not come back, while a present one may be vacuumed any time.
  private val erased = new BoundedCache[(String, Long), String](256)

  /**
   * Why no index may serve a time travel scan of `table`: a file of the version it reads is gone
   * (vacuumed), so the source's own read fails, and neither an index's copy of its rows nor its
   * sketches (which would skip the missing file) may answer instead. Only time travel asks: a
   * table never removes the files of its newest version.
   */
  def erasure(spark: SparkSession, table: Option[VersionedTable]): Option[Reason.SourceVersionErased] =
    table.filter(_.isTimeTravel).flatMap { t =>
      erased.get((t.root, t.version)).orElse {
        val missing = ErasedFiles.firstMissing(t.files.map(_.path), spark.sessionState.newHadoopConf())
        missing.foreach(m => erased.put((t.root, t.version), m))
        missing
      }.map(Reason.SourceVersionErased(t.version, _))
    }

  private def olderEntry(spark: SparkSession, latest: LogEntry, tableVersion: Long): Option[LogEntry] =
    try {
      val log = new IndexLogManager(new Path(latest.content.root), spark.sessionState.newHadoopConf())
      log.entryIds.filter(_ < latest.id).reverseIterator
        .flatMap(id => scala.util.Try(log.entry(id)).toOption.flatten)
        .filter(e => e.incarnation == latest.incarnation && e.state == States.ACTIVE && e.index == latest.index)
        .find(e => versionOf(e).exists(_ <= tableVersion))
        .filter(e => IndexDataFiles.missing(spark, e).isEmpty)
    } catch {
      case NonFatal(_) => None
    }
}
