package io.hyperspace.execution

import org.apache.spark.sql.catalyst.expressions.{Ascending, SortOrder}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, ProjectExec, SortExec, SparkPlan}

import io.hyperspace.index.covering.IndexHadoopFsRelation

/**
 * The order in which index scans return rows, as the index log knows it: a covering index
 * writes every data file sorted on its indexed columns, so a bucketed read of an index version
 * with one file per bucket (after create, a full refresh or `optimize full`) returns each bucket
 * sorted. Spark reports a bucketed scan's sort order only under
 * `spark.sql.legacy.bucketedTableScan.outputOrdering`, a session-wide flag that would also
 * claim it for the user's own bucketed tables, so Hyperspace establishes it for index scans alone.
 */
object IndexBucketOrder {

  /**
   * The order rows of `plan` are known to arrive in, within each partition, from index buckets
   * read one sorted file each; empty when nothing is known. Filters and projections keep it
   * (a projection as far as the sorted columns stay in its output).
   */
  def ordering(plan: SparkPlan): Seq[SortOrder] = plan match {
    case scan: FileSourceScanExec => scanOrdering(scan)
    case filter: FilterExec => ordering(filter.child)
    case project: ProjectExec =>
      ordering(project.child).takeWhile(_.child.references.subsetOf(project.outputSet))
    case _ => Nil
  }

  private def scanOrdering(scan: FileSourceScanExec): Seq[SortOrder] = scan.relation match {
    case index: IndexHadoopFsRelation if index.oneSortedFilePerBucket && scan.bucketedScan =>
      index.bucketSpec.toSeq.flatMap(_.sortColumnNames)
        .map(name => scan.output.find(_.name.equalsIgnoreCase(name)))
        .takeWhile(_.isDefined)
        .map(a => SortOrder(a.get, Ascending))
    case _ => Nil
  }
}

/**
 * Removes a partition-local Sort whose input already comes sorted from index buckets
 * ([[IndexBucketOrder.ordering]]): a sort-merge join of two indexes bucketed alike then neither
 * shuffles nor sorts. Above a hybrid scan's [[BucketUnionExec]], the Sort of the whole union
 * becomes a Sort of its unsorted inputs (the appended rows) and a merge of the sorted streams.
 * Runs in [[IndexPhysicalRules]] and, for adaptive execution's initial plan, as a query stage
 * preparation rule (HyperspaceSparkSessionExtension).
 */
object RemoveSortsOfSortedIndexBuckets extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
    case sort: SortExec if !sort.global && satisfies(IndexBucketOrder.ordering(sort.child), sort) =>
      sort.child
    case sort: SortExec if !sort.global =>
      sort.child match {
        case union: BucketUnionExec if !union.mergesSorted && canMergeSorted(union, sort) =>
          union.copy(
            children = union.children.map { child =>
              if (satisfies(IndexBucketOrder.ordering(child), union.bucketOrdering(child))) child
              else SortExec(union.bucketOrdering(child), global = false, child)
            },
            mergeInOrder = true)
        case _ => sort
      }
  }

  private def satisfies(ordering: Seq[SortOrder], sort: SortExec): Boolean =
    satisfies(ordering, sort.sortOrder)

  private def satisfies(ordering: Seq[SortOrder], required: Seq[SortOrder]): Boolean =
    ordering.nonEmpty && SortOrder.orderingSatisfies(ordering, required)

  /** Worth it when some input is a sorted index, and enough when the merged order is the one asked for. */
  private def canMergeSorted(union: BucketUnionExec, sort: SortExec): Boolean =
    union.children.exists(c => satisfies(IndexBucketOrder.ordering(c), union.bucketOrdering(c))) &&
      SortOrder.orderingSatisfies(union.sortedOrdering, sort.sortOrder)
}
