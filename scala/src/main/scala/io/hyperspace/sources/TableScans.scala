package io.hyperspace.sources

import org.apache.spark.sql.catalyst.expressions.{Alias, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.FileIndex

import io.hyperspace.shims.FileRelation

/**
 * The file listing of a file scan that stands in for a DataSource V2 scan of a table-format table
 * (Iceberg) while the rules look at a plan: the rules only read file scans.
 */
trait TableScanListing extends FileIndex {

  /** The V2 scan the file scan over this listing stands in for. */
  def original: LogicalPlan
}

/**
 * The rules see V2 scans of table-format tables as the file scans that read exactly the same rows
 * ([[TableFormatProvider.asFileScan]]), and every such file scan no index replaced is given back as
 * the format's own scan afterwards: a plan Hyperspace does not rewrite is the plan it was given.
 */
object TableScans {

  /** `plan` with every V2 table scan a format reads as files replaced by that file scan. */
  def asFileScans(plan: LogicalPlan): LogicalPlan = plan transformUp {
    case leaf: LeafNode => TableFormats.asFileScan(leaf).getOrElse(leaf)
  }

  /** `plan` with every file scan still standing in for a V2 scan put back to that scan. */
  def restore(plan: LogicalPlan): LogicalPlan = plan transformUp {
    case FileRelation(scan, fs) if fs.location.isInstanceOf[TableScanListing] =>
      val original = fs.location.asInstanceOf[TableScanListing].original
      if (scan.output == original.output) original
      else {
        // A rewrite gave the stand-in fresh attributes: keep them, over the original scan.
        Project(scan.output.zip(original.output).map { case (now, was) =>
            Alias(was, now.name)(now.exprId): NamedExpression
          }, original)
      }
  }

  /** Whether `plan` has a file scan standing in for a V2 scan. */
  def hasStandIns(plan: LogicalPlan): Boolean = plan.exists {
    case FileRelation(_, fs) => fs.location.isInstanceOf[TableScanListing]
    case _ => false
  }
}
