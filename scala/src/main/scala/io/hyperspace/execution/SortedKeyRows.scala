package io.hyperspace.execution

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.column.impl.ColumnReadStoreImpl
import org.apache.parquet.filter2.compat.FilterCompat
import org.apache.parquet.hadoop.{ParquetFileReader, ParquetInputFormat}
import org.apache.parquet.hadoop.metadata.ColumnPath
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.internal.filter2.columnindex.ColumnIndexFilter
import org.apache.parquet.io.api.{Converter, GroupConverter, PrimitiveConverter}
import org.apache.parquet.schema.{MessageType, PrimitiveType}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, BasePredicate, BindReferences, GenericInternalRow, Predicate}
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.{DataSourceUtils, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetOptions
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, IntegerType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.index.DriverParquetReader
import io.hyperspace.index.covering.{CoveringIndex, CoveringIndexKind, IndexFileIndex, IndexHadoopFsRelation}
import io.hyperspace.index.split.{PageReadCounts, RowGroupRange, SplitPageRead}

/**
 * A lookup of a few keys of the column a covering index's files are sorted on, read in the driver
 * row by located row: the key column's pages that can hold the keys (Parquet's page index) are
 * decoded first and the keys' rows found in them, then only those rows of the other columns are
 * read ([[SplitPageRead]]: the pages holding them, the values of other rows skipped).
 *
 * Spark's vectorized reader, given the same filter, decodes every column for every row of the
 * key's page range: 20,000 rows for a `SELECT *` lookup of four, which was most of the read
 * (benchmarks/results/archive/h-18-floor.notes.md). Nothing here depends on the files being sorted — each
 * candidate value is tested — only the speed does.
 *
 * Rows located are those whose key passes the scan's filters on the key alone: a superset of the
 * rows the query keeps, the plan's Filter still above them. Keys of a 64-bit or 32-bit integer or
 * a string type (Parquet INT64, INT32, BINARY) are located; others are read as before.
 */
private[execution] final class SortedKeyRows private (key: Attribute, keyFilter: BasePredicate) {

  /**
   * `whole` (Spark's reader of file splits, configured for `requiredSchema` through `hadoopConf`)
   * made to read of each file only its located rows; a row group whose pages would be most of
   * it is read by `whole`, as is a file whose key column is not of the type expected.
   */
  def reader(
      sqlConf: SQLConf,
      options: Map[String, String],
      scan: FileSourceScanExec,
      hadoopConf: Configuration,
      counts: PageReadCounts,
      whole: PartitionedFile => Iterator[InternalRow]): PartitionedFile => Iterator[InternalRow] = {
    val pages = SplitPageRead.reader(sqlConf, options, scan.requiredSchema, hadoopConf, counts) _
    val pushed = scan.dataFilters.filter(_.references.forall(_.exprId == key.exprId))
      .flatMap(SparkInternals.sourceFilter)
    file =>
      locate(file, hadoopConf, sqlConf, options, pushed, counts) match {
        case Some(groups) if located(groups) <= SortedKeyRows.MaxLocatedRows =>
          pages(file.toPath, groups, g => whole(file.copy(start = g.start, length = g.bytes)))
        case _ => whole(file)
      }
  }

  private def located(groups: Seq[RowGroupRange]): Long = groups.flatMap(_.rows).map { case (a, b) => b - a + 1 }.sum

  /**
   * The row groups of `file` holding rows whose key passes the filter, each with those rows'
   * ranges; None when the file's key column is not one this reads.
   */
  private def locate(
      file: PartitionedFile,
      conf: Configuration,
      sqlConf: SQLConf,
      readOptions: Map[String, String],
      pushed: Seq[org.apache.spark.sql.sources.Filter],
      counts: PageReadCounts): Option[Seq[RowGroupRange]] = {
    // Every row group in footer order (the ordinals the page read takes); pages are chosen below.
    val options = HadoopReadOptions.builder(conf).withRecordFilter(FilterCompat.NOOP)
      .useStatsFilter(false).useDictionaryFilter(false).useColumnIndexFilter(false).useBloomFilter(false)
      .withUseHadoopVectoredIo(false)
      .build()
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(file.toPath, conf), options)
    try {
      val meta = reader.getFooter.getFileMetaData
      val found = meta.getSchema.getFields.asScala.find(f => f.getName.equalsIgnoreCase(key.name) && f.isPrimitive)
      found.map(_.asPrimitiveType).filter(t => SortedKeyRows.reads(key.dataType, t)).map { column =>
        val rebase = DataSourceUtils.datetimeRebaseSpec(meta.getKeyValueMetaData.get,
          new ParquetOptions(readOptions, sqlConf).datetimeRebaseModeInRead)
        // Pages are narrowed as Spark's reader narrows them: with no predicate when pushdown is
        // off, and none either when column-index filtering is off (a way around a page index
        // written wrong); then every page of the key is a candidate.
        val pageIndex = conf.getBoolean(ParquetInputFormat.COLUMN_INDEX_FILTERING_ENABLED, true)
        val onKey = (if (pageIndex) DriverParquetReader.parquetPredicate(meta, pushed, sqlConf, rebase) else None)
          .map(FilterCompat.get).getOrElse(FilterCompat.NOOP)
        val requested = new MessageType("key", column)
        reader.setRequestedSchema(requested)
        val descriptor = requested.getColumns.get(0)
        val row = new GenericInternalRow(1)
        reader.getRowGroups.asScala.toSeq.zipWithIndex.flatMap { case (block, ordinal) =>
          // The key's pages that can hold a key, by the page index (all of them without one).
          val candidates = ColumnIndexFilter.calculateRowRanges(onKey, reader.getColumnIndexStore(ordinal),
            Set(ColumnPath.get(column.getName)).asJava, block.getRowCount)
          val ranges = ArrayBuffer.empty[(Long, Long)]
          if (candidates.rowCount > 0) {
            val store = reader.readFilteredRowGroup(ordinal, candidates)
            val values = new ColumnReadStoreImpl(store, SortedKeyRows.Ignored, requested, meta.getCreatedBy)
              .getColumnReader(descriptor)
            val rowIndexes = candidates.iterator
            counts.keysDecoded += candidates.rowCount
            while (rowIndexes.hasNext) {
              val index = rowIndexes.nextLong()
              row.update(0,
                if (values.getCurrentDefinitionLevel < descriptor.getMaxDefinitionLevel) null
                else column.getPrimitiveTypeName match {
                  case PrimitiveTypeName.INT64 => values.getLong
                  case PrimitiveTypeName.INT32 => values.getInteger
                  case _ => UTF8String.fromBytes(values.getBinary.getBytes)
                })
              values.consume()
              if (keyFilter.eval(row)) {
                if (ranges.nonEmpty && ranges.last._2 == index - 1) ranges(ranges.size - 1) = (ranges.last._1, index)
                else ranges += ((index, index))
              }
            }
          }
          if (ranges.isEmpty) None
          else Some(RowGroupRange(block.getStartingPos, block.getCompressedSize, ordinal, ranges.toSeq))
        }
      }
    } finally reader.close()
  }
}

private[execution] object SortedKeyRows {

  /**
   * Past this many located rows in a file, the file is read by Spark's vectorized reader: the
   * located rows are decoded row by row, which pays for a lookup's few rows, not for thousands
   * of one key (a batch of the vectorized reader).
   */
  val MaxLocatedRows = 4096

  /**
   * For `scan`, a read of a covering index's files narrowed to known keys of their sorted column
   * (`=`, `IN`, `<=>`: the filters that pin its buckets), that column's filters, when its type is
   * one located here. A range keeps Spark's reader: its rows are many and consecutive, which the
   * vectorized reader decodes faster than the row by row read of located rows.
   */
  def of(scan: FileSourceScanExec): Option[SortedKeyRows] = scan.relation match {
    case r: IndexHadoopFsRelation
        if r.entry.index.kind == CoveringIndexKind.name && IndexHadoopFsRelation.readsSortedKeys(r) &&
          r.partitionSchema.isEmpty && IndexFileIndex.bucketsToRead(r.entry, scan.dataFilters).isDefined =>
      for {
        sorted <- CoveringIndex.storedIndexedColumns(r.entry.index).headOption
        key <- scan.output.find(_.name.equalsIgnoreCase(sorted)) if readable(key.dataType)
        filters = scan.dataFilters.filter(f => f.references.nonEmpty && f.references.forall(_.exprId == key.exprId))
        if filters.nonEmpty
      } yield {
        val predicate = Predicate.createInterpreted(BindReferences.bindReference(filters.reduce(And), Seq(key)))
        predicate.initialize(0)
        new SortedKeyRows(key, predicate)
      }
    case _ => None
  }

  private def readable(t: DataType): Boolean = t match {
    case LongType | IntegerType | StringType => true
    case _ => false
  }

  /** Whether a key of Spark type `t` stored as `column` is read here (as the values Spark reads). */
  private def reads(t: DataType, column: PrimitiveType): Boolean = (t, column.getPrimitiveTypeName) match {
    case (LongType, PrimitiveTypeName.INT64) => column.getLogicalTypeAnnotation == null
    case (IntegerType, PrimitiveTypeName.INT32) => column.getLogicalTypeAnnotation == null
    case (StringType, PrimitiveTypeName.BINARY) => column.getLogicalTypeAnnotation != null
    case _ => false
  }

  /** The converter a column store requires; the key's values are read from its column reader. */
  private object Ignored extends GroupConverter {
    private val values = new PrimitiveConverter {}
    override def getConverter(fieldIndex: Int): Converter = values
    override def start(): Unit = ()
    override def end(): Unit = ()
  }
}
