package io.hyperspace.shims

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapred.FileSplit
import org.apache.hadoop.mapreduce.TaskAttemptContext
import org.apache.parquet.hadoop.metadata.ParquetMetadata
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.{ParquetFooterReader, VectorizedParquetRecordReader}
import org.apache.spark.sql.internal.SQLConf

/**
 * A Parquet file's footer, row groups included, read for Spark's vectorized reader, which is
 * given it rather than reading it again. Spark 4.0 reads the footer and the row groups through
 * separate opens of the file.
 */
final class OpenedParquetFile private[shims] (val footer: ParquetMetadata) {

  def initialize(reader: VectorizedParquetRecordReader, split: FileSplit, context: TaskAttemptContext): Unit =
    reader.initialize(split, context, Option(footer))

  /** Releases what `initialize` did not take over: nothing on this line. */
  def close(): Unit = ()
}

/** The parts of Spark's Parquet reader set-up that differ between Spark lines. */
object ParquetFiles {

  def openForVectorizedRead(conf: Configuration, file: PartitionedFile): OpenedParquetFile =
    new OpenedParquetFile(ParquetFooterReader.readFooter(conf, file, ParquetFooterReader.WITH_ROW_GROUPS))

  /** The reader settings Spark 4.0 adds to those of every line: none. */
  def setLineReadSettings(conf: Configuration, sqlConf: SQLConf): Unit = ()
}
