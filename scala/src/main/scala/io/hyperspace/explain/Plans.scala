package io.hyperspace.explain

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, In, InSet, Not}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.execution.IndexPhysicalRules
import io.hyperspace.index.covering.{CoveringIndex, IndexHadoopFsRelation}
import io.hyperspace.index.dataskipping.{RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.log.LogEntry
import io.hyperspace.sources.SelectedFilesIndex

/**
 * The plans of a query with and without indexes, for explain, whyNot and whatIf, planned without
 * touching the user's session: plans without indexes come from a private copy of the session
 * with rewriting off (see [[QueryPlanning]]), so a query another thread runs meanwhile is planned
 * exactly as the session's own switch says.
 */
object Plans {

  /**
   * The physical plan of `logical` planned afresh in `spark`. Under adaptive execution, its
   * initial plan, with Hyperspace's physical rules applied as Spark applies them to each stage
   * when it is created ([[IndexPhysicalRules]]), later than the initial plan shows.
   */
  def physical(spark: SparkSession, logical: LogicalPlan): SparkPlan =
    SparkInternals.ofRows(spark, logical).queryExecution.executedPlan match {
      case a: AdaptiveSparkPlanExec if spark.sessionState.columnarRules.contains(IndexPhysicalRules) =>
        IndexPhysicalRules.preColumnarTransitions(a.executedPlan)
      case a: AdaptiveSparkPlanExec => a.executedPlan
      case p => p
    }

  /** The index entries a physical plan reads, or used to skip source files. */
  def indexesIn(plan: SparkPlan): Seq[LogEntry] = plan.collect {
    case s: FileSourceScanExec if s.relation.isInstanceOf[IndexHadoopFsRelation] =>
      Seq(s.relation.asInstanceOf[IndexHadoopFsRelation].entry)
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[SkippedFilesIndex] =>
      s.relation.location.asInstanceOf[SkippedFilesIndex].entries
  }.flatten.distinctBy(e => (e.name, e.id))

  /** The data skipping statistics of the scans of a physical plan whose files an index pruned. */
  def skippingIn(plan: SparkPlan): Seq[RelationSkippingStats] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[SkippedFilesIndex] =>
      s.relation.location.asInstanceOf[SkippedFilesIndex].stats
  }

  /**
   * How many of each operator a plan has, by node name; whole-stage codegen wrappers are counted
   * as one kind and their input adapters (a codegen artifact) left out.
   */
  def operatorCounts(plan: SparkPlan): Map[String, Int] =
    plan.collect { case p => p.nodeName.trim.replaceAll("^WholeStageCodegen \\(\\d+\\)$", "WholeStageCodegen") }
      .filterNot(_ == "InputAdapter")
      .groupBy(identity).map { case (k, v) => k -> v.size }

  /** Bytes the plan's file scans read, from the files they list (index or source). */
  def bytesScanned(plan: SparkPlan): Long = plan.collect {
    case s: FileSourceScanExec => s.relation.location.sizeInBytes
  }.sum

  /**
   * What hybrid scan adds to `plan`: the number of appended source files it reads beside index
   * data, and the number of deleted source files whose rows it filters out by lineage.
   */
  def hybridScanFiles(plan: SparkPlan): (Int, Int) = {
    val appended = plan.collect {
      case s: FileSourceScanExec if s.relation.location.isInstanceOf[SelectedFilesIndex] =>
        s.relation.location.inputFiles.length
    }.sum
    val deleted = plan.collect { case f: FilterExec => f.condition }.flatMap(_.collect {
      case Not(In(a: Attribute, ids)) if a.name == CoveringIndex.LineageColumn => ids.size
      case Not(InSet(a: Attribute, ids)) if a.name == CoveringIndex.LineageColumn => ids.size
    }).sum
    (appended, deleted)
  }
}
