package io.hyperspace.advisor

import org.apache.spark.sql.execution.{FileSourceScanExec, SortExec, SparkPlan}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec

import io.hyperspace.explain.Plans
import io.hyperspace.index.covering.{IndexFileIndex, IndexHadoopFsRelation}
import io.hyperspace.index.split.SplitSeekFileIndex

/**
 * What a physical plan costs, in bytes: those its scans read, plus, for every shuffle and every
 * sort, the bytes read below it (an upper bound of what it moves or sorts). One unit for all
 * three, so an index that removes a shuffle is credited with the data that shuffle would move.
 * A covering index scan whose filter pins its single indexed column reads only those buckets.
 */
private[advisor] final case class PlanCost(bytesRead: Long, work: Long, exchanges: Int, sorts: Int, used: Set[String])

private[advisor] object PlanCost {

  def of(plan: SparkPlan): PlanCost = {
    val shuffles = plan.collect { case e: ShuffleExchangeExec => bytesBelow(e) }
    val sorts = plan.collect { case s: SortExec => bytesBelow(s) }
    val read = bytesBelow(plan)
    PlanCost(read, read + shuffles.sum + sorts.sum, shuffles.size, sorts.size,
      Plans.indexesIn(plan).map(_.name).toSet)
  }

  private def bytesBelow(plan: SparkPlan): Long = plan.collect { case s: FileSourceScanExec => scanBytes(s) }.sum

  private def scanBytes(scan: FileSourceScanExec): Long = scan.relation match {
    case r: IndexHadoopFsRelation if r.entry.index.numBuckets > 0 =>
      val total = r.location.sizeInBytes
      IndexFileIndex.bucketsToRead(r.entry, scan.dataFilters)
        .fold(total)(buckets => total * buckets.size / math.max(1, r.entry.index.numBuckets))
    // A seek reads its row groups, and, while planning, the index buckets its keys pin (all
    // of the index when they pin none).
    case r if r.location.isInstanceOf[SplitSeekFileIndex] =>
      val entry = r.location.asInstanceOf[SplitSeekFileIndex].entry
      val index = entry.content.sizeInBytes
      val lookup = IndexFileIndex.bucketsToRead(entry, scan.dataFilters)
        .fold(index)(buckets => index * buckets.size / math.max(1, entry.index.numBuckets))
      r.location.sizeInBytes + lookup
    case r => r.location.sizeInBytes
  }
}
