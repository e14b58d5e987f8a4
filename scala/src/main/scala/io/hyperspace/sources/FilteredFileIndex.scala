package io.hyperspace.sources

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

import io.hyperspace.shims.FileListing

/**
 * A source's own file listing (`delegate`) narrowed to the files whose path (as the listing
 * spells it) `keeps` accepts; partition values, schema and read options stay the source's.
 * Hybrid scan's appended files ([[SelectedFilesIndex]]) and data skipping's pruned scans are
 * such narrowed listings.
 */
abstract class FilteredFileIndex(val delegate: FileIndex) extends FileIndex {

  /** Whether the file at `path` stays in the listing. */
  protected def keeps(path: String): Boolean

  override def rootPaths: Seq[Path] = delegate.rootPaths

  override def listFiles(
      partitionFilters: Seq[Expression],
      dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    delegate.listFiles(partitionFilters, dataFilters)
      .map(dir => FileListing.filterFiles(dir)(f => keeps(f.getPath.toString)))
      .filter(_.files.nonEmpty)

  override def inputFiles: Array[String] =
    listFiles(Nil, Nil).flatMap(_.files).map(_.getPath.toUri.toString).toArray

  override def refresh(): Unit = delegate.refresh()

  // What the scan reads, so Spark's size estimates (e.g. broadcast decisions) see the narrowing.
  override def sizeInBytes: Long = listFiles(Nil, Nil).flatMap(_.files).map(_.getLen).sum

  override def partitionSchema: StructType = delegate.partitionSchema
}
