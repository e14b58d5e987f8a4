package io.hyperspace.index

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.mapred.{FileSplit, JobConf}
import org.apache.hadoop.mapreduce.{JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.parquet.filter2.predicate.{FilterApi, FilterPredicate}
import org.apache.parquet.hadoop.ParquetInputFormat
import org.apache.parquet.hadoop.metadata.FileMetaData
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.catalyst.util.RebaseDateTime.RebaseSpec
import org.apache.spark.sql.execution.datasources.{DataSourceUtils, PartitionedFile, RecordReaderIterator}
import org.apache.spark.sql.execution.datasources.parquet.{ParquetFilters, ParquetOptions, ParquetReadSupport, ParquetUtils, ParquetWriteSupport, VectorizedParquetRecordReader}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnarBatch

import io.hyperspace.shims.ParquetFiles

/**
 * Spark's vectorized Parquet reader of file splits, returning rows, for reads done in the driver:
 * what `ParquetFileFormat.buildReaderWithPartitionValues` returns (batches off) without its
 * broadcast of the Hadoop configuration. That broadcast carries the configuration to tasks; a
 * read in the driver runs none, yet paid for it on every read, as it serializes the session's
 * ~1,100 Hadoop settings: 4.5 ms median (min 3.6) a broadcast on the benchmark machine, idle —
 * a tenth of a `SELECT *` point lookup read in the driver, and paid twice by a split index seek
 * (its index's read while planning, its source's read). benchmarks/results/archive/h-19-broadcast.notes.md.
 *
 * The reading is Spark's own: its record reader, given the settings Spark's set-up writes into
 * the configuration for it ([[configure]]; `DriverParquetReaderSuite` holds them equal to
 * Spark's), and per file the same decisions (filters pushed to row groups and pages as the
 * file's schema allows, calendar rebasing from the file's metadata, INT96 time zones, partition
 * values appended, on-heap vectors as in any read outside a task). How a file is opened for the
 * reader differs between Spark lines: `io.hyperspace.shims.ParquetFiles`.
 *
 * The returned function reads one file at a time on one thread (a driver read's, or a lookup's):
 * it sets each file's pushed predicate on a configuration of its own — the `JobConf` it is given
 * ([[jobConf]]), else a copy of the configuration.
 */
object DriverParquetReader {

  /**
   * The session's Hadoop configuration with a relation's `options`, as Spark's
   * `SessionState.newHadoopConfWithOptions` builds it (`DriverParquetReaderSuite` holds them
   * equal), built as a `JobConf`: a reader given it holds it in its task context as it is, where
   * a plain configuration is copied once more — ~0.4 ms of ~1,100 settings, per driver read.
   */
  def jobConf(spark: SparkSession, options: Map[String, String]): JobConf = {
    val conf = new JobConf(spark.sparkContext.hadoopConfiguration)
    spark.sessionState.conf.getAllConfs.foreach { case (k, v) => if (v ne null) conf.set(k, v) }
    options.foreach { case (k, v) => if ((v ne null) && k != "path" && k != "paths") conf.set(k, v) }
    conf
  }

  /**
   * [[jobConf]] for a driver-side read of files on the file system of `readsFrom`: with Parquet's
   * vectored reads off for files on the local file system unless the user set them, as
   * [[vectoredReads]] decides (and says why); otherwise as Spark's.
   */
  def jobConf(spark: SparkSession, options: Map[String, String], readsFrom: Option[Path]): JobConf = {
    val conf = jobConf(spark, options)
    if (readsFrom.exists(localAndUnset(_, conf))) conf.setBoolean(VectoredReads, false)
    conf
  }

  /**
   * Whether a driver-side read of the file at `path` uses Parquet's vectored reads: as the user
   * set `parquet.hadoop.vectored.io.enabled` (session, Hadoop configuration or options), else on
   * every file system but the local one, as Parquet's default has them (off in Parquet 1.15, Spark
   * 4.0's; on in Parquet 1.17, Spark 4.2's).
   *
   * Hadoop's local file system emulates vectored reads: it completes each range through
   * `CompletableFuture`'s asynchronous stages, which start a new thread per stage where the JVM's
   * common pool has fewer than two threads (a machine of one or two cores) — twenty threads per
   * read of TPC-H Q6's 15 Z-order files. Measured on two cores: that Q6 128 → 105 ms with them off,
   * and the same either way with a common pool of four threads
   * (benchmarks/results/archive/h-18-vectored-reads.notes.md); a split index's page reads 20 → 6.5 ms a
   * file (benchmarks/results/archive/split-sf1-quiet3.notes.md). Other file systems keep Parquet's
   * default: on object stores vectored reads fetch a row group's ranges in parallel.
   */
  def vectoredReads(path: Path, conf: Configuration): Boolean =
    !localAndUnset(path, conf) && conf.getBoolean(VectoredReads, ParquetInputFormat.HADOOP_VECTORED_IO_DEFAULT)

  private[hyperspace] val VectoredReads = ParquetInputFormat.HADOOP_VECTORED_IO_ENABLED

  /**
   * Whether `path` (qualified, or on the default file system) is on the local file system and
   * `conf` leaves vectored reads unset: then a driver-side read turns them off.
   */
  private def localAndUnset(path: Path, conf: Configuration): Boolean = conf.get(VectoredReads) == null && {
    val scheme = Option(path.toUri.getScheme).getOrElse(FileSystem.getDefaultUri(conf).getScheme)
    scheme != null && scheme.equalsIgnoreCase("file")
  }

  /**
   * The reader of `requiredSchema` (then `partitionSchema`'s values) of Parquet file splits, for
   * rows passing `filters` (a superset: the caller keeps its filter); `hadoopConf` is configured
   * for it as Spark's Parquet format configures it, so it also serves readers that require that
   * (`SplitPageRead`). A `JobConf` ([[jobConf]]) becomes the reader's own, which sets each file's
   * predicate on it: one reader's, and read by others only on the reader's thread; any other
   * configuration is copied. None when Spark would not read the schema with its vectorized reader
   * (turned off, or types it does not read in batches): then the format's own reader is the one.
   */
  def apply(
      spark: SparkSession,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): Option[PartitionedFile => Iterator[InternalRow]] =
    reader(spark, partitionSchema, requiredSchema, filters, options, hadoopConf, returningBatches = false)
      .map(read => read.andThen(_.asInstanceOf[Iterator[InternalRow]]))

  /**
   * The same reader returning the reader's batches (on-heap column vectors), as a columnar scan
   * hands them to the whole-stage code above it; each batch is reused for the next.
   */
  def batches(
      spark: SparkSession,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): Option[PartitionedFile => Iterator[ColumnarBatch]] =
    reader(spark, partitionSchema, requiredSchema, filters, options, hadoopConf, returningBatches = true)
      .map(read => read.andThen(_.asInstanceOf[Iterator[ColumnarBatch]]))

  /**
   * Whether [[apply]] and [[batches]] read `requiredSchema` (then `partitionSchema`): whether Spark
   * reads the schema with its vectorized reader. Decided without building a reader.
   */
  def readsInBatches(spark: SparkSession, partitionSchema: StructType, requiredSchema: StructType): Boolean =
    ParquetUtils.isBatchReadSupportedForSchema(spark.sessionState.conf, StructType(partitionSchema ++ requiredSchema))

  private def reader(
      spark: SparkSession,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration,
      returningBatches: Boolean): Option[PartitionedFile => Iterator[AnyRef]] = {
    val sqlConf = spark.sessionState.conf
    if (!readsInBatches(spark, partitionSchema, requiredSchema)) return None
    configure(hadoopConf, sqlConf, requiredSchema)
    // One configuration for all the files, held by one task context (a JobConf is not copied
    // again by it): a copy per file, as a task's reader makes, is ~0.4 ms of ~1,100 settings,
    // paid by every file of a driver-side read.
    val conf = hadoopConf match {
      case own: JobConf => own
      case shared => new JobConf(shared)
    }
    val context = new TaskAttemptContextImpl(conf, new TaskAttemptID(new TaskID(new JobID(), TaskType.MAP, 0), 0))
    val parquetOptions = new ParquetOptions(options, sqlConf)
    val datetimeRebaseMode = parquetOptions.datetimeRebaseModeInRead
    val int96RebaseMode = parquetOptions.int96RebaseModeInRead
    val int96Conversion = sqlConf.isParquetINT96TimestampConversion
    val batchSize = sqlConf.parquetVectorizedReaderBatchSize
    Some { (file: PartitionedFile) =>
      val opened = ParquetFiles.openForVectorizedRead(conf, file)
      try {
        val metadata = opened.footer.getFileMetaData
        val datetimeRebase = DataSourceUtils.datetimeRebaseSpec(metadata.getKeyValueMetaData.get, datetimeRebaseMode)
        val int96Rebase = DataSourceUtils.int96RebaseSpec(metadata.getKeyValueMetaData.get, int96RebaseMode)
        // What converts depends on the file's schema, so each file sets its own (or none).
        val pushed = parquetPredicate(metadata, filters, sqlConf, datetimeRebase)
        pushed match {
          case Some(predicate) => ParquetInputFormat.setFilterPredicate(conf, predicate)
          case None => conf.unset(ParquetInputFormat.FILTER_PREDICATE)
        }
        // INT96 values are shifted only when a writer other than parquet-mr wrote them, per file.
        val convertTz = if (int96Conversion && !metadata.getCreatedBy.startsWith("parquet-mr")) {
          DateTimeUtils.getZoneId(conf.get(SQLConf.SESSION_LOCAL_TIMEZONE.key))
        } else null
        val reader = new VectorizedParquetRecordReader(convertTz, datetimeRebase.mode.toString,
          datetimeRebase.timeZone, int96Rebase.mode.toString, int96Rebase.timeZone, false, batchSize)
        val rows = new RecordReaderIterator(reader)
        try {
          opened.initialize(reader, new FileSplit(file.toPath, file.start, file.length, Array.empty[String]), context)
          reader.initBatch(partitionSchema, file.partitionValues)
          // The reader's batches, or the rows of its current batch as Spark's scan returns them when
          // not in batches.
          if (returningBatches) reader.enableReturningBatches()
          rows
        } catch {
          case e: Throwable =>
            rows.close()
            throw e
        }
      } finally opened.close()
    }
  }

  /**
   * `filters` as the Parquet predicate Spark's scan pushes into a reader of the file `metadata`
   * describes (those it can convert for the file's schema, and-ed); None when none converts or
   * the session turns Parquet filter pushdown off.
   */
  def parquetPredicate(
      metadata: FileMetaData,
      filters: Seq[Filter],
      sqlConf: SQLConf,
      datetimeRebase: RebaseSpec): Option[FilterPredicate] = if (!sqlConf.parquetFilterPushDown) None
  else {
    val parquetFilters = new ParquetFilters(metadata.getSchema, sqlConf.parquetFilterPushDownDate,
      sqlConf.parquetFilterPushDownTimestamp, sqlConf.parquetFilterPushDownDecimal,
      sqlConf.parquetFilterPushDownStringPredicate, sqlConf.parquetFilterPushDownInFilterThreshold,
      sqlConf.caseSensitiveAnalysis, datetimeRebase)
    filters.flatMap(parquetFilters.createFilter).reduceOption(FilterApi.and)
  }

  /**
   * Writes into `hadoopConf` what Spark's Parquet format writes there before reading
   * `requiredSchema`: the read support and requested schema, and the session settings its
   * record readers and schema converter read from the configuration rather than the session.
   */
  def configure(hadoopConf: Configuration, sqlConf: SQLConf, requiredSchema: StructType): Unit = {
    hadoopConf.set(ParquetInputFormat.READ_SUPPORT_CLASS, classOf[ParquetReadSupport].getName)
    hadoopConf.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA, requiredSchema.json)
    hadoopConf.set(ParquetWriteSupport.SPARK_ROW_SCHEMA, requiredSchema.json)
    hadoopConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, sqlConf.sessionLocalTimeZone)
    hadoopConf.setBoolean(SQLConf.NESTED_SCHEMA_PRUNING_ENABLED.key, sqlConf.nestedSchemaPruningEnabled)
    hadoopConf.setBoolean(SQLConf.CASE_SENSITIVE.key, sqlConf.caseSensitiveAnalysis)
    hadoopConf.setBoolean(SQLConf.PARQUET_BINARY_AS_STRING.key, sqlConf.isParquetBinaryAsString)
    hadoopConf.setBoolean(SQLConf.PARQUET_INT96_AS_TIMESTAMP.key, sqlConf.isParquetINT96AsTimestamp)
    hadoopConf.setBoolean(SQLConf.PARQUET_INFER_TIMESTAMP_NTZ_ENABLED.key, sqlConf.parquetInferTimestampNTZEnabled)
    hadoopConf.setBoolean(SQLConf.LEGACY_PARQUET_NANOS_AS_LONG.key, sqlConf.legacyParquetNanosAsLong)
    ParquetFiles.setLineReadSettings(hadoopConf, sqlConf)
  }
}
