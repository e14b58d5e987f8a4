package io.hyperspace.shims

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapred.FileSplit
import org.apache.hadoop.mapreduce.TaskAttemptContext
import org.apache.parquet.hadoop.metadata.ParquetMetadata
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.{OpenedParquetFooter, ParquetFooterReader, VectorizedParquetRecordReader}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.internal.SQLConf

/**
 * A Parquet file's footer, row groups included, read for Spark's vectorized reader, which is
 * given it rather than reading it again. From Spark 4.1 the file is opened once: the stream that
 * read the footer is handed to the reader, which then owns it.
 */
final class OpenedParquetFile private[shims] (opened: OpenedParquetFooter) {
  private var handedOver = false

  def footer: ParquetMetadata = opened.footer

  def initialize(reader: VectorizedParquetRecordReader, split: FileSplit, context: TaskAttemptContext): Unit = {
    reader.initialize(split, context, Some(opened.inputFile), Some(opened.inputStream), Some(opened.footer))
    handedOver = true
  }

  /** Closes the file's stream unless a reader took it over (a failed or skipped `initialize`). */
  def close(): Unit = if (!handedOver) opened.inputStreamOpt.ifPresent(_.close())
}

/** The parts of Spark's Parquet reader set-up that differ between Spark lines. */
object ParquetFiles {

  def openForVectorizedRead(conf: Configuration, file: PartitionedFile): OpenedParquetFile =
    new OpenedParquetFile(ParquetFooterReader.openFileAndReadFooter(conf, file, true))

  /**
   * Spark's `spark.sql.parquet.reader.respectUnknownTypeAnnotation.enabled`, which its Parquet reader
   * reads from the Hadoop configuration. Not every patch of 4.1 has it (4.1.3 and 4.2 do, 4.1.0 does
   * not), so it is named by its key rather than through `SQLConf`'s member, which a patch without it
   * lacks (a `NoSuchMethodError` in the middle of a query), and looked up once.
   */
  private val RespectUnknownTypeAnnotation = "spark.sql.parquet.reader.respectUnknownTypeAnnotation.enabled"

  /**
   * Spark 4.3's `spark.sql.timestampNanosTypes.enabled` (`SQLConf.TIMESTAMP_NANOS_TYPES_ENABLED`),
   * which 4.3's Parquet reader also copies into the Hadoop configuration; 4.1 and 4.2 have no such
   * setting, so it is named by its key as well.
   */
  private val TimestampNanosTypes = "spark.sql.timestampNanosTypes.enabled"

  /** Those of the settings above the running patch defines, looked up once. */
  private lazy val lineReadSettings: Seq[String] =
    Seq(RespectUnknownTypeAnnotation, TimestampNanosTypes).filter(SparkInternals.definesSqlConf)

  /**
   * The reader settings Spark 4.1 to 4.3 add to those of every line, where the running patch has
   * them, with the session's value (or the setting's default) as Spark's own reader sets them.
   */
  def setLineReadSettings(conf: Configuration, sqlConf: SQLConf): Unit =
    lineReadSettings.foreach(key => conf.setBoolean(key, sqlConf.getConfString(key).trim.toBoolean))
}
