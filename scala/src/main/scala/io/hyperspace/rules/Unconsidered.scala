package io.hyperspace.rules

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.index.{IndexKinds, RewriteFamily}
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.{FileSource, SourceSubset}

/**
 * The reason for an index no rule looked at during a recording run: the rules only turn down
 * indexes at the operators they rewrite (a filter, join or aggregation over a scan of the
 * index's data), so an index the run never met either has no scan of its data in the plan, or
 * has one with nothing over it that the index's kind can serve.
 */
private[rules] object Unconsidered {

  def reason(entry: LogEntry, plan: LogicalPlan): Reason = {
    val kind = IndexKinds.of(entry)
    if (kind.rewrites == RewriteFamily.NoRewrite) return Reason.KindOffersNoRewrite(kind.noRewriteReason)
    val scansOfItsData = plan.collect {
      case r: LogicalRelation
          if CandidateIndexes.sourceScan(r).exists(fs => SourceSubset.overlaps(entry, FileSource(r, fs))) => r
    }
    if (scansOfItsData.nonEmpty) {
      if (kind.rewrites == RewriteFamily.FileSkipping || kind.rewrites == RewriteFamily.RowGroupSeek)
        Reason.NoFilterOverScan
      else Reason.NothingToServe(CoveringIndex.columnsOf(entry.index)._1.head.name)
    } else {
      // Scans of its data whose files come from a table format's log, which no index serves.
      plan.collectFirst {
        case FileRelation(r, fs)
            if !FileListings.isPlain(fs.location) && SourceSubset.overlaps(entry, FileSource(r, fs)) =>
          Reason.ReadThroughTableFormat(fs.location.getClass.getSimpleName)
      }.getOrElse(Reason.SourceNotRead)
    }
  }
}
