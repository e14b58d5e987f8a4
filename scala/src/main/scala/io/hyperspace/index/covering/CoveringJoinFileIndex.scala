package io.hyperspace.index.covering

import org.apache.spark.sql.execution.datasources.FileIndex

import io.hyperspace.index.dataskipping.{RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.log.LogEntry
import io.hyperspace.sources.FilteredFileIndex

/**
 * A source's listing (`delegate`: Spark's own, or one data skipping already pruned for a filter)
 * narrowed by join pruning at run time to the files a covering index's buckets name for the join
 * keys of a broadcast, plus the files the index does not cover (`kept`, paths as the listing
 * spells them): [[io.hyperspace.rules.CoveringJoinProbe]]. A [[SkippedFilesIndex]], so explain,
 * whyNot and the skipping statistics see it like data skipping's.
 */
class CoveringJoinFileIndex(
    delegate: FileIndex,
    val kept: Set[String],
    val entry: LogEntry,
    val stats: RelationSkippingStats) extends FilteredFileIndex(delegate) with SkippedFilesIndex {

  override protected def keeps(path: String): Boolean = kept.contains(path)

  override def entries: Seq[LogEntry] = SkippedFilesIndex.entriesOf(delegate) :+ entry

  override def equals(other: Any): Boolean = other match {
    case o: CoveringJoinFileIndex => o.delegate == delegate && o.kept == kept
    case _ => false
  }

  override def hashCode(): Int = (delegate, kept).hashCode()

  override def toString: String =
    s"CoveringJoinFileIndex(${stats.filesRead} of ${stats.filesTotal} files; join keys by the buckets of ${entry.name})"
}
