package io.hyperspace.rules

import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeMap, AttributeSet, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.types.DataTypeUtils

/**
 * A union that keeps hash partitioning: every child is hash-partitioned on the same columns into
 * `numBuckets` partitions, and bucket `i` of the result is bucket `i` of every child. Hybrid scan
 * uses it to merge an index (already bucketed) with source files appended since the index was
 * built (shuffled into the same buckets), so a join above needs no Exchange on that side.
 *
 * Children must have the same number of columns with the same types; the output is the first
 * child's attributes (as for Spark's `Union`), nullable where any child's column is.
 *
 * @param bucketColumns the names of the hash-partitioning columns, in hash order.
 */
case class BucketUnion(
    children: Seq[LogicalPlan],
    bucketColumns: Seq[String],
    numBuckets: Int) extends LogicalPlan {

  require(children.nonEmpty, "BucketUnion needs at least one child")
  require(numBuckets > 0, "BucketUnion needs a positive bucket count")

  override def output: Seq[Attribute] = {
    val first = children.head.output
    first.zipWithIndex.map { case (attr, i) =>
      attr.withNullability(children.exists(_.output(i).nullable))
    }
  }

  // Children line up by position, so none may lose a column to ColumnPruning (which prunes the
  // children of nodes it does not know down to the node's references).
  override def references: AttributeSet = AttributeSet(children.flatMap(_.output))

  override lazy val resolved: Boolean =
    childrenResolved && children.forall { child =>
      child.output.length == children.head.output.length &&
      child.output.zip(children.head.output).forall { case (a, b) =>
        DataTypeUtils.sameType(a.dataType, b.dataType)
      }
    } && bucketColumns.forall(c => bucketOrdinal(c).isDefined)

  /** Position of bucket column `name` in the output (case-insensitive, like Spark's resolver). */
  def bucketOrdinal(name: String): Option[Int] = {
    val i = children.head.output.indexWhere(_.name.equalsIgnoreCase(name))
    if (i >= 0) Some(i) else None
  }

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[LogicalPlan]): BucketUnion = copy(children = newChildren)
}

/**
 * Filter over a [[BucketUnion]] → the union of the filtered children, as Spark does for its own
 * Union (which it cannot do for a node it does not know). A join side read through hybrid scan
 * then filters before the union: the index scan gets the filter (bucket pruning, Parquet
 * pushdown) and the appended files' rows are filtered before they are shuffled into buckets.
 * Only deterministic conjuncts without subqueries move; the others stay above the union.
 * Filtering each child keeps every row in its bucket, so the union stays hash-partitioned.
 */
object PushFilterThroughBucketUnion extends Rule[LogicalPlan] with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan = plan transformDown {
    case f @ Filter(condition, union: BucketUnion) =>
      val (pushable, kept) = splitConjunctivePredicates(condition)
        .partition(c => c.deterministic && !SubqueryExpression.hasSubquery(c))
      if (pushable.isEmpty) f
      else {
        val pushed = pushable.reduce(And)
        val children = union.children.map { child =>
          // The union's output is its first child's attributes; child i lines up by position.
          val toChild = AttributeMap(union.output.zip(child.output))
          Filter(pushed.transform { case a: Attribute if toChild.contains(a) => toChild(a) }, child)
        }
        val filtered = union.copy(children = children)
        kept.reduceOption(And).map(Filter(_, filtered)).getOrElse(filtered)
      }
  }
}
