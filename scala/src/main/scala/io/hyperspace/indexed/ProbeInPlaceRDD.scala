package io.hyperspace.indexed

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.{NarrowDependency, Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection

/**
 * One task of a [[ProbeInPlaceRDD]]: the probe partitions it reads and the index's partitions
 * (parent partitions travel with the task: an RDD's own list is not rebuilt where tasks run).
 */
private final class ProbeGroup(
    override val index: Int,
    val members: Array[Int],
    val probeParts: Array[Partition],
    val indexParts: Array[Partition])
  extends Partition

/**
 * An indexed join that moves neither side (see [[IndexedJoinExec]]'s `probeInPlace`): each task
 * reads a group of the probe side's partitions where they are, sorts their rows into the index
 * partitions their keys hash to, and joins each bucket with that index partition, read from the
 * block manager of the JVM it runs in (local mode: the driver's, which caches them all). Spark's
 * broadcast hash join would collect and broadcast the probe side and stream every index row; the
 * broadcast form of this join collects and broadcasts the probe side too, then joins in a stage
 * of its own.
 *
 * Only for joins where each probe row's output is decided by that row alone (no index row must
 * appear unmatched, no index-side semi join): a bucket is one task's share of a partition's probe
 * rows, not all of them.
 */
private[indexed] final class ProbeInPlaceRDD(
    private var probe: RDD[InternalRow],
    private var index: RDD[IndexedPartition],
    groups: Array[Array[Int]],
    spec: IndexedJoinSpec)
  extends RDD[InternalRow](probe.sparkContext, Nil) {

  private val numIndexPartitions = index.getNumPartitions

  override def getDependencies: Seq[org.apache.spark.Dependency[_]] = Seq(
    new NarrowDependency(probe) {
      override def getParents(partitionId: Int): Seq[Int] = groups(partitionId).toSeq
    },
    new NarrowDependency(index) {
      override def getParents(partitionId: Int): Seq[Int] = 0 until numIndexPartitions
    })

  override protected def getPartitions: Array[Partition] =
    groups.zipWithIndex.map { case (members, i) =>
      new ProbeGroup(i, members, members.map(probe.partitions(_)), index.partitions): Partition
    }

  override protected def getPreferredLocations(split: Partition): Seq[String] =
    split.asInstanceOf[ProbeGroup].probeParts.toSeq.flatMap(probe.preferredLocations).distinct

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val partitionOf = UnsafeProjection.create(Seq(spec.partitionIdOfProbe))
    // A probe side's iterator may reuse one row object: the buckets keep copies.
    val buckets = Array.fill(numIndexPartitions)(ArrayBuffer.empty[InternalRow])
    val group = split.asInstanceOf[ProbeGroup]
    group.probeParts.foreach { part =>
      probe.iterator(part, context).foreach { row =>
        buckets(partitionOf(row).getInt(0)) += row.copy()
      }
    }
    val code = new JoinCode(spec)
    buckets.indices.iterator.filter(buckets(_).nonEmpty).flatMap { p =>
      val part = index.iterator(group.indexParts(p), context).next()
      new PartitionJoin(code, part, p, check = false).rows(buckets(p).iterator, distinctRows = true)
    }
  }

  override def clearDependencies(): Unit = {
    super.clearDependencies()
    probe = null
    index = null
  }
}
