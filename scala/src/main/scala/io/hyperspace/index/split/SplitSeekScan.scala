package io.hyperspace.index.split

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory, PartitionedFile}
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
class SplitSeekParquetFormat(
    val rowGroups: Map[String, Seq[RowGroupRange]],
    val fingerprints: Map[String, Long] = Map.empty,
    val indexName: String = "")
  extends ParquetFileFormat {

  override def buildReaderWithPartitionValues(
      sparkSession: SparkSession,
      dataSchema: StructType,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = {
    val read = super.buildReaderWithPartitionValues(
      sparkSession, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf)
    restrict(read, check(hadoopConf))
  }

  /** The check of the located files' fingerprints, opening them with `hadoopConf`. */
  def check(hadoopConf: Configuration): FingerprintCheck =
    new FingerprintCheck(indexName, fingerprints, fileLevel = false, hadoopConf,
      "it is read whole instead of at the located row groups")

  /**
   * `read`, a reader of Parquet file splits, made to read only the listed row groups; a file that
   * `check` finds changed since the build is read as `read` reads it (whole, over its splits).
   */
  def restrict(read: PartitionedFile => Iterator[InternalRow], check: FingerprintCheck)
      : PartitionedFile => Iterator[InternalRow] = {
    val groups = rowGroups
    (file: PartitionedFile) =>
      groups.get(file.toPath.toString) match {
        case None => read(file)
        case Some(_) if !check.current(file.toPath.toString, file.fileSize) => read(file)
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
    case o: SplitSeekParquetFormat => o.rowGroups == rowGroups && o.fingerprints == fingerprints
    case _ => false
  }

  override def hashCode(): Int = (rowGroups, fingerprints).hashCode()
}

/**
 * What a seek decided for one scan: the indexed files it reads some row groups of, the files it
 * reads whole (appended after the build, or rewritten), the statistics reported for it, whether
 * its locations were read from the index files directly ([[SplitIndexLookup]]) rather than by a
 * query over the index (explain says which), and the recorded [[SourceFingerprint]]s of the
 * located files (by path), checked before they are read.
 */
case class SeekPlan(
    rowGroups: Map[String, Seq[RowGroupRange]],
    wholeFiles: Set[String],
    bytesToRead: Long,
    stats: RelationSkippingStats,
    directLookup: Boolean = false,
    fingerprints: Map[String, Long] = Map.empty) {
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
    val entry: LogEntry,
    hadoopConf: () => Configuration) extends FilteredFileIndex(delegate) with SkippedFilesIndex {

  private val kept = plan.filesRead

  override protected def keeps(path: String): Boolean = kept.contains(path)

  /** The located files found changed since the build by the last listing (then the whole listing was read). */
  @volatile private var changed: Set[String] = Set.empty

  def changedFiles: Set[String] = changed

  /**
   * The narrowed listing, unless a located file is not the one the index was built from (its
   * fingerprint differs under the same identity): then the source's whole listing, as a plain
   * scan reads it. A file changed in place says the listing's identities cannot be trusted for
   * this source, and a key the index located in it may now lie in a file it skipped (files
   * rewritten by one job). The check costs a small read of each located file.
   */
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val narrowed = super.listFiles(partitionFilters, dataFilters)
    if (plan.fingerprints.isEmpty) return narrowed
    val check = new FingerprintCheck(entry.name, plan.fingerprints, SplitIndex.fileLevel(entry.index), hadoopConf(),
      "the scan reads every file it lists instead of the located ones")
    val stale = narrowed.flatMap(_.files).filterNot(f => check.current(f.getPath.toString, f.getLen))
      .map(_.getPath.toString).toSet
    changed = stale
    if (stale.isEmpty) narrowed else delegate.listFiles(partitionFilters, dataFilters)
  }

  override def entries: Seq[LogEntry] = SkippedFilesIndex.entriesOf(delegate) :+ entry

  // After a fallback to the whole listing nothing was skipped.
  override def stats: RelationSkippingStats =
    if (changed.isEmpty) plan.stats
    else plan.stats.copy(filesSkipped = 0, bytesSkipped = 0L, indexes = Seq(SplitSeekStats.skips(entry, 0, 0L)))

  // What the scan reads, for Spark's size estimates: the row groups, not the files they lie in.
  override def sizeInBytes: Long = plan.bytesToRead

  override def equals(other: Any): Boolean = other match {
    case o: SplitSeekFileIndex => o.delegate == delegate && o.plan == plan
    case _ => false
  }

  override def hashCode(): Int = (delegate, plan).hashCode()

  override def toString: String =
    s"SplitSeekFileIndex(${plan.rowGroups.values.map(_.size).sum} row groups of ${plan.rowGroups.size} files, " +
      s"${plan.wholeFiles.size} whole files; ${entry.name}${if (plan.directLookup) ", index read directly" else ""}" +
      (if (changed.isEmpty) ")" else s"; ${changed.size} located files changed since the build: every file read)")
}

object SplitSeekStats {
  /** One index's part in [[RelationSkippingStats]]. */
  def skips(entry: LogEntry, filesSkipped: Int, bytesSkipped: Long): IndexSkips =
    IndexSkips(entry.name, entry.id, filesSkipped, bytesSkipped, Nil)
}
