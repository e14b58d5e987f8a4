package io.hyperspace.rules

import io.hyperspace.HyperspaceSparkSessionExtension
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.index.split.SeekEstimate

/**
 * Why an index did not rewrite a query, as decided by the check that turned it down. The rules
 * produce these where they decide ([[DecisionLog]]); whyNot only formats them, so what it says
 * cannot drift from what the optimizer did. `describe` is the text users read.
 */
sealed trait Reason {
  def describe: String
}

object Reason {

  /**
   * Not a reason against the index: what it will do once the query runs, decided then (join
   * pruning); whyNot says it also for an index the planned query uses.
   */
  sealed trait DecidedAtRunTime extends Reason

  // The session: nothing is rewritten at all.

  case object ExtensionNotInstalled extends Reason {
    def describe: String = "Hyperspace's extension is not installed in this session (build it with " +
      s"spark.sql.extensions=${HyperspaceSparkSessionExtension.className}), so no query is rewritten"
  }

  case object RewritingDisabled extends Reason {
    def describe: String =
      s"rewriting is off in this session (${HyperspaceConf.APPLY_ENABLED.key}=false; enableHyperspace() turns it on)"
  }

  case object StreamingQuery extends Reason {
    def describe: String = "the query is a streaming query, which Hyperspace does not rewrite"
  }

  // The index itself.

  final case class NotActive(state: String) extends Reason {
    def describe: String = s"the index is $state"
  }

  case object NotEnabled extends Reason {
    def describe: String = "the index is not enabled"
  }

  /** The index cannot be used at all (e.g. its kind is not registered in this JVM), and `why`. */
  final case class Unusable(why: String) extends Reason {
    def describe: String = why
  }

  /** The index's kind offers no rewrite; `why` is the kind's own words. */
  final case class KindOffersNoRewrite(why: String) extends Reason {
    def describe: String = why
  }

  final case class DataMissing(detail: String) extends Reason {
    def describe: String = s"its data cannot be read: $detail"
  }

  // What the whole plan allows ([[RewriteScope]]).

  final case class ReadsFileMetadata(expressions: Seq[String]) extends Reason {
    def describe: String = s"the query reads file metadata (${expressions.mkString(", ")}), which an index scan " +
      "would give for the index's files instead of the source's"
  }

  final case class WritesIndexedData(detail: String) extends Reason {
    def describe: String = detail
  }

  // The index's source against the data the query reads.

  case object SourceNotRead extends Reason {
    def describe: String = "the query does not read the data the index was built from"
  }

  final case class ReadThroughTableFormat(listing: String) extends Reason {
    def describe: String = s"the query reads the data through a table format's file list ($listing), " +
      "whose rows an index built from the files does not give"
  }

  /**
   * The query reads version `queryVersion` of a table (time travel), older than every version of
   * the index still readable (`indexVersion` is the newest's): an index built from a newer version
   * may hold rows the table did not have yet.
   */
  final case class NewerThanTable(indexVersion: Long, queryVersion: Long) extends Reason {
    def describe: String = s"the index was built from table version $indexVersion, newer than version " +
      s"$queryVersion the query reads, and no older version of the index is readable"
  }

  /**
   * The query reads an old version of a table whose files the table has since removed (Delta's
   * VACUUM): the source's read fails, so the index's copy of those rows must not answer it.
   */
  final case class SourceVersionErased(queryVersion: Long, missingFile: String) extends Reason {
    def describe: String = s"table version $queryVersion the query reads is erased from the table " +
      s"(its file $missingFile is gone, e.g. removed by VACUUM): no index serves rows its source no longer has"
  }

  /** The query reads a table-format table whose rows no index can give, and `why` (Iceberg delete files, ...). */
  final case class TableNotServable(why: String) extends Reason {
    def describe: String = s"no index can serve this table scan: $why"
  }

  /** The table's columns changed since the index was built (`detail`): its columns may be other columns now. */
  final case class TableSchemaChanged(detail: String) extends Reason {
    def describe: String = s"the table's schema changed since the index was built ($detail); refresh the index in " +
      "full mode or recreate it"
  }

  final case class OtherReader(
      queryFormat: String,
      queryOptions: Map[String, String],
      indexFormat: String,
      indexOptions: Map[String, String]) extends Reason {
    def describe: String = s"the query reads the data as $queryFormat with options $queryOptions; " +
      s"the index was built from $indexFormat with options $indexOptions"
  }

  /** How the source (or the part of it under `where`) differs from what the index was built from. */
  final case class Staleness(where: String, changes: String) {
    def describe: String = s"the source$where changed since the index was built ($changes)"
  }

  final case class StaleHypothetical(stale: Staleness) extends Reason {
    def describe: String = stale.describe
  }

  final case class StaleWithoutHybridScan(stale: Staleness) extends Reason {
    def describe: String =
      s"${stale.describe}; refresh the index, or enable hybrid scan (${HyperspaceConf.HYBRID_SCAN_ENABLED.key})"
  }

  final case class DeletedWithoutLineage(stale: Staleness) extends Reason {
    def describe: String =
      s"${stale.describe}, and without lineage hybrid scan cannot drop the rows of deleted files; refresh the index"
  }

  /** Appended bytes over source bytes (`ratio`) above the configured `max`. */
  final case class AppendedRatioExceeded(stale: Staleness, ratio: Double, max: Double) extends Reason {
    def describe: String = f"${stale.describe}; appended bytes are ${ratio * 100}%.1f%% of the source, above " +
      f"${HyperspaceConf.HYBRID_SCAN_MAX_APPENDED_RATIO.key}=$max; refresh the index"
  }

  /** Deleted bytes over indexed bytes (`ratio`) above the configured `max`. */
  final case class DeletedRatioExceeded(stale: Staleness, ratio: Double, max: Double) extends Reason {
    def describe: String = f"${stale.describe}; deleted bytes are ${ratio * 100}%.1f%% of the indexed data, above " +
      f"${HyperspaceConf.HYBRID_SCAN_MAX_DELETED_RATIO.key}=$max; refresh the index"
  }

  /** The query reads `directories` inside the index's `roots`, and `why` the index cannot serve them. */
  final case class PartOfSource(directories: Seq[String], roots: Seq[String], why: String) extends Reason {
    def describe: String =
      s"the query reads ${directories.mkString(", ")} inside the index's source (${roots.mkString(", ")})$why"
  }

  // Covering indexes: what the filter, join and aggregate rules need.

  final case class ColumnsNotCovered(columns: Seq[String]) extends Reason {
    def describe: String = s"column(s) ${columns.mkString(", ")} not covered by the index"
  }

  final case class NoFilterOnLeadingColumn(column: String) extends Reason {
    def describe: String = s"no filter on the leading indexed column '$column'"
  }

  /** A Z-order index: the filter constrains none of the columns its files have ranges of. */
  final case class NoFilterOnZOrderColumns(columns: Seq[String]) extends Reason {
    def describe: String = s"no filter on any of the Z-order columns ${columns.map(c => s"'$c'").mkString(", ")}"
  }

  /** No filter, join or aggregation over the scan that an index could serve. */
  final case class NothingToServe(leadingColumn: String) extends Reason {
    def describe: String = s"no filter on the leading indexed column '$leadingColumn' and no join"
  }

  final case class JoinKeysNotIndexed(keys: Seq[String], indexed: Seq[String]) extends Reason {
    def describe: String =
      s"the join keys (${keys.mkString(", ")}) are not the indexed columns (${indexed.mkString(", ")})"
  }

  case object NotEquiJoin extends Reason {
    def describe: String = "the join is not an equi-join"
  }

  final case class JoinTypeNotSupported(joinType: String) extends Reason {
    def describe: String = s"the join is a $joinType join, which the join rule does not rewrite"
  }

  final case class JoinKeysNotColumns(keys: Seq[String]) extends Reason {
    def describe: String = s"the join keys (${keys.mkString(", ")}) are not plain columns"
  }

  final case class SparkBroadcasts(decision: BroadcastDecision, indexOnBroadcastSide: Boolean) extends Reason {
    def describe: String = decision.describe(indexOnBroadcastSide)
  }

  final case class AdaptiveBroadcasts(decision: AdaptiveBroadcast, indexOnSmallSide: Boolean) extends Reason {
    def describe: String = decision.describe(indexOnSmallSide)
  }

  /** The streamed side of a broadcast join probes in `key` order only from an index led by `key`. */
  final case class ProbeKeyNotLeading(key: String, leading: String) extends Reason {
    def describe: String =
      s"Spark broadcasts the other side of the join; the index's leading column ($leading) is not the join key " +
        s"($key), so reading it would not put this side's probes in key order"
  }

  /** The index would read `indexBytes`, no fewer than the `sourceBytes` of the scan it would replace. */
  final case class IndexNotSmaller(indexBytes: Long, sourceBytes: Long) extends Reason {
    def describe: String = s"the index ($indexBytes bytes to read) is not smaller than the source it would replace " +
      s"($sourceBytes bytes)"
  }

  /**
   * Read with file splits in place of a streamed side of a broadcast join, the index (`index`)
   * would cost more than Spark's scan of the source (`source`): more tasks, or more bytes once
   * each file's open cost is counted, as Spark sizes its own scans.
   */
  final case class ProbeReadCostsMore(index: ScanTasks.Read, source: ScanTasks.Read) extends Reason {
    def describe: String = {
      def read(r: ScanTasks.Read) =
        s"${r.files} files, ${r.bytes} bytes, ${r.tasks} tasks, ${r.cost} bytes with each file's open cost"
      s"Spark broadcasts the other side of the join; read in place of this side, the index (${read(index)}) " +
        s"would cost more than Spark's scan of the source (${read(source)}): the key order of its probes " +
        "is not worth more tasks or more files opened"
    }
  }

  final case class GroupingNotIndexed(grouping: Seq[String], indexed: Seq[String]) extends Reason {
    def describe: String =
      s"the grouping columns (${grouping.mkString(", ")}) are not the indexed columns (${indexed.mkString(", ")})"
  }

  /** Data skipping already pruned the scan to `prunedBytes`; reading the index costs `indexBytes`. */
  final case class SkippingReadsLess(indexBytes: Long, prunedBytes: Long) extends Reason {
    def describe: String = s"data skipping leaves $prunedBytes bytes to read, no more than the index's $indexBytes"
  }

  final case class RankedLower(winner: String, criterion: String) extends Reason {
    def describe: String = s"index '$winner' was chosen instead ($criterion)"
  }

  /** The scan the index pruned was then replaced by a scan of `by` (covering indexes). */
  final case class ScanReplaced(by: Seq[String]) extends Reason {
    def describe: String = s"the scan it pruned is read from index ${by.map(n => s"'$n'").mkString(", ")} instead"
  }

  // Data skipping indexes.

  case object SkippingSourceMismatch extends Reason {
    def describe: String = "the query reads the data with another format, options or schema, or none of the " +
      "files the index summarized"
  }

  case object NoFilterOverScan extends Reason {
    def describe: String = "the query has no filter directly over the scan"
  }

  case object NoFileSkipped extends Reason {
    def describe: String = "its sketches rule out no file of the table for the query's filter"
  }

  final case class FormatPrunesItself(format: String, reportsPruning: Boolean) extends Reason {
    def describe: String =
      if (reportsPruning) s"$format's own pruning (partition values, the min/max its log keeps per file) already " +
        "leaves out every file the index would skip for this filter"
      else s"the $format provider does not report its own file pruning, so the index does not prune its tables"
  }

  /** Fewer of the table's files may not be read as plain files: only the format's scan reads them right. */
  final case class FormatScanOnly(format: String, why: String) extends Reason {
    def describe: String = s"a data skipping index cannot take files out of this $format scan: $why"
  }

  final case class NoSketchApplies(sketchColumns: Seq[String]) extends Reason {
    def describe: String = s"no sketch (${sketchColumns.mkString(", ")}) can evaluate the query's filter"
  }

  final case class Failed(error: String) extends Reason {
    def describe: String = s"the index failed while planning and is ignored for the query: $error"
  }

  // Split index seeks.

  final case class NoFilterOnKeys(keys: Seq[String]) extends Reason {
    def describe: String = s"the filter has no condition on the key columns (${keys.mkString(", ")}) alone"
  }

  final case class SeekNotSelective(fraction: Double, max: Double) extends Reason {
    def describe: String = f"the seek would read ${fraction * 100}%.1f%% of the scan's bytes, above " +
      f"${HyperspaceConf.SPLIT_MAX_READ_FRACTION.key}=$max; the plain scan costs less"
  }

  final case class SeekEstimatedNotSelective(estimate: SeekEstimate, max: Double) extends Reason {
    def describe: String = f"the seek is estimated to read ${estimate.fraction * 100}%.1f%% of the scan's bytes " +
      s"(${estimate.describe}, from the index's build statistics), well above " +
      f"${HyperspaceConf.SPLIT_MAX_READ_FRACTION.key}=$max (refused above ${SeekEstimate.refusedAbove(max) * 100}%.1f%%); " +
      "the index was not read and the plain scan is kept"
  }

  case object HypotheticalSeekNotEstimated extends Reason {
    def describe: String = "the filter on the keys is not one the seek's estimate covers (literal values, or a " +
      "literal range of an integral or date key), so a hypothetical split index is not counted on"
  }

  final case class TooManyLocations(max: Int) extends Reason {
    def describe: String =
      s"the filter matches more than $max index rows (${HyperspaceConf.SPLIT_MAX_LOCATIONS.key}); the plain scan is kept"
  }

  case object NoLocationStatistics extends Reason {
    def describe: String = "the index's log has no location statistics (written before they were recorded), " +
      "so the cost of join pruning cannot be estimated; refresh or optimize the index to record them"
  }

  final case class JoinKeyNotSelective(estimate: SeekEstimate, max: Double) extends Reason {
    def describe: String = f"a seek for even one join key is estimated to read ${estimate.fraction * 100}%.1f%% of " +
      s"the scan's bytes (${estimate.describe}), above ${HyperspaceConf.SPLIT_MAX_READ_FRACTION.key}=$max; " +
      "the join does not prune this scan"
  }

  final case class JoinPrunedAtRunTime(budget: Long, key: String) extends DecidedAtRunTime {
    def describe: String = s"join pruning decides at run time, once Spark has built the broadcast of the other side " +
      s"of the join: this scan reads only the row groups the index locates for the broadcast's $key values when " +
      s"they are at most $budget distinct keys (more are estimated to read over " +
      s"${HyperspaceConf.SPLIT_MAX_READ_FRACTION.key} of the scan, or exceed " +
      s"${HyperspaceConf.SPLIT_JOIN_PRUNING_MAX_KEYS.key}); the executed plan (explain after running) shows the seek"
  }

  final case class JoinSkippedAtRunTime(budget: Long, key: String) extends DecidedAtRunTime {
    def describe: String = s"join pruning decides at run time, once Spark has built the broadcast of the other side " +
      s"of the join: this scan reads only the files whose sketches can hold one of the broadcast's $key values " +
      s"when they are at most $budget distinct keys (${HyperspaceConf.SKETCH_JOIN_PRUNING_MAX_KEYS.key}); " +
      "the executed plan (explain after running) and the skipping statistics show the files skipped"
  }

  final case class JoinKeysKeepTooManyFiles(files: Int, max: Double) extends Reason {
    def describe: String = s"even one join key is expected to keep more than " +
      s"${HyperspaceConf.COVERING_JOIN_PRUNING_MAX_READ_FRACTION.key}=$max of the scan's $files file(s); " +
      "the join does not prune this scan by the index's buckets"
  }

  final case class JoinPrunedByBucketsAtRunTime(budget: Long, key: String) extends DecidedAtRunTime {
    def describe: String = s"join pruning decides at run time, once Spark has built the broadcast of the other side " +
      s"of the join: this scan reads only the source files that the index's buckets for the broadcast's $key " +
      s"values name (and the files the index does not cover) when they are at most $budget distinct keys " +
      s"(${HyperspaceConf.COVERING_JOIN_PRUNING_MAX_KEYS.key}, or fewer: the keys expected to keep at most " +
      s"${HyperspaceConf.COVERING_JOIN_PRUNING_MAX_READ_FRACTION.key} of the scan's files) and the index files " +
      "of their buckets are at most that fraction of the scan's bytes; the executed plan " +
      "(explain after running) and the skipping statistics show the files left out"
  }

  final case class JoinPruningNeedsLineage(key: String) extends Reason {
    def describe: String = s"the index leads with the join key $key but has no lineage (the " +
      s"${CoveringIndex.LineageColumn} column: " +
      s"${HyperspaceConf.LINEAGE_ENABLED.key} at creation), so it cannot tell which source files hold a key; " +
      "the join does not prune this scan by it"
  }

  final case class NotPlainParquetScan(what: String) extends Reason {
    def describe: String =
      s"a split index seeks into plain Parquet scans (and CSV or JSON ones, file by file) only; this scan is $what"
  }
}
