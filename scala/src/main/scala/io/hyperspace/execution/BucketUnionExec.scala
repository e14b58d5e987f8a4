package io.hyperspace.execution

import scala.reflect.ClassTag

import org.apache.spark.{Dependency, OneToOneDependency, Partition, SparkContext, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, HashPartitioning, Partitioning, StatefulOpClusteredDistribution}
import org.apache.spark.sql.execution.SparkPlan

/**
 * Physical [[io.hyperspace.rules.BucketUnion]]: concatenates partition `i` of every child into
 * partition `i` of the result, without a shuffle.
 *
 * Each child is required to be hash-partitioned on exactly the bucket columns into
 * `numBuckets` partitions (`StatefulOpClusteredDistribution` demands that exact partitioning,
 * not merely a compatible clustering), so Spark inserts a shuffle only for children that are not
 * already bucketed that way — the appended files, never the index.
 */
case class BucketUnionExec(
    children: Seq[SparkPlan],
    bucketOrdinals: Seq[Int],
    numBuckets: Int) extends SparkPlan {

  override def output: Seq[Attribute] = {
    val first = children.head.output
    first.zipWithIndex.map { case (attr, i) =>
      attr.withNullability(children.exists(_.output(i).nullable))
    }
  }

  private def bucketExpressions(plan: SparkPlan): Seq[Expression] =
    bucketOrdinals.map(plan.output)

  override def outputPartitioning: Partitioning =
    HashPartitioning(bucketOrdinals.map(output), numBuckets)

  override def requiredChildDistribution: Seq[Distribution] =
    children.map(child => StatefulOpClusteredDistribution(bucketExpressions(child), numBuckets))

  override protected def doExecute(): RDD[InternalRow] = {
    val rdds = children.map(_.execute())
    rdds.zip(children).foreach { case (rdd, child) =>
      if (rdd.getNumPartitions != numBuckets) {
        throw new IllegalStateException(
          s"BucketUnion expected $numBuckets partitions from every child but got " +
            s"${rdd.getNumPartitions} from ${child.nodeName}")
      }
    }
    new BucketUnionRDD[InternalRow](sparkContext, rdds, numBuckets)
  }

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[SparkPlan]): BucketUnionExec = copy(children = newChildren)
}

/** Partition `index` of a [[BucketUnionRDD]]: the same-numbered partition of every parent. */
private[execution] class BucketUnionPartition(
    override val index: Int,
    val parentPartitions: Seq[Partition]) extends Partition

/** Zips same-numbered partitions of equally partitioned RDDs by concatenation. */
class BucketUnionRDD[T: ClassTag](
    sc: SparkContext,
    var parents: Seq[RDD[T]],
    numBuckets: Int) extends RDD[T](sc, Nil) {

  override protected def getDependencies: Seq[Dependency[_]] =
    parents.map(new OneToOneDependency(_))

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](numBuckets) { i =>
      new BucketUnionPartition(i, parents.map(_.partitions(i)))
    }

  override def compute(split: Partition, context: TaskContext): Iterator[T] = {
    val partition = split.asInstanceOf[BucketUnionPartition]
    parents.iterator.zip(partition.parentPartitions.iterator).flatMap {
      case (rdd, p) => rdd.iterator(p, context)
    }
  }

  override protected def getPreferredLocations(split: Partition): Seq[String] = {
    val partition = split.asInstanceOf[BucketUnionPartition]
    parents.zip(partition.parentPartitions).flatMap { case (rdd, p) =>
      rdd.preferredLocations(p)
    }.distinct
  }

  override def clearDependencies(): Unit = {
    super.clearDependencies()
    parents = null
  }
}
