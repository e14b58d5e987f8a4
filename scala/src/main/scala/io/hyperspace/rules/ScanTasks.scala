package io.hyperspace.rules

import org.apache.spark.sql.SparkSession

/**
 * How Spark's file scan reads a list of files when it is not read by bucket: what a rule needs to
 * compare two ways of reading one side without planning either.
 *
 * Spark sizes its read partitions from `spark.sql.files.maxPartitionBytes`, `openCostInBytes` and
 * the minimum partition number (`spark.sql.files.minPartitionNum`, else the leaf parallelism):
 * the split size is the bytes per slot, between the open cost and the maximum; files longer than
 * it are cut into splits; the pieces, longest first, fill a partition until the next would pass
 * the split size, each costing its length plus the open cost. A few files of Parquet are
 * splittable, so this is also what a bucketed index's files cost read with file splits.
 */
object ScanTasks {

  /** The read of files of `sizes` bytes: its tasks, and its cost in bytes with each file's open cost. */
  final case class Read(files: Int, bytes: Long, tasks: Int, cost: Long)

  def of(spark: SparkSession, sizes: Seq[Long]): Read = {
    val conf = spark.sessionState.conf
    val openCost = conf.filesOpenCostInBytes
    val minPartitions = conf.filesMinPartitionNum.getOrElse(
      spark.conf.getOption("spark.sql.leafNodeDefaultParallelism").map(_.toInt)
        .getOrElse(spark.sparkContext.defaultParallelism))
    val cost = sizes.map(_ + openCost).sum
    val maxSplit = math.max(1L,
      math.min(conf.filesMaxPartitionBytes, math.max(openCost, cost / math.max(1, minPartitions))))
    val pieces = sizes.flatMap { size =>
      val whole = size / maxSplit
      val rest = size % maxSplit
      Seq.fill(whole.toInt)(maxSplit) ++ (if (rest > 0 || size == 0) Seq(rest) else Nil)
    }.sorted(Ordering[Long].reverse)
    val (partitions, _) = pieces.foldLeft((0, -1L)) {
      case ((count, current), piece) if current < 0 || current + piece > maxSplit => (count + 1, piece + openCost)
      case ((count, current), piece) => (count, current + piece + openCost)
    }
    Read(sizes.size, sizes.sum, partitions, cost)
  }
}
