package io.hyperspace.index

import java.math.BigInteger

import scala.jdk.CollectionConverters._
import scala.util.Using
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.column.statistics.Statistics
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.BlockMetaData
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.LogicalTypeAnnotation.{DecimalLogicalTypeAnnotation, TimeUnit, TimestampLogicalTypeAnnotation}
import org.apache.parquet.schema.PrimitiveType
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName._
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.log.{ColumnStats, ContentFile, FileStats}

/**
 * Per-file ranges ([[FileRanges]]) from the statistics Parquet keeps for each row group in the
 * file's footer, so a build learns them without reading the data again. Only where the footer
 * is exact for Spark's ordering: integers, dates, microsecond timestamps, booleans, decimals and
 * strings. Floating-point columns are never taken from the footer (Parquet leaves NaN out of its
 * minimum and maximum, which Spark orders above every number), nor is a row group whose
 * statistics are missing.
 */
private[hyperspace] object ParquetFooterRanges extends Logging {

  /**
   * Per file name, its row count and its range of each of `ranged` (stored names of `schema`);
   * None when some file's footer does not tell some column's range exactly, or cannot be read.
   */
  def read(conf: Configuration, schema: StructType, ranged: Seq[String], dataPath: Path, files: Seq[ContentFile])
      : Option[Map[String, FileStats]] = {
    if (ranged.exists(c => !fromFooter(schema(c).dataType))) return None
    val described = files.iterator.map(f => describe(conf, new Path(dataPath, f.name), schema, ranged).map(f.name -> _))
    val all = described.takeWhile(_.isDefined).flatten.toMap
    if (all.size == files.map(_.name).distinct.size) Some(all) else None
  }

  /**
   * The row count and ranges of `columns` (top-level names of `schema`) of one Parquet file, from
   * its footer: of the columns whose footer statistics tell their range exactly, the others left
   * out; and per row group (of rows) its row count, compressed bytes and the range of each of
   * those columns its statistics tell (Catalyst's internal values), what the advisor needs to
   * estimate how many row groups a key's rows lie in. None when the footer cannot be read. Used by
   * the index advisor on source files.
   */
  def fileStatsAndGroups(conf: Configuration, path: Path, schema: StructType, columns: Seq[String])
      : Option[(FileStats, Seq[RowGroupStats])] =
    try {
      val footer = Using.resource(ParquetFileReader.open(HadoopInputFile.fromPath(path, conf)))(_.getFooter)
      val blocks = footer.getBlocks.asScala.toSeq.filter(_.getRowCount > 0)
      val rebased = footer.getFileMetaData.getKeyValueMetaData.containsKey(LegacyDateTimeKey)
      val ranged = columns.filter(c => fromFooter(schema(c).dataType) && !(rebased && isDateTime(schema(c).dataType)))
      val perBlock = ranged.map(c => c -> blocks.map(chunkRange(_, c, schema(c).dataType))).toMap
      val described = ranged.flatMap(c => fileRange(perBlock(c), schema(c).dataType).flatten.map(c -> _))
      val groups = blocks.indices.map { i =>
        val ranges = ranged.flatMap(c => perBlock(c)(i).flatMap(_._1).map(c -> _))
        RowGroupStats(blocks(i).getRowCount, blocks(i).getCompressedSize, ranges.toMap)
      }
      Some((FileStats(blocks.map(_.getRowCount).sum, described.toMap), groups))
    } catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace cannot read the footer of $path.", e)
        None
    }

  /** The footer key Spark writes in files whose dates and timestamps were rebased (LEGACY mode). */
  private val LegacyDateTimeKey = "org.apache.spark.legacyDateTime"

  private def isDateTime(t: DataType): Boolean = t match {
    case DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  private def fromFooter(t: DataType): Boolean = t match {
    case FloatType | DoubleType => false
    case _ => FileRanges.supported(t)
  }

  private def describe(conf: Configuration, path: Path, schema: StructType, ranged: Seq[String]): Option[FileStats] =
    try {
      val footer = Using.resource(ParquetFileReader.open(HadoopInputFile.fromPath(path, conf)))(_.getFooter)
      val blocks = footer.getBlocks.asScala.toSeq.filter(_.getRowCount > 0)
      // A file written in Spark's LEGACY rebase mode holds old dates and timestamps in the hybrid
      // Julian calendar, which its readers convert back: its footer values are not Spark's.
      val rebased = footer.getFileMetaData.getKeyValueMetaData.containsKey(LegacyDateTimeKey) &&
        ranged.exists(c => isDateTime(schema(c).dataType))
      val columns = if (rebased) Nil else ranged.map(c => c -> columnRange(blocks, c, schema(c).dataType))
      if (rebased || columns.exists(_._2.isEmpty)) None
      else Some(FileStats(blocks.map(_.getRowCount).sum, columns.collect { case (c, Some(Some(s))) => c -> s }.toMap))
    } catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace reads the ranges of $path back from its rows: its footer could not be used.", e)
        None
    }

  /**
   * Column `c`'s range over `blocks` (None when a row group's statistics do not tell it; Some(None)
   * when its values cannot be written exactly, see [[FileRanges.columnStats]]).
   */
  private def columnRange(blocks: Seq[BlockMetaData], c: String, t: DataType): Option[Option[ColumnStats]] =
    fileRange(blocks.map(chunkRange(_, c, t)), t)

  /** A column's range over a file from its row groups' [[chunkRange]]s (as [[columnRange]]). */
  private def fileRange(perBlock: Seq[Option[(Option[(Any, Any)], Long)]], t: DataType): Option[Option[ColumnStats]] =
    if (perBlock.exists(_.isEmpty)) None
    else {
      val ranges = perBlock.flatten
      val ordering = TypeUtils.getInterpretedOrdering(t)
      val values = ranges.flatMap(_._1)
      val (lo, hi) =
        if (values.isEmpty) (null, null) else (values.map(_._1).min(ordering), values.map(_._2).max(ordering))
      Some(FileRanges.columnStats(lo, hi, ranges.map(_._2).sum, t))
    }

  /** [[blockRange]] of top-level column `c` in row group `b`; None when it has no such chunk. */
  private def chunkRange(b: BlockMetaData, c: String, t: DataType): Option[(Option[(Any, Any)], Long)] =
    b.getColumns.asScala.find(_.getPath.toArray.toSeq == Seq(c))
      .flatMap(chunk => blockRange(chunk.getStatistics, chunk.getPrimitiveType, b.getRowCount, t))

  /**
   * A row group's (min, max) of a column of Spark type `t` (None when every value is NULL) and
   * its NULL count; None when the statistics do not tell them.
   */
  private def blockRange(stats: Statistics[_], p: PrimitiveType, rows: Long, t: DataType)
      : Option[(Option[(Any, Any)], Long)] =
    if (stats == null || stats.isEmpty || !stats.isNumNullsSet) None
    else if (!stats.hasNonNullValue) {
      if (stats.getNumNulls == rows) Some((None, rows)) else None
    } else {
      for {
        lo <- value(stats.genericGetMin, p, t)
        hi <- value(stats.genericGetMax, p, t)
      } yield (Some((lo, hi)), stats.getNumNulls)
    }

  /** A statistics value of physical type `p` as Catalyst's internal value of type `t`. */
  private def value(v: Any, p: PrimitiveType, t: DataType): Option[Any] = (t, p.getPrimitiveTypeName, v) match {
    case (ByteType, INT32, i: Integer) => Some(i.toByte)
    case (ShortType, INT32, i: Integer) => Some(i.toShort)
    case (IntegerType | DateType, INT32, i: Integer) => Some(i.intValue)
    case (LongType, INT64, l: java.lang.Long) => Some(l.longValue)
    case (TimestampType | TimestampNTZType, INT64, l: java.lang.Long) if inMicros(p) => Some(l.longValue)
    case (BooleanType, BOOLEAN, b: java.lang.Boolean) => Some(b.booleanValue)
    case (d: DecimalType, INT32 | INT64, n: Number) if scaleOf(p).contains(d.scale) =>
      Some(Decimal(n.longValue, d.precision, d.scale))
    case (d: DecimalType, FIXED_LEN_BYTE_ARRAY | BINARY, b: Binary) if scaleOf(p).contains(d.scale) =>
      Some(Decimal(BigDecimal(new BigInteger(b.getBytes), d.scale), d.precision, d.scale))
    case (s: StringType, BINARY, b: Binary) if s == StringType => Some(UTF8String.fromBytes(b.getBytes))
    case _ => None
  }

  private def inMicros(p: PrimitiveType): Boolean = p.getLogicalTypeAnnotation match {
    case ts: TimestampLogicalTypeAnnotation => ts.getUnit == TimeUnit.MICROS
    case _ => false
  }

  private def scaleOf(p: PrimitiveType): Option[Int] = p.getLogicalTypeAnnotation match {
    case d: DecimalLogicalTypeAnnotation => Some(d.getScale)
    case _ => None
  }
}

/** One Parquet row group: its rows, compressed bytes, and per column (top-level name) the (min, max) its statistics tell. */
private[hyperspace] final case class RowGroupStats(rows: Long, bytes: Long, ranges: Map[String, (Any, Any)])
