package io.hyperspace.execution

import scala.reflect.ClassTag

import org.apache.spark.{Dependency, OneToOneDependency, Partition, SparkContext, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, Expression, SortOrder}
import org.apache.spark.sql.catalyst.expressions.codegen.LazilyGeneratedOrdering
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, HashPartitioning, Partitioning}
import org.apache.spark.sql.execution.SparkPlan

/**
 * Physical [[io.hyperspace.rules.BucketUnion]]: concatenates partition `i` of every child into
 * partition `i` of the result, without a shuffle.
 *
 * Each child is required to be clustered on the bucket columns into exactly `numBuckets`
 * partitions, so Spark inserts a shuffle (hash-partitioning on the bucket columns, in order)
 * only for children that are not already bucketed that way — the appended files, never the
 * index. It is a `ClusteredDistribution` rather than the stricter
 * `StatefulOpClusteredDistribution` because Spark keeps a bucketed scan bucketed only under an
 * operator that requires a clustered distribution (`DisableUnnecessaryBucketedScan`), e.g. when
 * the join above is a broadcast join; that every child's partitioning is exactly the bucketing
 * is checked before executing, so a mismatch fails loudly instead of mixing buckets.
 *
 * When some child arrives sorted on the bucket columns within each bucket (an index scan with
 * one sorted file per bucket), the buckets are merged as sorted streams: the output stays sorted,
 * so a sort-merge join above sorts only the appended rows instead of re-sorting the whole index.
 * Spark itself reports a scan's bucket order only under a legacy flag; Hyperspace knows it from
 * the index log and sets `mergeInOrder` once the plan is final ([[RemoveSortsOfSortedIndexBuckets]]).
 */
case class BucketUnionExec(
    children: Seq[SparkPlan],
    bucketOrdinals: Seq[Int],
    numBuckets: Int,
    mergeInOrder: Boolean = false) extends SparkPlan {

  override def output: Seq[Attribute] = {
    val first = children.head.output
    first.zipWithIndex.map { case (attr, i) =>
      attr.withNullability(children.exists(_.output(i).nullable))
    }
  }

  private def bucketExpressions(plan: SparkPlan): Seq[Expression] =
    bucketOrdinals.map(plan.output)

  /** `plan`'s rows in the order of the bucket columns. */
  def bucketOrdering(plan: SparkPlan): Seq[SortOrder] =
    bucketExpressions(plan).map(SortOrder(_, Ascending))

  /** The output's order when the children are merged as sorted streams. */
  def sortedOrdering: Seq[SortOrder] = bucketOrdinals.map(i => SortOrder(output(i), Ascending))

  /**
   * Whether the children are merged as sorted streams: when told so, or when Spark reports some
   * child sorted already (then sorting the others costs less than sorting the union).
   */
  lazy val mergesSorted: Boolean =
    mergeInOrder || children.exists(c => SortOrder.orderingSatisfies(c.outputOrdering, bucketOrdering(c)))

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    if (mergesSorted) children.map(bucketOrdering) else children.map(_ => Nil)

  override def outputOrdering: Seq[SortOrder] = if (mergesSorted) sortedOrdering else Nil

  override def outputPartitioning: Partitioning =
    HashPartitioning(bucketOrdinals.map(output), numBuckets)

  override def requiredChildDistribution: Seq[Distribution] =
    children.map(child => ClusteredDistribution(bucketExpressions(child), requiredNumPartitions = Some(numBuckets)))

  /** Whether `child` is hash-partitioned on exactly the bucket columns, in order, into the buckets. */
  private def isBucketed(child: SparkPlan): Boolean = child.outputPartitioning match {
    case HashPartitioning(expressions, n) =>
      n == numBuckets && expressions.length == bucketOrdinals.length &&
      expressions.zip(bucketExpressions(child)).forall { case (a, b) => a.semanticEquals(b) }
    case _ => false
  }

  override protected def doExecute(): RDD[InternalRow] = {
    children.find(!isBucketed(_)).foreach { child =>
      throw new IllegalStateException(
        s"BucketUnion needs every child hash-partitioned on ${bucketExpressions(child).mkString(", ")} " +
          s"into $numBuckets partitions, but ${child.nodeName} is partitioned as ${child.outputPartitioning}")
    }
    val rdds = children.map(_.execute())
    if (!mergesSorted) new BucketUnionRDD[InternalRow](sparkContext, rdds, numBuckets)
    else {
      val ordering = new LazilyGeneratedOrdering(outputOrdering, output)
      new BucketUnionRDD[InternalRow](sparkContext, rdds, numBuckets,
        parts => SortedMerge(parts, ordering))
    }
  }

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[SparkPlan]): BucketUnionExec = copy(children = newChildren)
}

/** Partition `index` of a [[BucketUnionRDD]]: the same-numbered partition of every parent. */
private[execution] class BucketUnionPartition(
    override val index: Int,
    val parentPartitions: Seq[Partition]) extends Partition

/**
 * Zips same-numbered partitions of equally partitioned RDDs: `combine` turns the parents'
 * iterators for one partition into the partition's rows (concatenation by default).
 */
class BucketUnionRDD[T: ClassTag](
    sc: SparkContext,
    var parents: Seq[RDD[T]],
    numBuckets: Int,
    combine: Seq[Iterator[T]] => Iterator[T] = (parts: Seq[Iterator[T]]) => parts.iterator.flatten)
  extends RDD[T](sc, Nil) {

  override protected def getDependencies: Seq[Dependency[_]] =
    parents.map(new OneToOneDependency(_))

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](numBuckets) { i =>
      new BucketUnionPartition(i, parents.map(_.partitions(i)))
    }

  override def compute(split: Partition, context: TaskContext): Iterator[T] = {
    val partition = split.asInstanceOf[BucketUnionPartition]
    combine(parents.zip(partition.parentPartitions).map { case (rdd, p) => rdd.iterator(p, context) })
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

/** Merges iterators each sorted by `ordering` into one sorted iterator. */
private[execution] object SortedMerge {
  def apply(parts: Seq[Iterator[InternalRow]], ordering: Ordering[InternalRow]): Iterator[InternalRow] = {
    // Scans reuse their row objects, so a row waiting in the queue must be a copy.
    val heads = new java.util.PriorityQueue[(InternalRow, Iterator[InternalRow])](
      math.max(1, parts.size), (a, b) => ordering.compare(a._1, b._1))
    parts.foreach(it => if (it.hasNext) heads.add((it.next().copy(), it)))
    new Iterator[InternalRow] {
      override def hasNext: Boolean = !heads.isEmpty
      override def next(): InternalRow = {
        val (row, it) = heads.poll()
        if (it.hasNext) heads.add((it.next().copy(), it))
        row
      }
    }
  }
}
