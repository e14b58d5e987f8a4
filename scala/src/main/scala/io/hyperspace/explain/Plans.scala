package io.hyperspace.explain

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, In, InSet, Not}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.{CoveringIndex, IndexHadoopFsRelation}
import io.hyperspace.index.dataskipping.{DataSkippingFileIndex, RelationSkippingStats}
import io.hyperspace.log.LogEntry
import io.hyperspace.rules.ApplyHyperspace
import io.hyperspace.sources.SelectedFilesIndex

/** The plans of a query with and without indexes, for explain, whyNot and whatIf. */
object Plans {

  /** Runs `body` with rewriting switched `on` in this session, then restores the setting. */
  def withRewriting[T](spark: SparkSession, on: Boolean)(body: => T): T = {
    val key = HyperspaceConf.APPLY_ENABLED.key
    val previous = spark.conf.getOption(key)
    spark.conf.set(key, on.toString)
    try body
    finally previous match {
        case Some(v) => spark.conf.set(key, v)
        case None => spark.conf.unset(key)
      }
  }

  /** The physical plan of `df`'s query planned afresh (adaptive execution: its initial plan). */
  def physical(spark: SparkSession, logical: LogicalPlan): SparkPlan =
    SparkInternals.ofRows(spark, logical).queryExecution.executedPlan match {
      case a: AdaptiveSparkPlanExec => a.executedPlan
      case p => p
    }

  /** The physical plan of `df` with the session's real indexes, or without any. */
  def physical(df: DataFrame, withIndexes: Boolean): SparkPlan =
    withRewriting(df.sparkSession, withIndexes)(physical(df.sparkSession, df.queryExecution.logical))

  /** The optimized logical plan of `df` with no index. */
  def optimizedWithout(df: DataFrame): LogicalPlan =
    withRewriting(df.sparkSession, on = false) {
      SparkInternals.ofRows(df.sparkSession, df.queryExecution.logical).queryExecution.optimizedPlan
    }

  /** The physical plan of `df` if `indexes` (possibly hypothetical) were the only ones. */
  def physicalWith(df: DataFrame, indexes: Seq[LogEntry]): SparkPlan = {
    val spark = df.sparkSession
    val rewritten = ApplyHyperspace.rewriteWith(spark, optimizedWithout(df), indexes)
    withRewriting(spark, on = false)(physical(spark, rewritten))
  }

  /** The index entries a physical plan reads, or used to skip source files. */
  def indexesIn(plan: SparkPlan): Seq[LogEntry] = plan.collect {
    case s: FileSourceScanExec if s.relation.isInstanceOf[IndexHadoopFsRelation] =>
      Seq(s.relation.asInstanceOf[IndexHadoopFsRelation].entry)
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[DataSkippingFileIndex] =>
      s.relation.location.asInstanceOf[DataSkippingFileIndex].entries
  }.flatten.distinctBy(e => (e.name, e.id))

  /** The data skipping statistics of the scans of a physical plan whose files an index pruned. */
  def skippingIn(plan: SparkPlan): Seq[RelationSkippingStats] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[DataSkippingFileIndex] =>
      s.relation.location.asInstanceOf[DataSkippingFileIndex].stats
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
