package io.hyperspace.index.dataskipping

import org.apache.spark.sql.execution.datasources.FileIndex

import io.hyperspace.log.LogEntry
import io.hyperspace.sources.FilteredFileIndex

/**
 * A relation's file index that data skipping indexes pruned: which index versions did, and the
 * statistics reported for the query. A plain file listing's is a [[DataSkippingFileIndex]]; a
 * table format's is the format provider's own (it keeps the format's pruning and row masks).
 */
trait SkippedFilesIndex {

  /** The index versions that did the skipping (for explain). */
  def entries: Seq[LogEntry]

  /** The statistics reported for the query. */
  def stats: RelationSkippingStats

  /**
   * Whether join pruning made it at run time, for a join's keys: it is not redone when adaptive
   * execution optimizes the rest of the query again after a later stage.
   */
  def forJoin: Boolean = false
}

object SkippedFilesIndex {

  /** The index versions that pruned `location` already (a listing narrowed again keeps naming them). */
  def entriesOf(location: FileIndex): Seq[LogEntry] = location match {
    case s: SkippedFilesIndex => s.entries
    case _ => Nil
  }
}

/**
 * A source's own file listing (`delegate`) without the files data skipping indexes ruled out
 * for a query (`skipped`, paths as the listing spells them): what the data skipping rule puts in
 * place of a relation's location. Everything else — partition values, schema, read options, the
 * query plan — stays as it was. Files not in `skipped` (including ones the index never saw) are
 * always listed.
 *
 * @param entries the index versions that did the skipping (for explain)
 * @param stats   the statistics reported for the query
 * @param forJoin whether join pruning made it at run time, for a join's keys (it is not redone
 *                when adaptive execution optimizes the rest of the query again)
 */
class DataSkippingFileIndex(
    delegate: FileIndex,
    val skipped: Set[String],
    val entries: Seq[LogEntry],
    val stats: RelationSkippingStats,
    override val forJoin: Boolean = false) extends FilteredFileIndex(delegate) with SkippedFilesIndex {

  override protected def keeps(path: String): Boolean = !skipped.contains(path)

  override def equals(other: Any): Boolean = other match {
    case o: DataSkippingFileIndex => o.delegate == delegate && o.skipped == skipped
    case _ => false
  }

  override def hashCode(): Int = (delegate, skipped).hashCode()

  override def toString: String =
    s"DataSkippingFileIndex(${stats.filesRead} of ${stats.filesTotal} files; " +
      s"${entries.map(_.name).mkString(", ")})"
}

object DataSkippingFileIndex {
  /** `index` without a data skipping wrapper: the source's full listing. */
  def unwrap(index: FileIndex): FileIndex = index match {
    case d: DataSkippingFileIndex => d.delegate
    case other => other
  }
}
