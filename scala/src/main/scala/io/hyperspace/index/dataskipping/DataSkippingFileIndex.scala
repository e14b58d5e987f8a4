package io.hyperspace.index.dataskipping

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

import io.hyperspace.log.LogEntry

/**
 * A source's own file listing (`delegate`) without the files data skipping indexes ruled out
 * for a query (`skipped`, paths as the listing spells them): what the data skipping rule puts in
 * place of a relation's location. Everything else — partition values, schema, read options, the
 * query plan — stays as it was. Files not in `skipped` (including ones the index never saw) are
 * always listed.
 *
 * @param entries the index versions that did the skipping (for explain)
 * @param stats   the statistics reported for the query
 */
class DataSkippingFileIndex(
    val delegate: FileIndex,
    val skipped: Set[String],
    val entries: Seq[LogEntry],
    val stats: RelationSkippingStats) extends FileIndex {

  override def rootPaths: Seq[Path] = delegate.rootPaths

  override def listFiles(
      partitionFilters: Seq[Expression],
      dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    delegate.listFiles(partitionFilters, dataFilters)
      .map(dir => dir.copy(files = dir.files.filterNot(f => skipped.contains(f.getPath.toString))))
      .filter(_.files.nonEmpty)

  override def inputFiles: Array[String] =
    listFiles(Nil, Nil).flatMap(_.files).map(_.getPath.toUri.toString).toArray

  override def refresh(): Unit = delegate.refresh()

  // What the scan reads, so Spark's size estimates (e.g. broadcast decisions) see the pruning.
  override def sizeInBytes: Long = listFiles(Nil, Nil).flatMap(_.files).map(_.getLen).sum

  override def partitionSchema: StructType = delegate.partitionSchema

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
