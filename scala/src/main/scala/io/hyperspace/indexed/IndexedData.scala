package io.hyperspace.indexed

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext

import org.apache.spark.rdd.{PartitionCoalescer, PartitionGroup, RDD}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, Statistics}
import org.apache.spark.sql.catalyst.analysis.MultiInstanceRelation
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.hyperspace.KeptBroadcast
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.StructType
import org.apache.spark.storage.StorageLevel

import io.hyperspace.shims.Shuffles

/**
 * What a materialized version measured, summed over its partitions.
 *
 * @param rows rows this version answers with (its ancestors' included)
 * @param keys distinct non-null keys
 * @param ownBatchBytes row-batch bytes this version allocated
 * @param totalBatchBytes row-batch bytes this version reads (shared ancestors' batches included)
 * @param usedBatchBytes stored record bytes this version reads (batches without their free tail)
 * @param ownTrieBytes heap bytes of the key index this version does not share (measured for
 *   primitive tables, estimated for a trie)
 */
final case class IndexedStats(
    rows: Long,
    keys: Long,
    ownBatchBytes: Long,
    totalBatchBytes: Long,
    usedBatchBytes: Long,
    ownTrieBytes: Long) {
  private[indexed] def +(o: IndexedStats): IndexedStats = IndexedStats(rows + o.rows,
    keys + o.keys, ownBatchBytes + o.ownBatchBytes, totalBatchBytes + o.totalBatchBytes,
    usedBatchBytes + o.usedBatchBytes, ownTrieBytes + o.ownTrieBytes)
}

private[indexed] object IndexedStats {
  val zero: IndexedStats = IndexedStats(0, 0, 0, 0, 0, 0)
  def of(p: IndexedPartition): IndexedStats = IndexedStats(p.rowCount, p.keyCount,
    p.ownBatchBytes, p.totalBatchBytes, p.usedBatchBytes, p.ownTrieBytes)
}

/**
 * One version of an Indexed DataFrame on the driver: the RDD of its [[IndexedPartition]]s
 * (one per hash partition of the key) and what the planner needs to know about it. Version 0
 * is built from the source DataFrame; version n+1 is version n's RDD zipped with the appended
 * rows, shuffled the same way. Lineage is thus the rebuild recipe: a lost cached partition is
 * recomputed from its ancestors (or their cached blocks) and the appended rows, replayed.
 *
 * Serializable because physical plans that mention it are (whole-stage code generation ships
 * its plan to tasks); the RDD itself stays on the driver.
 */
final class IndexedData private[indexed] (
    val indexId: Long,
    val version: Int,
    val schema: StructType,
    val keyOrdinal: Int,
    val numPartitions: Int,
    val batchSize: Int,
    val packing: BatchPacking,
    @transient val rdd: RDD[IndexedPartition],
    estimatedBytes: BigInt,
    estimatedRows: Option[BigInt],
    // The version this one was appended to (null for version 0): where its partitions are read.
    @transient private val parentRdd: RDD[IndexedPartition] = null) extends Serializable {

  /** Set once the version has been materialized in cache. */
  @volatile private[indexed] var measured: Option[IndexedStats] = None

  /** The key column's name. */
  def keyColumn: String = schema(keyOrdinal).name

  /** The key codec of this index. */
  def codec: KeyCodec = KeyCodec(schema(keyOrdinal).dataType)

  /** Statistics for the optimizer: measured when materialized, else estimated from the sources. */
  def statistics: Statistics = measured match {
    case Some(m) => Statistics(sizeInBytes = BigInt(math.max(1L, m.usedBatchBytes)),
        rowCount = Some(BigInt(m.rows)))
    case None => Statistics(sizeInBytes = estimatedBytes.max(BigInt(1)), rowCount = estimatedRows)
  }

  private[indexed] def isPersisted: Boolean = rdd.getStorageLevel != StorageLevel.NONE

  // Spark's broadcasts of this version's rows, by what they hold (IndexBroadcastKeeper.keyOf).
  @transient private lazy val keptBroadcasts = new ConcurrentHashMap[AnyRef, KeptBroadcast]()

  /** The broadcast of this version's rows kept under `key`, if any (see [[KeepIndexBroadcasts]]). */
  private[indexed] def keptBroadcast(key: AnyRef): Option[KeptBroadcast] = Option(keptBroadcasts.get(key))

  /**
   * Keeps `broadcast` under `key` while this version is persisted, if the kept broadcasts stay
   * within `maxBytes` stored in all (one kept first under the same key stays).
   */
  private[indexed] def keepBroadcast(key: AnyRef, broadcast: KeptBroadcast, maxBytes: Long): Unit =
    synchronized {
      if (isPersisted && keptBroadcastBytes + broadcast.storedBytes <= maxBytes)
        keptBroadcasts.putIfAbsent(key, broadcast)
    }

  /**
   * Forgets the kept broadcasts and drops their copies on the executors. They are not destroyed:
   * a query that took one before keeps reading it (from the driver); Spark's cleaner removes
   * them once no query refers to them.
   */
  private[indexed] def releaseBroadcasts(): Unit = synchronized {
    keptBroadcasts.values.asScala.foreach(_.broadcast.unpersist(blocking = false))
    keptBroadcasts.clear()
  }

  /** Bytes the driver stores for the broadcasts kept with this version (serialized). */
  private[indexed] def keptBroadcastBytes: Long = keptBroadcasts.values.asScala.iterator.map(_.storedBytes).sum

  /**
   * The distinct non-null `values` (Catalyst values of the key's type) as index keys, by the
   * partition they hash to. SQL: `k IN (1, 1)` returns each row once and NULL matches nothing.
   */
  private[indexed] def keysByPartition(values: Seq[Any]): Map[Int, Array[AnyRef]] = {
    val partitionId = codec.partitionIdExpression(
      BoundReference(0, codec.dataType, nullable = true), numPartitions)
    values.filter(_ != null).distinct
      .groupBy(v => partitionId.eval(new GenericInternalRow(Array[Any](v))).asInstanceOf[Int])
      // -0.0 and 0.0 (and NaNs) are distinct values but one key, hashed to one partition.
      .map { case (p, vs) => p -> vs.map(codec.keyOfValue).distinct.toArray }
  }

  /**
   * The rows whose key is one of `values` (Catalyst values of the key's type; nulls match
   * nothing), copied, without planning a query. A partition this JVM's block manager holds in
   * memory (local mode: the driver is the executor) is read in place when `readInPlace`; the
   * others are read by one job of one task per partition, on those partitions only.
   */
  private[indexed] def lookup(values: Seq[Any], readInPlace: Boolean): Array[InternalRow] = {
    val byPartition = keysByPartition(values)
    val out = ArrayBuffer.empty[InternalRow]
    val elsewhere = ArrayBuffer.empty[Int]
    byPartition.keys.toSeq.sorted.foreach { p =>
      val here = if (readInPlace) SparkInternals.localCachedObject(rdd, p) else None
      here match {
        case Some(part: IndexedPartition) => out ++= IndexedData.lookupIn(part, byPartition(p))
        case _ => elsewhere += p
      }
    }
    if (elsewhere.nonEmpty) {
      val wanted = elsewhere.map(p => p -> byPartition(p)).toMap
      val found = rdd.sparkContext.runJob(rdd,
        (task: TaskContext, parts: Iterator[IndexedPartition]) =>
          IndexedData.lookupIn(parts.next(), wanted(task.partitionId())),
        elsewhere.toSeq)
      found.foreach(out ++= _)
    }
    out.toArray
  }

  /** A new version: this one's partitions with `rows` (already shuffled alike) appended. */
  private[indexed] def append(rows: RDD[InternalRow], rowsBytes: BigInt): IndexedData = {
    // Each partition of the appended rows tagged with its number (for error messages).
    val numbered = rows.mapPartitionsWithIndex((p, it) => Iterator.single(p -> it), preservesPartitioning = true)
    val child = rdd.zipPartitions(numbered, preservesPartitioning = true) { (parents, appended) =>
      val (p, rowsOfP) = appended.next()
      Iterator(parents.next().append(rowsOfP, p))
    }
    child.setName(s"IndexedDataFrame ${indexId} v${version + 1} ($keyColumn)")
    if (isPersisted) child.persist(rdd.getStorageLevel)
    val base = statistics
    new IndexedData(indexId, version + 1, schema, keyOrdinal, numPartitions, batchSize, packing, child,
      base.sizeInBytes + rowsBytes, None, rdd)
  }

  /**
   * Computes every partition (caching it when this version is persisted) and sums what they
   * measured. Version 0's partitions are each a build of a share of the whole source: one task
   * each, as many as the cluster can run (dynamic allocation adds executors for them). An
   * appended version's are built in one task per task slot instead: an append of 100K rows is a
   * few milliseconds of work per partition, and each task's own fixed cost (scheduling,
   * deserializing the task, reporting) was as much again. A group's partitions share the place
   * the scheduler would run each of them (the executor caching the parent version's partition),
   * so no task reads a parent partition from another executor.
   */
  private[indexed] def materialize(): IndexedStats = {
    if (parentRdd == null) return rdd.map(IndexedStats.of).fold(IndexedStats.zero)(_ + _)
    val cached = SparkInternals.cachedLocations(rdd)
    val parents = SparkInternals.cachedLocations(parentRdd)
    val locations = (0 until numPartitions).map { p =>
      cached(p).headOption
        .orElse(parents(p).headOption)
        .orElse(SparkInternals.preferredLocations(rdd, p).headOption)
    }
    val groups = IndexedData.taskGroups(locations, rdd.sparkContext.defaultParallelism)
    rdd.coalesce(groups.length, shuffle = false, Some(new FixedGroups(groups)))
      .map(IndexedStats.of)
      .fold(IndexedStats.zero)(_ + _)
  }

  /**
   * Whether one executor caches every partition: one task there reads them all in place (on
   * several executors, a single task would fetch the others' partitions over the network).
   */
  private[indexed] def cachedOnOneExecutor: Boolean =
    SparkInternals.cachedLocations(rdd).map(_.toSet).reduceOption(_ intersect _).exists(_.nonEmpty)

  /** How many tasks [[inTasks]] reads the partitions in, for at most `tasks`. */
  private[indexed] def tasksFor(tasks: Int): Int = math.max(1, math.min(tasks, numPartitions))

  /**
   * The partitions, each with its number, read in [[tasksFor]]`(tasks)` tasks: partitions cached
   * (else preferring to run) on the same executor together, as [[materialize]] groups them. The
   * number of tasks depends on `tasks` only, so a plan can state it before it runs.
   */
  private[indexed] def inTasks(tasks: Int): RDD[(Int, IndexedPartition)] = {
    val numbered = rdd.mapPartitionsWithIndex((p, parts) => parts.map(p -> _), preservesPartitioning = true)
    val n = tasksFor(tasks)
    if (n == numPartitions) return numbered
    val cached = SparkInternals.cachedLocations(rdd)
    val locations = (0 until numPartitions).map { p =>
      cached(p).headOption.orElse(SparkInternals.preferredLocations(rdd, p).headOption)
    }
    numbered.coalesce(n, shuffle = false, Some(new FixedGroups(IndexedData.fixedTaskGroups(locations, n))))
  }
}

/** Coalesces an RDD into the given groups of its partitions, each preferring its location. */
private final class FixedGroups(groups: Array[(Option[String], Array[Int])])
  extends PartitionCoalescer with Serializable {
  override def coalesce(maxPartitions: Int, parent: RDD[_]): Array[PartitionGroup] = groups.map {
    case (location, members) =>
      val group = new PartitionGroup(location)
      members.foreach(p => group.partitions += parent.partitions(p))
      group
  }
}

private[indexed] object IndexedData {
  private val ids = new AtomicLong()

  /**
   * Partitions `0 until locations.length` in groups for `slots` concurrent tasks: partitions
   * with the same preferred location (None: any) together, each location getting groups in
   * proportion to its share of the partitions, at least one; partitions dealt round-robin.
   */
  private[indexed] def taskGroups(locations: Seq[Option[String]], slots: Int): Array[(Option[String], Array[Int])] = {
    val n = locations.length
    locations.indices.groupBy(locations(_)).toSeq.sortBy(_._2.head).flatMap { case (location, members) =>
      val k = math.min(members.length, math.max(1, math.ceil(slots.toDouble * members.length / n).toInt))
      (0 until k).map(g => location -> members.indices.filter(_ % k == g).map(members(_)).toArray)
    }.toArray
  }

  /**
   * Partitions `0 until locations.length` in exactly `tasks` (≤ the partitions) groups of equal
   * size but one: in order of their preferred location, each group preferring its members' most
   * common one.
   */
  private[indexed] def fixedTaskGroups(
      locations: Seq[Option[String]], tasks: Int): Array[(Option[String], Array[Int])] = {
    val n = locations.length
    val order = locations.indices.sortBy(p => (locations(p).isEmpty, locations(p).getOrElse(""), p))
    Array.tabulate(tasks) { g =>
      val members = order.slice(g * n / tasks, (g + 1) * n / tasks)
      val location = members.groupBy(locations(_)).toSeq
        .minBy { case (l, ps) => (-ps.length, l.isEmpty, l.getOrElse("")) }._1
      location -> members.sorted.toArray
    }
  }

  /** Copies of the rows of `part` with any of `keys` (index keys of the partition's codec). */
  private def lookupIn(part: IndexedPartition, keys: Array[AnyRef]): Array[InternalRow] =
    keys.iterator.flatMap(k => part.lookup(k).map(_.copy(): InternalRow)).toArray

  /** Version 0 over `df`'s rows (which must already have `schema`'s column order and types). */
  def build(df: DataFrame, schema: StructType, keyOrdinal: Int, numPartitions: Int,
      batchSize: Int, packing: BatchPacking): IndexedData = {
    val id = ids.incrementAndGet()
    val shuffled = shuffleByKey(df, schema, keyOrdinal, numPartitions)
    val rdd = shuffled.mapPartitionsWithIndex((p, rows) =>
        Iterator(IndexedPartition.build(schema, keyOrdinal, batchSize, rows, packing, p)),
      preservesPartitioning = true)
    rdd.setName(s"IndexedDataFrame $id v0 (${schema(keyOrdinal).name})")
    val stats = df.queryExecution.optimizedPlan.stats
    new IndexedData(id, 0, schema, keyOrdinal, numPartitions, batchSize, packing, rdd, stats.sizeInBytes,
      stats.rowCount)
  }

  /**
   * `df`'s rows hash-partitioned exactly as Spark's `HashPartitioning(key, numPartitions)` would
   * place them (floating point keys normalised as in joins), so a probe side that Spark shuffles
   * for a join on the key meets the index partition holding its keys. The shuffle is built
   * directly (not through a DataFrame repartition) so nothing runs before the index is used.
   */
  def shuffleByKey(df: DataFrame, schema: StructType, keyOrdinal: Int,
      numPartitions: Int): RDD[InternalRow] = {
    val attributes = DataTypeUtils.toAttributes(schema)
    val width = schema.length
    val rows = df.queryExecution.toRdd.mapPartitions { it =>
      // `df` has exactly `schema`'s columns and types, so its unsafe rows (those of most plans)
      // are shuffled as they are; code for a projection is generated only for other rows.
      lazy val toUnsafe = UnsafeProjection.create(schema)
      it.map {
        case u: UnsafeRow if u.numFields == width => u: InternalRow
        case other => toUnsafe(other): InternalRow
      }
    }
    val codec = KeyCodec(schema(keyOrdinal).dataType)
    val partitioning = HashPartitioning(Seq(codec.partitionKey(attributes(keyOrdinal))), numPartitions)
    Shuffles.exchange(rows, attributes, partitioning)
  }
}

/**
 * The logical plan node of an Indexed DataFrame version. Planner strategies turn key lookups
 * and equi-joins on the key over it into index operations; anything else scans its rows.
 */
case class IndexedRelation(output: Seq[Attribute], data: IndexedData)
  extends LeafNode with MultiInstanceRelation {

  /** The key column's attribute. */
  def keyAttribute: Attribute = output(data.keyOrdinal)

  override def newInstance(): IndexedRelation = copy(output = output.map(_.newInstance()))

  override def computeStats(): Statistics = data.statistics

  override def simpleString(maxFields: Int): String =
    s"IndexedRelation ${truncatedString(output, "[", ", ", "]", maxFields)}, " +
      s"key=${keyAttribute.name}, id=${data.indexId}, version=${data.version}, " +
      s"partitions=${data.numPartitions}"
}
