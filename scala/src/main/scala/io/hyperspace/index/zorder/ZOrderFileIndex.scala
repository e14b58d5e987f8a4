package io.hyperspace.index.zorder

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

import io.hyperspace.index.FileRanges
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.index.dataskipping.{IndexSkips, RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.log.{Content, ContentFile, LogEntry}
import io.hyperspace.shims.FileListing

/**
 * The files of one Z-order index version that a query's filter can match, chosen when the query
 * is optimized from the ranges the log records ([[FileRanges.filesToRead]]): no listing and no
 * footer read at planning. What it left out is reported like a data skipping index's skips, so
 * `explain` and the skipped-files statistics show it.
 */
class ZOrderFileIndex(val entry: LogEntry, val kept: Seq[ContentFile], val stats: RelationSkippingStats)
  extends FileIndex with SkippedFilesIndex {

  private lazy val statuses: Seq[FileStatus] = kept.map { f =>
    new FileStatus(f.size, false, 1, 128L * 1024 * 1024, f.modificationTime, new Path(entry.content.pathOf(f)))
  }

  override def entries: Seq[LogEntry] = Seq(entry)
  override def rootPaths: Seq[Path] =
    entry.content.versionsUsed.toSeq.sorted.map(v => new Path(entry.content.root, Content.versionDirName(v)))
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    Seq(FileListing.directory(InternalRow.empty, statuses))
  override def inputFiles: Array[String] = statuses.map(_.getPath.toString).toArray
  override def refresh(): Unit = ()
  override def sizeInBytes: Long = kept.map(_.size).sum
  override def partitionSchema: StructType = new StructType()

  override def equals(other: Any): Boolean = other match {
    case o: ZOrderFileIndex => o.entry.identity == entry.identity && o.kept.map(_.path) == kept.map(_.path)
    case _ => false
  }
  override def hashCode(): Int = (entry.identity, kept.map(_.path)).hashCode()

  override def toString: String =
    s"ZOrderFileIndex[${entry.name} v${entry.content.dataVersion}: ${stats.filesRead} of ${stats.filesTotal} files]"
}

object ZOrderFileIndex {

  /** The relation reading `entry`'s files whose ranges can satisfy all of `filters`. */
  def relation(spark: SparkSession, entry: LogEntry, filters: Seq[Expression]): IndexHadoopFsRelation = {
    val all = entry.content.files
    val kept = FileRanges.filesToRead(entry, ZOrderCoveringIndex.rangedColumns(entry.index), filters)
    val (filesSkipped, bytesSkipped) = (all.size - kept.size, all.map(_.size).sum - kept.map(_.size).sum)
    val stats = RelationSkippingStats(
      relation = s"index ${entry.name}",
      filter = filters.map(_.sql).mkString(" AND "),
      filesTotal = all.size,
      bytesTotal = all.map(_.size).sum,
      filesSkipped = filesSkipped,
      bytesSkipped = bytesSkipped,
      indexes = Seq(IndexSkips(entry.name, entry.id, filesSkipped, bytesSkipped, Nil)))
    new IndexHadoopFsRelation(entry, spark, new ZOrderFileIndex(entry, kept, stats), None)
  }

  /** The files of `entry` a filter with conjuncts `filters` reads: those whose ranges can match. */
  def filesToRead(entry: LogEntry, filters: Seq[Expression]): Seq[ContentFile] =
    FileRanges.filesToRead(entry, ZOrderCoveringIndex.rangedColumns(entry.index), filters)
}
