package io.hyperspace.index.split

import java.time.ZoneId

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.column.page.PageReadStore
import org.apache.parquet.filter2.compat.FilterCompat
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.api.InitContext
import org.apache.parquet.hadoop.metadata.ColumnPath
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.internal.column.columnindex.OffsetIndex
import org.apache.parquet.internal.filter2.columnindex.RowRanges
import org.apache.parquet.io.ColumnIOFactory
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.datasources.{DataSourceUtils, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.{ParquetOptions, ParquetReadSupport}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

import io.hyperspace.expressions.FewRowsProjection
import io.hyperspace.index.DriverParquetReader

/** How the row groups of a driver-side seek read were read. */
final class PageReadCounts {
  /** Row groups of which only the pages holding located rows were read. */
  var byPages = 0L
  /** Row groups read whole: no row positions (kind versions 1, 2), no offset index, or pages did not pay. */
  var whole = 0L
  /** Rows decoded by page reads (the located row ranges; whole row groups not counted). */
  var rowsDecoded = 0L
  /** Key values decoded to locate rows (a covering index's sorted key: its candidate pages). */
  var keysDecoded = 0L
}

/**
 * Reads, of a Parquet row group, only the pages holding given row ranges and, of those, only the
 * rows in the ranges: parquet-mr's reading of a row group restricted to row ranges through the
 * file's offset index (`ParquetFileReader.readFilteredRowGroup(block, RowRanges)`, which reads the
 * pages of each requested column overlapping the ranges, and whose column readers skip the values
 * of other rows), decoded into Spark's rows by Spark's own row-based Parquet converters
 * (`ParquetReadSupport`, what Spark reads with when its vectorized reader is off) with the same
 * schema clipping, calendar rebasing and time zone settings as Spark's scan of the file.
 *
 * A row group is read whole, by Spark's reader (`whole`), when a requested column has no offset
 * index (files written before Parquet 1.11, or with page indexes off), or when the pages holding
 * the ranges are more than [[MaxPageShare]] of the requested columns' bytes: then the read saves
 * little I/O and decodes row by row what the vectorized reader decodes in batches.
 *
 * The rows returned are a superset of the located rows only: the caller keeps its filter on top.
 */
object SplitPageRead {

  /**
   * Above this share of the requested columns' compressed bytes in the pages to read, a row group
   * is read whole. A cautious bound, not a measured break-even: a seek's ranges normally touch
   * one page in five or fewer (pages of 20,000 rows, row groups of 100,000 and more).
   */
  val MaxPageShare = 0.5

  /**
   * `readFile` (Spark's Parquet reader of a file split, its `hadoopConf` configured as [[reader]]
   * requires) made to read, of each file in `rowGroups` (keyed as `PartitionedFile.toPath.toString`
   * spells it), only the located row groups: by their pages where they have row ranges, else whole.
   * Files not in `rowGroups`, and those `check` finds changed since the build, are read by
   * `readFile` as they are.
   */
  def seekReader(
      sqlConf: SQLConf,
      options: Map[String, String],
      requiredSchema: StructType,
      hadoopConf: Configuration,
      counts: PageReadCounts,
      rowGroups: Map[String, Seq[RowGroupRange]],
      readFile: PartitionedFile => Iterator[InternalRow],
      check: FingerprintCheck): PartitionedFile => Iterator[InternalRow] = {
    val pages = reader(sqlConf, options, requiredSchema, hadoopConf, counts) _
    file =>
      rowGroups.get(file.toPath.toString) match {
        case None => readFile(file)
        case Some(_) if !check.current(file.toPath.toString, file.fileSize) => readFile(file)
        case Some(groups) => pages(file.toPath, groups, g => readFile(file.copy(start = g.start, length = g.bytes)))
      }
  }

  /**
   * A reader of files' row groups: `read(path, groups)` returns the rows (of `requiredSchema`) of
   * the located ranges of `groups` that have any, by pages where it pays, and the others by
   * `whole` (Spark's reader of one row group). `hadoopConf` must be configured by Spark's Parquet
   * format for `requiredSchema` (its `buildReaderWithPartitionValues` sets the requested schema
   * and the schema converter's settings on it).
   */
  def reader(
      sqlConf: SQLConf,
      options: Map[String, String],
      requiredSchema: StructType,
      hadoopConf: Configuration,
      counts: PageReadCounts)(
      path: Path,
      groups: Seq[RowGroupRange],
      whole: RowGroupRange => Iterator[InternalRow]): Iterator[InternalRow] = {
    val (positioned, unpositioned) = groups.partition(_.rows.nonEmpty)
    if (positioned.isEmpty) {
      counts.whole += groups.size
      return groups.iterator.flatMap(whole)
    }
    val readOptions = HadoopReadOptions.builder(hadoopConf)
      // Every row group of the file, in footer order: ordinals are the footer's.
      .withRecordFilter(FilterCompat.NOOP)
      .useStatsFilter(false).useDictionaryFilter(false).useColumnIndexFilter(false).useBloomFilter(false)
      .withUseHadoopVectoredIo(DriverParquetReader.vectoredReads(path, hadoopConf))
      .build()
    val file = ParquetFileReader.open(HadoopInputFile.fromPath(path, hadoopConf), readOptions)
    val rows = ArrayBuffer.empty[InternalRow]
    val readWhole = ArrayBuffer.empty[RowGroupRange]
    try {
      val footer = file.getFooter
      val meta = footer.getFileMetaData
      val fileSchema = meta.getSchema
      val keyValues = meta.getKeyValueMetaData
      val parquetOptions = new ParquetOptions(options, sqlConf)
      val convertTz =
        if (sqlConf.isParquetINT96TimestampConversion &&
          !Option(meta.getCreatedBy).exists(_.startsWith("parquet-mr"))) {
          Some(ZoneId.of(sqlConf.sessionLocalTimeZone))
        } else None
      val readSupport = new ParquetReadSupport(convertTz, enableVectorizedReader = false,
        DataSourceUtils.datetimeRebaseSpec(keyValues.get, parquetOptions.datetimeRebaseModeInRead),
        DataSourceUtils.int96RebaseSpec(keyValues.get, parquetOptions.int96RebaseModeInRead))
      val context = readSupport.init(new InitContext(hadoopConf,
          keyValues.asScala.map { case (k, v) => k -> java.util.Collections.singleton(v) }.asJava, fileSchema))
      val requested = context.getRequestedSchema
      file.setRequestedSchema(requested)
      val materializer = readSupport.prepareForRead(hadoopConf, keyValues, fileSchema, context)
      val columnIO = new ColumnIOFactory(meta.getCreatedBy).getColumnIO(requested, fileSchema, true)
      val requestedPaths = requested.getColumns.asScala.map(c => ColumnPath.get(c.getPath: _*)).toSet
      val attributes = DataTypeUtils.toAttributes(requiredSchema)
      val toUnsafe = FewRowsProjection.create(attributes, attributes)
      val blocks = footer.getBlocks.asScala
      positioned.foreach { group =>
        val block = if (group.ordinal >= 0 && group.ordinal < blocks.size) Some(blocks(group.ordinal)) else None
        // The footer's row group at the ordinal must be the one the index located (same first byte).
        val sameGroup = block.exists(b => b.getStartingPos == group.start && b.getCompressedSize == group.bytes)
        val ranges = block.filter(_ => sameGroup).map(b => rowRanges(group.rows, b.getRowCount))
        val chunks = block.toSeq.flatMap(_.getColumns.asScala.filter(c => requestedPaths.contains(c.getPath)))
        val pays = ranges.exists { r =>
          val share = chunks.map { c =>
            val index = if (c.getOffsetIndexReference == null) null else file.readOffsetIndex(c)
            if (index == null) None
            else Some((pagesBytes(index, r, block.get.getRowCount), c.getTotalSize))
          }
          share.nonEmpty && share.forall(_.isDefined) &&
          share.flatten.map(_._1).sum <= MaxPageShare * share.flatten.map(_._2).sum
        }
        if (!pays) readWhole += group
        else {
          // One range at a time: given several, parquet-mr's record reader returned the rows
          // following the first range's instead of the next range's (Parquet 1.17; two rows of one
          // row group in different pages, `SortedKeyRowsSuite`), so a row was lost. The ranges are
          // the merged ones, so that rows of overlapping located ranges are read once.
          ranges.get.getRanges.asScala.foreach { range =>
            val pages: PageReadStore =
              file.readFilteredRowGroup(group.ordinal, rowRanges(Seq((range.from, range.to)), block.get.getRowCount))
            if (pages != null) {
              val records = columnIO.getRecordReader(pages, materializer, FilterCompat.NOOP)
              var i = 0L
              while (i < pages.getRowCount) {
                val row = records.read()
                if (row != null && !records.shouldSkipCurrentRecord()) rows += toUnsafe(row).copy()
                i += 1
              }
              counts.rowsDecoded += pages.getRowCount
            }
          }
          counts.byPages += 1
        }
      }
    } finally file.close()
    counts.whole += readWhole.size + unpositioned.size
    rows.iterator ++ (readWhole.iterator ++ unpositioned.iterator).flatMap(whole)
  }

  /** `ranges` (first and last row, inclusive) as parquet-mr's row ranges of a row group of `rowCount` rows. */
  private def rowRanges(ranges: Seq[(Long, Long)], rowCount: Long): RowRanges = {
    val clipped = ranges.map { case (a, b) => (math.max(0L, a), math.min(rowCount - 1, b)) }.filter(r => r._1 <= r._2)
      .sortBy(_._1)
    // RowRanges is built from pages described by an offset index: the ranges as such "pages".
    val asPages = new OffsetIndex {
      override def getPageCount: Int = clipped.size
      override def getOffset(pageIndex: Int): Long = 0L
      override def getCompressedPageSize(pageIndex: Int): Int = 0
      override def getFirstRowIndex(pageIndex: Int): Long = clipped(pageIndex)._1
      override def getLastRowIndex(pageIndex: Int, rowGroupRowCount: Long): Long = clipped(pageIndex)._2
    }
    RowRanges.create(rowCount, java.util.stream.IntStream.range(0, clipped.size).iterator(), asPages)
  }

  /** The compressed bytes of the pages of a column chunk (by its offset index) overlapping `ranges`. */
  private def pagesBytes(index: OffsetIndex, ranges: RowRanges, rowCount: Long): Long =
    (0 until index.getPageCount).filter(p =>
      ranges.isOverlapping(index.getFirstRowIndex(p), index.getLastRowIndex(p, rowCount)))
      .map(p => index.getCompressedPageSize(p).toLong).sum
}
