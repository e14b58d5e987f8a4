package org.apache.spark.sql.hyperspace

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{classic, DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat

/**
 * The few Spark internals Hyperspace needs that are `private[sql]`, kept in one place so a Spark
 * upgrade has one file to check.
 */
object SparkInternals {

  /**
   * A new session sharing `spark`'s context and catalog data, with copies of its SQL conf, temp
   * views and functions (Spark's `cloneSession`): changing the copy's conf leaves `spark` and the
   * threads using it alone. Its analyzer and optimizer are built on first use.
   */
  def cloneSession(spark: SparkSession): SparkSession =
    spark.asInstanceOf[classic.SparkSession].cloneSession()

  /**
   * `predicate` as a DataSource V2 predicate, when Spark's own filter push-down can express it
   * (`DataSourceStrategy.translateFilter`, nested columns included).
   */
  def translateFilter(predicate: org.apache.spark.sql.catalyst.expressions.Expression)
      : Option[org.apache.spark.sql.connector.expressions.filter.Predicate] =
    sourceFilter(predicate).map(_.toV2)

  /** `predicate` as a file format's push-down filter, when Spark's own push-down can express it. */
  def sourceFilter(predicate: org.apache.spark.sql.catalyst.expressions.Expression)
      : Option[org.apache.spark.sql.sources.Filter] =
    org.apache.spark.sql.execution.datasources.DataSourceStrategy.translateFilter(predicate,
      supportNestedPredicatePushdown = true)

  /** A DataFrame over `plan` (Spark's `Dataset.ofRows`). */
  def ofRows(spark: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(spark.asInstanceOf[classic.SparkSession], plan)

  /**
   * Writes `df` as Parquet into `path`, bucketed into `numBuckets` by `bucketColumns` with
   * Spark's bucketing hash and sorted within each bucket by `sortColumns` — the layout of a
   * bucketed table (bucket ids in the file names), without a table. The public writer refuses
   * `bucketBy` with `save`, so this runs the command Spark's own bucketed writes use.
   * `mode` Append adds files to a directory an earlier write of the same operation filled.
   */
  def writeBucketedParquet(
      df: DataFrame,
      path: Path,
      numBuckets: Int,
      bucketColumns: Seq[String],
      sortColumns: Seq[String],
      mode: SaveMode = SaveMode.ErrorIfExists,
      options: Map[String, String] = Map.empty): Unit = {
    val query = df.queryExecution.analyzed
    val command = InsertIntoHadoopFsRelationCommand(
      outputPath = path,
      staticPartitions = Map.empty,
      ifPartitionNotExists = false,
      partitionColumns = Nil,
      bucketSpec = Some(BucketSpec(numBuckets, bucketColumns, sortColumns)),
      fileFormat = new ParquetFileFormat,
      options = options,
      query = query,
      mode = mode,
      catalogTable = None,
      fileIndex = None,
      outputColumnNames = query.output.map(_.name))
    // Commands run when their DataFrame is created.
    ofRows(df.sparkSession, command)
  }

  /**
   * Blocks until the events posted so far to `spark`'s listener bus were delivered (at most
   * 10 s): query execution listeners run asynchronously.
   */
  def waitForListenerEvents(spark: SparkSession): Unit = spark.sparkContext.listenerBus.waitUntilEmpty()

  /** The query execution listeners registered on `spark` (Spark lists them for its own tests only). */
  def queryExecutionListeners(spark: SparkSession): Seq[org.apache.spark.sql.util.QueryExecutionListener] =
    spark.listenerManager.listListeners().toSeq

  /**
   * For each partition of the cached `rdd`, the ids of the executors whose block manager holds
   * it (empty when it is not cached anywhere). The block manager master is `private[spark]`.
   */
  def cachedPartitionExecutors(rdd: org.apache.spark.rdd.RDD[_]): Map[Int, Seq[String]] = {
    val master = org.apache.spark.SparkEnv.get.blockManager.master
    (0 until rdd.getNumPartitions).map { i =>
      i -> master.getLocations(org.apache.spark.storage.RDDBlockId(rdd.id, i)).map(_.executorId)
    }.toMap
  }

  /**
   * The bytes in memory and on disk of `rdd`'s cached blocks, as the block managers reported
   * them to the master when they stored them. Not `SparkContext.getRDDStorageInfo`: that reads
   * the status store, which the listener bus updates later (a busy driver reads fewer cached
   * partitions than there are).
   */
  def cachedBlockBytes(rdd: org.apache.spark.rdd.RDD[_]): (Long, Long) = {
    val master = org.apache.spark.SparkEnv.get.blockManager.master
    val statuses = (0 until rdd.getNumPartitions).flatMap { i =>
      master.getBlockStatus(org.apache.spark.storage.RDDBlockId(rdd.id, i), askStorageEndpoints = false)
        .values
    }
    (statuses.map(_.memSize).sum, statuses.map(_.diskSize).sum)
  }
}

/**
 * Lets an object stored in Spark's block manager report its own size instead of having
 * `SizeEstimator` walk its object graph (slow for tries of millions of entries, and wrong for
 * data shared between cached versions). `KnownSizeEstimation` is `private[spark]`.
 */
trait BlockSized extends org.apache.spark.util.KnownSizeEstimation {
  /** Bytes the block manager should account for this object. */
  def blockSizeInBytes: Long
  override def estimatedSize: Long = blockSizeInBytes
}

/**
 * Execution memory a task holds while it builds an object it then hands to the block manager
 * (which accounts it from there on): the build is then limited by Spark's memory manager, as
 * Spark's own operators are, instead of by the heap running out. Reserving may make other
 * consumers of the task spill and may evict cached blocks above the storage fraction.
 * `TaskContext.taskMemoryManager` is `private[spark]`.
 */
final class TaskMemoryReservation private (tmm: org.apache.spark.memory.TaskMemoryManager)
  extends org.apache.spark.memory.MemoryConsumer(tmm, tmm.pageSizeBytes(),
    org.apache.spark.memory.MemoryMode.ON_HEAP) {

  // What is built cannot be written out halfway; the caller fails instead.
  override def spill(size: Long, trigger: org.apache.spark.memory.MemoryConsumer): Long = 0L

  /** Reserves `bytes` more, or reserves nothing and returns false if the task cannot get them. */
  def reserve(bytes: Long): Boolean = {
    if (bytes <= 0) return true
    val got = acquireMemory(bytes)
    if (got < bytes) { freeMemory(got); false }
    else true
  }

  /** Gives back `bytes` of what is reserved (what was reserved for memory since dropped). */
  def release(bytes: Long): Unit = {
    val n = math.min(bytes, getUsed)
    if (n > 0) freeMemory(n)
  }

  /** Bytes reserved now. */
  def reserved: Long = getUsed

  /** Gives everything back (before the built object goes to the block manager). */
  def releaseAll(): Unit = if (getUsed > 0) freeMemory(getUsed)
}

object TaskMemoryReservation {

  /** A reservation for the running task; None outside a task (on the driver, in unit tests). */
  def forCurrentTask(): Option[TaskMemoryReservation] =
    Option(org.apache.spark.TaskContext.get()).map(tc => new TaskMemoryReservation(tc.taskMemoryManager()))
}
