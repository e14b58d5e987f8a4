package io.hyperspace.sources

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

/**
 * The files of `delegate` (a source's own listing) whose paths are in `paths`: a scan of some
 * files of a source that keeps the source's partition values, schema and read options — what
 * hybrid scan reads for appended files and refresh reads for the files it indexes.
 */
class SelectedFilesIndex(val delegate: FileIndex, val paths: Set[String]) extends FileIndex {

  override def rootPaths: Seq[Path] = delegate.rootPaths

  override def listFiles(
      partitionFilters: Seq[Expression],
      dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    delegate.listFiles(partitionFilters, dataFilters)
      .map(dir => dir.copy(files = dir.files.filter(f => paths.contains(f.getPath.toString))))
      .filter(_.files.nonEmpty)

  override def inputFiles: Array[String] =
    listFiles(Nil, Nil).flatMap(_.files).map(_.getPath.toUri.toString).toArray

  override def refresh(): Unit = delegate.refresh()

  override def sizeInBytes: Long =
    listFiles(Nil, Nil).flatMap(_.files).map(_.getLen).sum

  override def partitionSchema: StructType = delegate.partitionSchema

  override def toString: String = s"SelectedFilesIndex(${paths.size} of ${delegate.rootPaths.mkString(", ")})"
}
