package io.hyperspace.index.zorder

import scala.util.Random

import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetOutputFormat
import org.apache.spark.sql.{DataFrame, SaveMode}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.hyperspace.DataSkippingInternals
import org.apache.spark.sql.types.DataType

/**
 * How a Z-order covering index lays its rows out: ranks of each indexed column from sampled
 * quantiles ([[ZOrderValue]]), then rows range-partitioned on the Z-value into files of about
 * the target size, each file sorted by it. Consecutive files thus hold consecutive stretches of
 * the curve, and each stretch spans a narrow range of every indexed column of many values; a
 * column of few values has its ranks in the low bits, so the stretches are led by the others
 * (docs/zorder.md, measured both ways).
 */
object ZOrderLayout {

  /** Rows sampled in all, per rank a column can take, for its boundaries. */
  private val SamplesPerRank = 20
  private val MaxSample = 200000
  private val MinSamplePerPartition = 20
  private val MaxBitsPerColumn = 10
  private val ZColumn = "__hs_zorder_value"

  /** Bits per column: as many as the long allows, at most [[MaxBitsPerColumn]] (1024 ranks). */
  def bitsPerColumn(columns: Int): Int = math.min(MaxBitsPerColumn, 62 / columns)

  /**
   * Writes `data` (the stored columns of the index) into `dataPath` laid out along the Z-order
   * curve over `indexed` (stored column names), in files of at most about `targetFileBytes`
   * (estimated from the stored columns' default sizes, before compression), in Parquet pages of
   * at most `pageRows` rows.
   */
  def write(data: DataFrame, indexed: Seq[String], targetFileBytes: Long, pageRows: Int, dataPath: Path,
      mode: SaveMode): Unit = {
    val schema = data.schema
    val indexedTypes = indexed.map(c => schema(c).dataType)
    val bits = bitsPerColumn(indexed.size)
    val (rows, sample) = sampleOf(data.select(indexed.map(c => col(quoted(c))): _*), (1 << bits) * SamplesPerRank)
    val bounds = indexedTypes.indices.map(i =>
      boundaries(sample.map(s => (s._1.get(i, indexedTypes(i)), s._2)),
        indexedTypes(i), (1 << bits) - 2))
    val rowBytes = math.max(1L, schema.fields.map(_.dataType.defaultSize.toLong).sum)
    val rowsPerFile = math.max(1L, targetFileBytes / rowBytes)
    val numFiles = math.max(1L, math.min(100000L, (rows + rowsPerFile - 1) / rowsPerFile)).toInt
    val z = ZOrderValue(indexed.map(c => DataSkippingInternals.expression(col(quoted(c)))), bounds, bits)
    val laidOut = data.withColumn(ZColumn, DataSkippingInternals.column(z))
      .repartitionByRange(numFiles, col(ZColumn))
      .sortWithinPartitions(col(ZColumn))
      .drop(ZColumn)
    // The range partitioner's bounds come from a sample too: a partition may come out larger
    // than planned, and is then cut into several files, each still a sorted stretch of the curve.
    // Within a file the rows follow the curve too, so a page is a shorter stretch of it, with
    // narrower ranges of every indexed column, and a range reads only the pages whose min/max
    // (the file's page index) can match. How short pays depends on the queries: fewer rows
    // decoded for a narrow range, more per-page work where a file is read mostly whole.
    laidOut.write.mode(mode)
      .option("maxRecordsPerFile", rowsPerFile.toString)
      .option(ParquetOutputFormat.PAGE_ROW_COUNT_LIMIT, pageRows.toString)
      .parquet(dataPath.toString)
  }

  /**
   * The number of rows of `df` and a sample of about `target` of them, each with the number of
   * rows it stands for (its partition's rows over its partition's sample size), in one pass.
   */
  private def sampleOf(df: DataFrame, target: Int): (Long, Seq[(InternalRow, Double)]) = {
    val rdd = df.queryExecution.toRdd
    val perPartition = math.max(MinSamplePerPartition,
      math.min(MaxSample, target * 3 / math.max(1, rdd.getNumPartitions)))
    val parts = rdd.mapPartitionsWithIndex { (index, rows) =>
      val random = new Random(index)
      val reservoir = new scala.collection.mutable.ArrayBuffer[InternalRow](perPartition)
      var seen = 0L
      rows.foreach { row =>
        seen += 1
        if (reservoir.size < perPartition) reservoir += row.copy()
        else {
          val j = (random.nextDouble() * seen).toLong
          if (j < perPartition) reservoir(j.toInt) = row.copy()
        }
      }
      Iterator((seen, reservoir.toArray))
    }.collect()
    val sample = parts.toSeq.flatMap { case (seen, kept) =>
      kept.toSeq.map(r => (r, if (kept.isEmpty) 0.0 else seen.toDouble / kept.length))
    }
    (parts.map(_._1).sum, sample)
  }

  /**
   * Up to `count` distinct values of type `dataType` cutting the weighted non-null `values` into
   * parts of equal weight, sorted. A value heavier than a part gets a rank of its own.
   */
  private[hyperspace] def boundaries(values: Seq[(Any, Double)], dataType: DataType, count: Int): IndexedSeq[Any] = {
    val ordering = TypeUtils.getInterpretedOrdering(dataType)
    val sorted = values.filter(_._1 != null).sortBy(_._1)(ordering)
    val total = sorted.map(_._2).sum
    if (sorted.isEmpty || count <= 0) return IndexedSeq.empty
    val step = total / (count + 1)
    val out = scala.collection.mutable.ArrayBuffer.empty[Any]
    var cumulative = 0.0
    var next = step
    sorted.foreach { case (v, w) =>
      cumulative += w
      if (cumulative >= next && out.size < count && (out.isEmpty || ordering.gt(v, out.last))) {
        out += v
        while (next <= cumulative) next += step
      }
    }
    out.toIndexedSeq
  }

  private def quoted(name: String): String = io.hyperspace.index.covering.IndexColumn.quote(name)
}
