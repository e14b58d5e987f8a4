package io.hyperspace.rules

import org.apache.spark.sql.catalyst.expressions.Expression

import io.hyperspace.log.LogEntry
import io.hyperspace.sources.{RowScope, SourceChanges}

/**
 * An index a relation can read, and the changes of the relation's files since the index data
 * was built, which hybrid scan makes up for (none when the index is up to date). `scope`, when
 * the relation reads only some directories of the index's source (partition directories read
 * with `basePath`), says which of the index's rows are those directories' rows. `filters`, the
 * conjuncts of the filter the index is read under (when a filter rule chose it), let an index
 * whose files have ranges in the log read only the files that can match.
 */
case class IndexCandidate(
    entry: LogEntry,
    changes: SourceChanges,
    scope: Option[RowScope] = None,
    filters: Seq[Expression] = Nil) {

  /** Whether reading the index needs hybrid scan. */
  def isHybrid: Boolean = !changes.isEmpty

  /** Whether the index is read as it is: all its rows, nothing added or dropped. */
  def isExact: Boolean = !isHybrid && scope.isEmpty

  /** Bytes a query reads through this candidate: the index data and the appended source files. */
  def bytesRead: Long = entry.content.sizeInBytes + changes.appendedBytes

  /** The index name (ranking ties go to it). */
  def name: String = entry.name
}

object IndexCandidate {
  /** An up-to-date index: no hybrid scan. */
  def exact(entry: LogEntry): IndexCandidate = IndexCandidate(entry, SourceChanges(Nil, Nil))
}
