package io.hyperspace.rules

import scala.util.Random

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.SelectedFilesIndex

/**
 * An audit (`spark.hyperspace.audit.sampleRate` > 0) found a row the query keeps in data an index
 * left out: the query fails instead of silently returning fewer rows.
 */
class AuditFailure(message: String) extends HyperspaceException(message)

/** The audits' shared parts. */
object PruningAudit {

  /** A sample of `files`, `rate` of them and at least one (none when `files` is empty). */
  def sample[A](files: Seq[A], rate: Double): Set[A] =
    if (files.isEmpty) Set.empty
    else Random.shuffle(files).take(math.max(1, math.ceil(files.size * rate).toInt)).toSet

  /**
   * In audit mode, a sample of `leftOut` (files a pruning left out of `relation`'s scan) read in
   * full under `condition`: a row kept there fails the query with `failure(sample described, rows)`.
   */
  def checkLeftOut(
      spark: SparkSession,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      condition: Expression,
      leftOut: Seq[String])(failure: (String, Long) => String): Unit = {
    val rate = HyperspaceConf.auditSampleRate(spark)
    if (rate > 0 && leftOut.nonEmpty) {
      val sampled = sample(leftOut, rate)
      val found = rowsMatching(spark, relation, fs, condition, sampled)
      if (found > 0) throw new AuditFailure(failure(describe(sampled), found))
    }
  }

  /** `files` for a message: how many, and the first few. */
  private def describe(files: Set[String]): String =
    s"${files.size} sampled source file(s) (${files.toSeq.sorted.take(3).mkString(", ")}" +
      s"${if (files.size > 3) ", ..." else ""})"

  /** The rows of `relation`'s files among `paths` (all of them read) that `condition` keeps. */
  def rowsMatching(
      spark: SparkSession,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      condition: Expression,
      paths: Set[String]): Long = {
    // A listing of selected files is no source scan to the rules (CandidateIndexes.sourceScan):
    // this count is planned and read without any index.
    val scan = FileRelation.withLocation(relation, fs, new SelectedFilesIndex(fs.location, paths))
    SparkInternals.ofRows(spark, Filter(condition, scan)).count()
  }
}

/**
 * Audit mode for data skipping: a sample of the files data skipping indexes left out of a scan
 * (for a filter while planning, or for a join's keys at run time: [[JoinPruningRule]]) is read in
 * full under the same condition; a single row kept there means a sketch ruled out a file it
 * should not have.
 */
object DataSkippingAudit {

  def check(
      spark: SparkSession,
      relation: LogicalRelation,
      fs: HadoopFsRelation,
      condition: Expression,
      described: String,
      skipped: Seq[String],
      entries: Seq[LogEntry]): Unit =
    PruningAudit.checkLeftOut(spark, relation, fs, condition, skipped) { (sample, found) =>
      val names = entries.map(e => s"'${e.name}' (log version ${e.id})").mkString(", ")
      s"Data skipping index(es) $names skipped rows: $sample skipped hold $found " +
        s"row(s) the filter $described keeps. Refresh the index in full mode or delete it; the query was not run."
    }
}
