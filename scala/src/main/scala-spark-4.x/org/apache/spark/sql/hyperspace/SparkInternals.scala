package org.apache.spark.sql.hyperspace

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{classic, DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.sql.catalyst.expressions.{Ascending, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Sort}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
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

  /**
   * Whether the running Spark defines the SQL setting `key`: a setting some patches of a line lack
   * is looked up by its key (docs/architecture.md, "Patches of a line").
   */
  def definesSqlConf(key: String): Boolean = org.apache.spark.sql.internal.SQLConf.containsConfigKey(key)

  /** A DataFrame over `plan` (Spark's `Dataset.ofRows`). */
  def ofRows(spark: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(spark.asInstanceOf[classic.SparkSession], plan)

  /**
   * `df` hash-partitioned by `bucketColumns` into `numBuckets` partitions, as `repartition` does,
   * so that partition i holds exactly bucket i, and sorted within each partition by
   * `bucketColumns`: what [[writeBucketedParquet]] writes as one sorted file per bucket.
   *
   * The order is declared as the bucketed writer requires it, (bucket id, bucket columns), with
   * the bucket id stated to be ordered like the first bucket column: within one partition it is
   * the same for every row. Otherwise the writer sorts on the bucket id first, a key that is
   * equal for every row of a partition, and each comparison misses the sort's prefix (the first
   * key, here the bucket id) and compares whole rows, evaluating the bucket hash again: the sort
   * of a covering index build took about twice as long. The bucket id expression is the one the
   * writer derives (`HashPartitioning.partitionIdExpression`), so it is matched semantically; were
   * it ever not, the writer would add its own sort and the files would be the same.
   */
  def hashPartitionedAndSorted(df: DataFrame, numBuckets: Int, bucketColumns: Seq[String]): DataFrame = {
    val repartitioned = df.repartition(numBuckets, bucketColumns.map(c => df.col(quoted(c))): _*)
    val plan = repartitioned.queryExecution.analyzed
    val resolver = df.sparkSession.sessionState.conf.resolver
    val keys = bucketColumns.map(c =>
      plan.output.find(a => resolver(a.name, c)).getOrElse(
        throw new IllegalArgumentException(s"No column $c in ${plan.output.map(_.name).mkString(", ")}")))
    val bucketId = HashPartitioning(keys, numBuckets).partitionIdExpression
    val order = SortOrder(keys.head, Ascending, Seq(bucketId)) +: keys.map(SortOrder(_, Ascending))
    ofRows(df.sparkSession, Sort(order, global = false, plan))
  }

  private def quoted(name: String): String = s"`${name.replace("`", "``")}`"

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

  /** For each partition of `rdd`, the executors caching it, as task location strings (one ask). */
  def cachedLocations(rdd: org.apache.spark.rdd.RDD[_]): IndexedSeq[Seq[String]] = {
    val ids = Array.tabulate[org.apache.spark.storage.BlockId](rdd.getNumPartitions)(
      org.apache.spark.storage.RDDBlockId(rdd.id, _))
    org.apache.spark.SparkEnv.get.blockManager.master.getLocations(ids).map(_.map(id =>
        org.apache.spark.scheduler.ExecutorCacheTaskLocation(id.host, id.executorId).toString))
  }

  /**
   * Where the DAG scheduler would run a task computing partition `p` of `rdd`, best first (the
   * executors caching it or the nearest cached ancestor partition), as task location strings.
   */
  def preferredLocations(rdd: org.apache.spark.rdd.RDD[_], p: Int): Seq[String] =
    rdd.sparkContext.getPreferredLocs(rdd, p).map(_.toString)

  /**
   * The object cached as partition `p` of `rdd` when this JVM's block manager holds it
   * deserialized in memory — the driver's does in local mode, where the driver is the executor
   * — else None, without computing, fetching or deserializing anything. Block manager reads are
   * `private[spark]`. The read lock is released before returning: the caller keeps a reference
   * to an object the block manager may drop, which is safe for immutable cached values.
   */
  def localCachedObject(rdd: org.apache.spark.rdd.RDD[_], p: Int): Option[Any] = {
    val blockManager = org.apache.spark.SparkEnv.get.blockManager
    val id = org.apache.spark.storage.RDDBlockId(rdd.id, p)
    if (!rdd.getStorageLevel.deserialized || !blockManager.memoryStore.contains(id)) return None
    blockManager.getLocalValues(id).flatMap { result =>
      val values = result.data
      val first = if (values.hasNext) Some(values.next()) else None
      while (values.hasNext) values.next() // the lock is released when the iterator ends
      first
    }
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
