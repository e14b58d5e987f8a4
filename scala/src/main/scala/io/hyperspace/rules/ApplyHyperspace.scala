package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.index.dataskipping.DataSkippingFileIndex
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileRelation

/**
 * The optimizer rule that rewrites queries to use indexes. It runs in every session built with
 * the extension and does nothing unless Hyperspace is enabled for that session
 * (`spark.hyperspace.apply.enabled`, set by `enableHyperspace()`).
 *
 * The rewrites it applies are [[IndexRewrite]]s, tried in order; an internal error in any of them
 * is logged and the original plan returned, because a failed optimisation must never fail, or
 * change, a user's query.
 */
case class ApplyHyperspace(spark: SparkSession) extends Rule[LogicalPlan] with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!isEnabled || plan.isStreaming) {
      plan
    } else {
      try {
        if (!plan.exists(isSourceScan)) plan
        else {
          val indexes = CandidateIndexes.active(spark)
          rewriteWithReadableIndexes(plan, indexes)
        }
      } catch {
        case NonFatal(e) =>
          logWarning(s"Hyperspace could not rewrite the plan; running it unchanged. Cause: $e", e)
          plan
      }
    }
  }

  /**
   * `plan` rewritten with `indexes`, none of whose data files is missing: each index the rewrite
   * newly puts into the plan has its files checked once (a listing per data version), and if
   * any is gone the rewrite is redone without it — a query never fails, nor returns fewer rows,
   * because index data was removed behind the log's back. Later optimizer passes find the index
   * already in the plan and do not check it again.
   */
  private def rewriteWithReadableIndexes(plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan = {
    val inPlanAlready = ApplyHyperspace.indexesIn(plan).map(_.identity).toSet
    val readable = scala.collection.mutable.Map[(String, String, Long), Boolean]()
    def isReadable(e: LogEntry): Boolean = readable.getOrElseUpdate(e.identity,
      CandidateIndexes.missingData(spark, e) match {
        case None => true
        case Some(reason) =>
          logWarning(s"Hyperspace does not use index '${e.name}': $reason")
          CandidateIndexes.forget(e)
          false
      })
    @scala.annotation.tailrec
    def attempt(usable: Seq[LogEntry]): LogicalPlan = {
      val rewritten = ApplyHyperspace.rewriteWith(spark, plan, usable)
      val broken = ApplyHyperspace.indexesIn(rewritten)
        .filterNot(e => inPlanAlready.contains(e.identity) || isReadable(e)).map(_.identity).toSet
      val remaining = usable.filterNot(e => broken.contains(e.identity))
      if (broken.isEmpty) rewritten
      else if (remaining.size == usable.size) plan // cannot happen: rewrites only use `usable`
      else attempt(remaining)
    }
    attempt(indexes)
  }

  private def isSourceScan(p: LogicalPlan): Boolean = p match {
    case r: LogicalRelation => CandidateIndexes.sourceScan(r).isDefined
    case _ => false
  }

  // A malformed apply.enabled value must not break queries of a session: treat it as off.
  private def isEnabled: Boolean =
    try HyperspaceConf.applyEnabled(spark)
    catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace is off for this query: ${e.getMessage}")
        false
    }
}

/** A plan rewrite proposed by an index kind (filter, join, data skipping, ...). */
trait IndexRewrite {
  /** Returns `plan` rewritten to use some of `indexes`, or `plan` itself when nothing applies. */
  def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan
}

object ApplyHyperspace {
  /**
   * The rewrites, in the order they are tried. Data skipping first: it only prunes the file list
   * of a filtered scan, which stays a source scan the covering rules can still replace (they
   * look at the full listing). Then joins, so a join side gets the index bucketed on its join
   * keys rather than one chosen for a filter below it (avoiding shuffles wins over skipping);
   * then aggregations (bucketed on their grouping keys); then filters, where a covering index
   * replaces a pruned scan only when it reads fewer bytes.
   */
  val rewrites: Seq[IndexRewrite] = Seq(DataSkippingRule, JoinIndexRule, AggregateIndexRule, FilterIndexRule)

  /**
   * `plan` rewritten to use some of `indexes` (real ones, or hypothetical ones for whatIf), as
   * far as its [[RewriteScope]] allows.
   */
  def rewriteWith(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan =
    if (indexes.isEmpty) plan
    else {
      val allowed = rewritesFor(RewriteScope.of(plan, indexes))
      allowed.foldLeft(plan)((current, rewrite) => rewrite(spark, current, indexes))
    }

  /** The rewrites a scope allows, in order: data skipping keeps the source's scans, the others replace them. */
  def rewritesFor(scope: RewriteScope): Seq[IndexRewrite] = rewrites.filter {
    case DataSkippingRule => scope.skippingAllowed
    case _ => scope.coveringAllowed
  }

  /** The index entries a logical plan reads (covering indexes) or prunes files with (data skipping). */
  def indexesIn(plan: LogicalPlan): Seq[LogEntry] = plan.collect {
    case FileRelation(_, r: IndexHadoopFsRelation) => Seq(r.entry)
    case FileRelation(_, r) if r.location.isInstanceOf[DataSkippingFileIndex] =>
      r.location.asInstanceOf[DataSkippingFileIndex].entries
  }.flatten
}
