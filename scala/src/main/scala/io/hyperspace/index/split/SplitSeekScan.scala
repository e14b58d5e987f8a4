package io.hyperspace.index.split

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import io.hyperspace.index.dataskipping.{IndexSkips, RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.log.LogEntry
import io.hyperspace.sources.FilteredFileIndex

/**
 * A Parquet row group by its first byte and compressed size, as the footer gives them, and, for
 * an index that records row positions (kind version 3), its ordinal and the ranges of its rows
 * (first and last row within the row group, inclusive) that hold the located rows: a read in the
 * driver reads only the pages holding those ([[SplitPageRead]]). Empty `rows`: the whole group.
 */
case class RowGroupRange(start: Long, bytes: Long, ordinal: Int = -1, rows: Seq[(Long, Long)] = Nil) {
  // Parquet gives a row group to the split holding its midpoint (parquet-mr's range filter);
  // a split of exactly this range therefore reads this row group and no other.
  private[split] def midpoint: Long = start + bytes / 2
}

/**
 * Spark's Parquet format reading, of the files in `rowGroups`, only the listed row groups: each
 * split Spark plans for such a file reads those of its row groups whose midpoint lies in the
 * split, one at a time, as a split of exactly the row group's bytes (so Parquet's own
 * midpoint rule keeps that group alone). Files not in `rowGroups` are read whole. Everything
 * else — schema, vectorized reading, filter pushdown, `_metadata` (the row index stays the
 * file's) — is Spark's, which is why it is a subclass Spark's scan treats as Parquet.
 *
 * @param rowGroups per file, as `PartitionedFile.toPath.toString` spells it (the listing's spelling)
 */
class SplitSeekParquetFormat(val rowGroups: Map[String, Seq[RowGroupRange]]) extends ParquetFileFormat {

  override def buildReaderWithPartitionValues(
      sparkSession: SparkSession,
      dataSchema: StructType,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = {
    restrict(super.buildReaderWithPartitionValues(
        sparkSession, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf))
  }

  /** `read`, a reader of Parquet file splits, made to read only the listed row groups. */
  def restrict(read: PartitionedFile => Iterator[InternalRow]): PartitionedFile => Iterator[InternalRow] = {
    val groups = rowGroups
    (file: PartitionedFile) =>
      groups.get(file.toPath.toString) match {
        case None => read(file)
        case Some(ranges) =>
          val end = file.start + file.length
          ranges.iterator.filter(g => g.midpoint >= file.start && g.midpoint < end)
            .flatMap(g => read(file.copy(start = g.start, length = g.bytes)))
      }
  }

  /** Row groups whose located rows are known to ranges of rows (kind version 3). */
  def positioned: Int = rowGroups.valuesIterator.flatten.count(_.rows.nonEmpty)

  override def toString: String = {
    val groups = rowGroups.values.map(_.size).sum
    val p = positioned
    if (p == 0) s"SplitSeekParquet($groups row groups)"
    else s"SplitSeekParquet($groups row groups; $p with located row ranges: read in the driver, only their pages)"
  }

  override def equals(other: Any): Boolean = other match {
    case o: SplitSeekParquetFormat => o.rowGroups == rowGroups
    case _ => false
  }

  override def hashCode(): Int = rowGroups.hashCode()
}

/**
 * What a seek decided for one scan: the indexed files it reads some row groups of, the files it
 * reads whole (appended after the build, or rewritten), the statistics reported for it, and
 * whether its locations were read from the index files directly ([[SplitIndexLookup]]) rather
 * than by a query over the index (explain says which).
 */
case class SeekPlan(
    rowGroups: Map[String, Seq[RowGroupRange]],
    wholeFiles: Set[String],
    bytesToRead: Long,
    stats: RelationSkippingStats,
    directLookup: Boolean = false) {
  def filesRead: Set[String] = rowGroups.keySet ++ wholeFiles
}

/**
 * The source's listing (`delegate`) narrowed to the files a split index seek reads: the indexed
 * files with matching row groups, and the files the index does not cover. A
 * [[SkippedFilesIndex]], so explain, whyNot and the skipping statistics see it like data skipping.
 */
class SplitSeekFileIndex(
    delegate: FileIndex,
    val plan: SeekPlan,
    val entry: LogEntry) extends FilteredFileIndex(delegate) with SkippedFilesIndex {

  private val kept = plan.filesRead

  override protected def keeps(path: String): Boolean = kept.contains(path)

  override def entries: Seq[LogEntry] = SkippedFilesIndex.entriesOf(delegate) :+ entry

  override def stats: RelationSkippingStats = plan.stats

  // What the scan reads, for Spark's size estimates: the row groups, not the files they lie in.
  override def sizeInBytes: Long = plan.bytesToRead

  override def equals(other: Any): Boolean = other match {
    case o: SplitSeekFileIndex => o.delegate == delegate && o.plan == plan
    case _ => false
  }

  override def hashCode(): Int = (delegate, plan).hashCode()

  override def toString: String =
    s"SplitSeekFileIndex(${plan.rowGroups.values.map(_.size).sum} row groups of ${plan.rowGroups.size} files, " +
      s"${plan.wholeFiles.size} whole files; ${entry.name}${if (plan.directLookup) ", index read directly" else ""})"
}

object SplitSeekStats {
  /** One index's part in [[RelationSkippingStats]]. */
  def skips(entry: LogEntry, filesSkipped: Int, bytesSkipped: Long): IndexSkips =
    IndexSkips(entry.name, entry.id, filesSkipped, bytesSkipped, Nil)
}
