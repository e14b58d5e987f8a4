package io.hyperspace.rules

import org.apache.spark.sql.SparkSession

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.LogEntry
import io.hyperspace.sources.SourceChanges

/**
 * When hybrid scan may make up for the changes of a source since its index was built: reading
 * the appended files beside the index data and filtering out the rows of deleted ones. Only the
 * decision lives here; [[CandidateIndexes]] finds the changes and [[HybridScan]] builds the plan.
 *
 * @param enabled          `spark.hyperspace.index.hybridscan.enabled`
 * @param maxAppendedRatio appended bytes over the bytes the query lists, at most
 * @param maxDeletedRatio  deleted bytes over the bytes the index covers, at most
 */
final case class HybridScanPolicy(enabled: Boolean, maxAppendedRatio: Double, maxDeletedRatio: Double) {

  /**
   * Whether hybrid scan may make up for `changes` to `entry`'s source, a source of `listedBytes`
   * now against the `indexedBytes` the index covers: Right with the changes, or Left with the
   * reason (`where` names the part of the source compared, for messages). No changes need no
   * hybrid scan; a hypothetical index (whatIf) is never stale; deleted files need lineage,
   * without which the index cannot tell their rows.
   */
  def allows(
      entry: LogEntry,
      changes: SourceChanges,
      listedBytes: Long,
      indexedBytes: Long,
      where: String = ""): Either[Reason, SourceChanges] = {
    val stale = Reason.Staleness(where, changes.describe)
    if (changes.isEmpty) Right(changes)
    else if (entry.isHypothetical) Left(Reason.StaleHypothetical(stale))
    else if (!enabled) Left(Reason.StaleWithoutHybridScan(stale))
    else if (changes.deleted.nonEmpty && !entry.index.lineage) Left(Reason.DeletedWithoutLineage(stale))
    else {
      val appendedRatio = changes.appendedBytes.toDouble / math.max(1L, listedBytes)
      val deletedRatio = changes.deletedBytes.toDouble / math.max(1L, indexedBytes)
      if (appendedRatio > maxAppendedRatio) Left(Reason.AppendedRatioExceeded(stale, appendedRatio, maxAppendedRatio))
      else if (deletedRatio > maxDeletedRatio) Left(Reason.DeletedRatioExceeded(stale, deletedRatio, maxDeletedRatio))
      else Right(changes)
    }
  }
}

object HybridScanPolicy {
  /** The policy `spark`'s settings describe now. */
  def of(spark: SparkSession): HybridScanPolicy = HybridScanPolicy(
    HyperspaceConf.hybridScanEnabled(spark),
    HyperspaceConf.hybridScanMaxAppendedRatio(spark),
    HyperspaceConf.hybridScanMaxDeletedRatio(spark))
}
