package io.hyperspace.advisor

import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.BoundReference
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types.{DataType, StructType}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.FileRanges
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.index.dataskipping.{BloomFilterSketch, DataSkippingIndexConfig, DataSkippingIndexData, MinMaxSketch, ValueListSketch}
import io.hyperspace.index.dataskipping.expressions.{BloomFilterBits, DistinctSketchAggregate, ValueHash}
import io.hyperspace.index.split.{SplitIndex, SplitIndexConfig}
import io.hyperspace.index.zorder.{ZOrderCoveringIndex, ZOrderCoveringIndexConfig, ZOrderLayout, ZOrderValue}
import io.hyperspace.log._

/**
 * Hypothetical log entries of the kinds whose rules decide from per-file statistics (what-if's
 * covering entries, [[io.hyperspace.explain.WhatIf.entryFor]], need none): the statistics are
 * estimated from a [[RelationSample]], and the rules then decide from them exactly as from a
 * built index's — the advisor has no cost model of its own for skipping.
 */
private[advisor] object Hypothetical {

  /**
   * A Z-order covering index that is not built: as many files as its layout would write (rows ×
   * the stored row's default width over the target file size, as [[ZOrderLayout]] cuts them),
   * each holding an equal share of the sampled rows laid out along the same curve (ranks from the
   * sample's quantiles, [[ZOrderValue]]), with the range of every indexed column over its share
   * recorded as a built index's file ranges. Sizes as for a covering index (the row width share).
   */
  def zorderEntry(spark: SparkSession, sample: RelationSample, config: ZOrderCoveringIndexConfig): LogEntry = {
    val source = sample.source
    val definition = ZOrderCoveringIndex.define(spark, config, source)
    val described = sample.described
    val stored = CoveringIndex.storedSchema(definition)
    val estimated = sizeOf(sample, stored)
    val indexed = config.indexedColumns.map(c =>
      sample.indexOf(c).getOrElse(
        throw new HyperspaceException(s"Hypothetical Z-order index '${config.name}': column '$c' was not sampled.")))
    val types = indexed.map(sample.schema(_).dataType)
    val storedNames = CoveringIndex.storedIndexedColumns(definition)
    val defaultRow = math.max(1L, stored.fields.map(_.dataType.defaultSize.toLong).sum)
    val wanted = math.ceil(sample.rowCount.toDouble * defaultRow / HyperspaceConf.zorderTargetFileSize(spark)).toLong
    // Each file needs a few sampled rows for its ranges to mean anything.
    val numFiles = math.max(1L, math.min(wanted, math.max(1, sample.rows.size / 8).toLong)).toInt
    val bits = ZOrderLayout.bitsPerColumn(indexed.size)
    val bounds = indexed.indices.map(j =>
      ZOrderLayout.boundaries(sample.rows.map(r => (r.get(indexed(j), types(j)), 1.0)), types(j), (1 << bits) - 2))
    val z = ZOrderValue(indexed.indices.map(j => BoundReference(indexed(j), types(j), nullable = true)), bounds, bits)
    val laidOut = sample.rows.map(r => (z.eval(r).asInstanceOf[Long], r)).sortBy(_._1).map(_._2)
    val perFile = math.max(1, (laidOut.size + numFiles - 1) / numFiles)
    val groups = if (laidOut.isEmpty) Seq(Nil) else laidOut.grouped(perFile).toSeq
    val rowsPerFile = sample.rowCount / groups.size
    val files = groups.zipWithIndex.map { case (rows, f) =>
      val columns = indexed.indices.flatMap { j =>
        val ordering = TypeUtils.getInterpretedOrdering(types(j))
        val values = rows.filterNot(_.isNullAt(indexed(j))).map(_.get(indexed(j), types(j)))
        val (lo, hi) = if (values.isEmpty) (null, null) else (values.min(ordering), values.max(ordering))
        FileRanges.columnStats(lo, hi, rows.count(_.isNullAt(indexed(j))).toLong, types(j)).map(storedNames(j) -> _)
      }.toMap
      ContentFile(f"v__=0/part-$f%05d-hypothetical.c000.snappy.parquet", estimated / groups.size, 0L,
        Some(FileStats(rowsPerFile, columns)))
    }
    entry(config.name, definition, Content(s"hypothetical:/${config.name}", 0, files), described)
  }

  /**
   * A data skipping index of MinMax sketches that is not built: its sketch table (one row per
   * source file, as the kind's build writes it) is made from each file's range of the columns
   * ([[RelationSample.fileRanges]]: the Parquet footer's, or the sampled rows') and carried by the
   * entry itself ([[DataSkippingIndexData.HypotheticalRowsProperty]]), so the data skipping rule
   * reads and evaluates it as a built index's table, without a file or a Spark job. A source file
   * whose range is not known gets no row: it is always read, as by a built index. Its size is the
   * table's: a row per file, of the row count, id and the columns' sampled widths twice.
   */
  def skippingEntry(spark: SparkSession, sample: RelationSample, config: DataSkippingIndexConfig): LogEntry = {
    val source = sample.source
    val columns = config.sketches.map {
      case MinMaxSketch(c) => c
      case other => throw new HyperspaceException(s"The advisor estimates MinMax sketches only; got ${other.describe}.")
    }
    val definition = DataSkippingIndexData.define(spark, config, source)
    val schema = DataSkippingIndexData.schemaOf(definition)
    if (schema.size != 2 + 2 * columns.size) {
      throw new HyperspaceException(s"Hypothetical data skipping index '${config.name}': unexpected sketch table " +
        s"${schema.simpleString} (a partitioned source adds partition sketches).")
    }
    val described = sample.described
    val ranges = columns.map(sample.fileRanges)
    val rows = described.files.flatMap { f =>
      val perColumn = ranges.map(_.get(f))
      if (perColumn.exists(_.isEmpty)) None
      else {
        val values = perColumn.flatten.zipWithIndex.flatMap { case ((_, s), j) =>
          val t = schema(2 + 2 * j).dataType
          Seq(s.min, s.max).map(_.map(FileRanges.decode(_, t)).orNull)
        }
        Some(Seq[Any](f.id, perColumn.head.get._1) ++ values)
      }
    }
    val withRows = definition.copy(properties = definition.properties +
      (DataSkippingIndexData.HypotheticalRowsProperty -> DataSkippingIndexData.hypotheticalRowsJson(rows, schema)))
    val width = 16.0 + columns.map(c => 2 * sample.widths.getOrElse(c.toLowerCase(Locale.ROOT), 8.0)).sum
    val size = (described.files.size * width).toLong.max(1L)
    val file = ContentFile(s"${Content.versionDirName(0)}/part-00000-hypothetical.c000.snappy.parquet", size, 0L)
    entry(config.name, withRows, Content(s"hypothetical:/${config.name}", 0, Seq(file)), described)
  }

  /**
   * Whether a source file's range of `column` (footer or sample, [[RelationSample.fileRanges]])
   * admits a value: true when the range is not known (the file would be read).
   */
  def admits(sample: RelationSample, column: String, dataType: DataType): (SourceFile, Any) => Boolean = {
    val ranges = sample.fileRanges(column)
    val ordering = TypeUtils.getInterpretedOrdering(dataType)
    (f, value) =>
      ranges.get(f).forall { case (_, s) =>
        s.min.forall(lo => ordering.gteq(value, FileRanges.decode(lo, dataType))) &&
        s.max.forall(hi => ordering.lteq(value, FileRanges.decode(hi, dataType)))
      }
  }

  /**
   * The ids of the source files estimated to hold `value` (internal form, of `dataType`) in
   * `column`: those whose sampled rows have it, and each other file whose range of the column
   * (footer or sample, [[RelationSample.fileRanges]]) admits it with the chance that one of its
   * unsampled distinct values is this one, `(d_f - s_f) / (D - s_f)` for `d_f` estimated distinct
   * values in the file, `s_f` sampled, `D` in the relation. A workload looks up values that
   * exist: one no sample holds and no draw places is put in the admitting file the draws came
   * nearest to (about in proportion to those chances). The draws are hashes of file and value,
   * so every plan sees the same answer. Files without sampled rows are not returned (their rows
   * in a sketch table are absent: always read).
   */
  def holders(sample: RelationSample, column: String, value: Any, dataType: DataType): Set[Long] = {
    val (perFile, total) = sample.fileValues(column)
    val admitting = admits(sample, column, dataType)
    val hash = ValueHash(value, dataType)
    val draws = sample.described.files.flatMap(f => perFile.get(f).map(f -> _)).collect {
      case (f, values) if admitting(f, value) =>
        val unseen = math.max(0.0, values.estimated - values.sampled.size)
        val chance = if (unseen <= 0) 0.0 else math.min(1.0, unseen / math.max(1.0, total - values.sampled.size))
        val u = (ValueHash.mix(hash ^ ValueHash.mix(f.id + 0x9e3779b97f4a7c15L)) >>> 11).toDouble / (1L << 53)
        (f.id, values.sampled.contains(value), chance, u)
    }
    val held = draws.collect { case (id, sampled, chance, u) if sampled || u < chance => id }.toSet
    if (held.nonEmpty || perFile.values.exists(_.sampled.contains(value))) held
    else draws.filter(_._3 > 0).sortBy(d => d._4 / d._3).headOption.map(_._1).toSet
  }

  /**
   * A data skipping index of one BloomFilter or ValueList sketch on a column, not built: its
   * sketch table (one row per sampled source file) is what the kind's own aggregate
   * ([[DistinctSketchAggregate]]) makes of the values the file is estimated to hold — its sampled
   * distinct values, and each value the workload looks up (`lookups`) it is estimated to hold ([[holders]]) — carried by the entry as MinMax's is, so the data skipping rule evaluates the query's
   * filter on it as on a built index's table (a Bloom filter answers "maybe" for an absent value
   * with the sketch's false positive probability, as a built one). A ValueList file estimated to
   * hold more than `maxValues` distinct values gets the Bloom filter the build falls back to.
   * Files not sampled get no row: always read. Its size: per file, the Bloom filter's bits for
   * the file's estimated distinct count, or the list's values at the column's sampled width.
   */
  def valueSketchEntry(
      spark: SparkSession,
      sample: RelationSample,
      config: DataSkippingIndexConfig,
      lookups: Seq[Any]): LogEntry = {
    val (column, maxValues, fpp) = config.sketches match {
      case Seq(b: BloomFilterSketch) => (b.expr, 0, b.fpp)
      case Seq(v: ValueListSketch) => (v.expr, v.maxValues, v.fpp)
      case other => throw new HyperspaceException(
          s"Hypothetical data skipping index '${config.name}': one BloomFilter or ValueList sketch expected; got " +
            other.map(_.describe).mkString(", "))
    }
    val i = sample.indexOf(column).getOrElse(
      throw new HyperspaceException(
        s"Hypothetical data skipping index '${config.name}': column '$column' was not sampled."))
    val t = sample.schema(i).dataType
    val definition = DataSkippingIndexData.define(spark, config, sample.source)
    val schema = DataSkippingIndexData.schemaOf(definition)
    val sketchColumns = if (maxValues > 0) 2 else 1
    if (schema.size != 2 + sketchColumns) {
      throw new HyperspaceException(s"Hypothetical data skipping index '${config.name}': unexpected sketch table " +
        s"${schema.simpleString} (a partitioned source adds partition sketches).")
    }
    val described = sample.described
    val perFile = sample.fileValues(column)._1
    val width = sample.widths.getOrElse(column.toLowerCase(Locale.ROOT), t.defaultSize.toDouble)
    var bytes = 0.0
    val placed = lookups.map(v => v -> holders(sample, column, v, t))
    val rows = described.files.flatMap { f =>
      perFile.get(f).map { values =>
        val held = values.sampled ++ placed.collect { case (v, ids) if ids.contains(f.id) => v }
        val listed = maxValues > 0 && values.estimated <= maxValues
        val agg = DistinctSketchAggregate(BoundReference(0, t, nullable = true), if (listed) maxValues else 0, fpp,
          BloomFilterSketch.DefaultCapacity)
        var state = agg.createAggregationBuffer()
        (held.toSeq ++ (if (values.hasNull && listed) Seq(null) else Nil)).foreach(v =>
          state = agg.update(state, InternalRow(v)))
        val sketch = agg.eval(state).asInstanceOf[InternalRow]
        bytes += 16 +
          (if (listed) math.max(1.0, values.estimated) * width
           else BloomFilterBits.optimalBits(math.max(1L, values.estimated.round), fpp) / 8.0)
        val columns =
          if (maxValues > 0) Seq(if (sketch.isNullAt(0)) null else sketch.getArray(0),
            if (sketch.isNullAt(1)) null else sketch.getBinary(1))
          else Seq(sketch.getBinary(1))
        Seq[Any](f.id, values.rows) ++ columns
      }
    }
    val withRows = definition.copy(properties = definition.properties +
      (DataSkippingIndexData.HypotheticalRowsProperty -> DataSkippingIndexData.hypotheticalRowsJson(rows, schema)))
    val size = bytes.toLong.max(1L)
    val file = ContentFile(s"${Content.versionDirName(0)}/part-00000-hypothetical.c000.snappy.parquet", size, 0L)
    entry(config.name, withRows, Content(s"hypothetical:/${config.name}", 0, Seq(file)), described)
  }

  /**
   * A split index on one key column that is not built: its log entry carries, per bucket file,
   * the statistics a built one records ([[io.hyperspace.log.LocationStats]]: distinct keys,
   * distinct (key, file, row group) triples, the sum of its rows' row group sizes; the key's
   * range), estimated from the sample and the source's Parquet footers, so the seek rule's estimate
   * ([[io.hyperspace.index.split.SeekEstimate]]) refuses or accepts a filter as it would for the
   * built index, and a hypothetical seek reads what that estimate expects (the rule's
   * hypothetical branch). Row groups per key, per sampled file `f` with `n_f` rows, `d_f`
   * estimated distinct keys and `r_f` row groups: at most the `r_f (1 - (1 - 1/r_f)^(n_f/d_f))`
   * a key's rows reach spread at random, and at most the mean number of row groups whose footer
   * range admits each of the file's sampled keys (1 for data clustered on the key); at least 1.
   * Triples are `sum d_f g_f` over sampled files, scaled to all rows; keys the relation's
   * estimated distinct count. Size: [[splitBytesPerRow]] a row.
   */
  def splitEntry(spark: SparkSession, sample: RelationSample, config: SplitIndexConfig): LogEntry = {
    val column = config.indexedColumns match {
      case Seq(c) => c
      case other => throw new HyperspaceException(
          s"Hypothetical split index '${config.name}': the advisor estimates single-key split indexes; got " +
            other.mkString(", "))
    }
    val definition = SplitIndex.define(spark, config, sample.source)
    val i = sample.indexOf(column).getOrElse(
      throw new HyperspaceException(s"Hypothetical split index '${config.name}': column '$column' was not sampled."))
    val t = sample.schema(i).dataType
    val groups = sample.rowGroups.getOrElse(
      throw new HyperspaceException(s"Hypothetical split index '${config.name}': the source's footers were not read."))
    val described = sample.described
    val rows = math.max(1L, sample.rowCount)
    val (perFile, distinct) = sample.fileValues(column)
    if (perFile.isEmpty) {
      throw new HyperspaceException(s"Hypothetical split index '${config.name}': no rows of '$column' were sampled.")
    }
    val ordering = TypeUtils.getInterpretedOrdering(t)
    val name = sample.schema(i).name
    val stored = SplitIndex.keyColumns(definition).head
    val perKey = perFile.toSeq.map { case (f, values) =>
      val fileGroups = groups.getOrElse(f, Nil)
      val r = math.max(1, fileGroups.size).toDouble
      val d = math.max(1.0, values.estimated)
      val random = r * (1.0 - math.pow(1.0 - 1.0 / r, values.rows / d))
      val ranged = fileGroups.map(_.ranges.get(name))
      val admitted =
        if (values.sampled.isEmpty || ranged.exists(_.isEmpty)) r
        else values.sampled.toSeq.map(v =>
          ranged.flatten.count { case (lo, hi) => ordering.gteq(v, lo) && ordering.lteq(v, hi) }.max(1)).sum.toDouble /
          values.sampled.size
      (values.rows, d, math.max(1.0, math.min(random, admitted)))
    }
    val sampledRows = math.max(1L, perKey.map(_._1).sum)
    val triples = perKey.map { case (_, d, g) => d * g }.sum * rows / sampledRows
    val keys = math.min(math.max(distinct, perKey.map(_._2).max), triples)
    val allGroups = groups.values.flatten
    val groupBytes = allGroups.map(g => BigDecimal(g.rows) * BigDecimal(g.bytes)).sum
    val meanRowBytes = if (allGroups.isEmpty) 0.0 else allGroups.map(_.bytes).sum.toDouble / allGroups.map(_.rows).sum
    val rowGroupBytes = if (groupBytes > 0) groupBytes else BigDecimal(rows) * meanRowBytes
    val range = sample.fileRanges(column).values.flatMap { case (_, s) =>
      for (lo <- s.min; hi <- s.max) yield (FileRanges.decode(lo, t), FileRanges.decode(hi, t))
    }
    val keyRange =
      if (range.isEmpty) None
      else FileRanges.columnStats(range.map(_._1).min(ordering), range.map(_._2).max(ordering), 0L, t)
    val buckets = definition.numBuckets
    val groupCount = math.max(1, allGroups.size)
    val size =
      (rows * splitBytesPerRow(sample.widths.getOrElse(column.toLowerCase(Locale.ROOT), t.defaultSize.toDouble),
        keys.toDouble / rows, math.max(1, groups.size), groupCount.toDouble / math.max(1, groups.size),
        rows.toDouble / groupCount)).toLong.max(buckets.toLong)
    // Totals split over the buckets exactly (the estimate sums them): a few keys must not round up to one a bucket.
    def share(total: Long, b: Int): Long = total / buckets + (if (b < total % buckets) 1 else 0)
    val groupBytesTotal = rowGroupBytes.setScale(0, BigDecimal.RoundingMode.CEILING)
    val files = (0 until buckets).map { b =>
      ContentFile(f"v__=0/part-00000-hypothetical_$b%05d.c000.snappy.parquet", size / buckets, 0L,
        Some(FileStats(share(rows, b), keyRange.map(stored -> _).toMap,
            Some(LocationStats(share(math.round(keys), b), share(math.round(triples), b),
                (groupBytesTotal / buckets).setScale(0, BigDecimal.RoundingMode.CEILING).toLong)))))
    }
    entry(config.name, definition, Content(s"hypothetical:/${config.name}", 0, files), described)
  }

  /**
   * Bytes a split index (kind version 3) takes per source row: the sorted key about a fifth of its
   * width, or less for a key of few distinct values (`distinctPerRow` of them a row), whose runs
   * cost next to nothing; then each location column about the bits its distinct values need
   * (dictionary codes of rows in no particular order): the file id among `files`, the row group
   * ordinal among `groupsPerFile`, the position among `rowsPerGroup` / 1,024. Measured at TPC-H
   * SF1 on `l_orderkey` (8 bytes, 64 files of one 94,000-row group): 1.56 + 0.75 + 0 + 0.9 bytes a
   * row, against 1.6 + 0.75 + 0 + 0.81 here (docs/split-index.md).
   */
  def splitBytesPerRow(keyWidth: Double, distinctPerRow: Double, files: Int, groupsPerFile: Double,
      rowsPerGroup: Double): Double = {
    def bits(values: Double): Double = math.log(math.max(1.0, values)) / math.log(2) / 8
    math.min(0.2 * keyWidth, distinctPerRow * keyWidth + 0.01) + bits(files) + bits(groupsPerFile) +
      bits(rowsPerGroup / SplitIndex.DefaultRowsPerPosition)
  }

  /** Estimated bytes of index data holding `stored` columns: the source's bytes times their width share. */
  private def sizeOf(sample: RelationSample, stored: StructType): Long = {
    val width = stored.fields.map(f =>
      sample.widths.getOrElse(f.name.toLowerCase(Locale.ROOT),
        f.dataType.defaultSize.toDouble)).sum
    (sample.described.sizeInBytes * width / sample.rowWidth).toLong.max(1L)
  }

  private def entry(name: String, definition: IndexDefinition, content: Content, described: Source): LogEntry =
    LogEntry(LogEntry.SpecVersion, 0, name, States.ACTIVE, LogEntry.HypotheticalOperation,
      System.currentTimeMillis(), enabled = true, Owner.current, definition, content, described,
      Signature.of(described.files))
}
