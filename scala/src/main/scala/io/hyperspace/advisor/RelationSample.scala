package io.hyperspace.advisor

import java.util.Locale

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types._

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{FileRanges, ParquetFooterRanges, RowGroupStats}
import io.hyperspace.log.{ColumnStats, FileStats, SourceFile}
import io.hyperspace.rules.CandidateIndexes
import io.hyperspace.sources.{FileSource, SourcePaths}

/**
 * What the advisor knows of a relation's data beyond its file listing, read once per relation:
 *
 *  - a sample of rows spread over all its files: the scan is planned with one task per file, and
 *    each task contributes its file's first rows (of up to 400 files, evenly over the listing),
 *    so data whose values drift from file to file is seen in every file, and no task reads more
 *    than its file's first row group;
 *  - the average width of each top-level column (strings and binaries from the sample, other
 *    types Spark's default size), for index sizes;
 *  - per source file, its row count and the range of a column, from the Parquet footers when the
 *    source is Parquet (exact, no data read), else from the sampled rows of that file.
 *
 * Read in a private copy of the session, so the reads are neither recorded nor rewritten.
 */
private[advisor] final class RelationSample private (
    val relation: LogicalRelation,
    val source: FileSource,
    /** The sampled columns (top-level, of types with recorded ranges or strings/binaries). */
    val schema: StructType,
    /** Sampled rows: [[schema]]'s columns, then the file path (as `_metadata.file_path` spells it). */
    val rows: Seq[InternalRow],
    spark: SparkSession) {

  private val fs: HadoopFsRelation = CandidateIndexes.sourceScan(relation).get
  /** The source as an index built now would record it (its listing), described once. */
  lazy val described: io.hyperspace.log.Source = source.describe()
  private def files: Seq[SourceFile] = described.files

  /** Top-level column name (lower case) → average width in bytes. */
  lazy val widths: Map[String, Double] = {
    val fixed = relation.schema.fields.map(f => f.name.toLowerCase(Locale.ROOT) -> f.dataType.defaultSize.toDouble)
    val sampled = schema.fields.zipWithIndex.collect {
      case (f, i) if (f.dataType == StringType || f.dataType == BinaryType) && rows.nonEmpty =>
        val lengths = rows.map(r =>
          if (r.isNullAt(i)) 0
          else if (f.dataType == StringType) r.getUTF8String(i).numBytes()
          else r.getBinary(i).length)
        f.name.toLowerCase(Locale.ROOT) -> lengths.sum.toDouble / lengths.size
    }
    (fixed ++ sampled).toMap
  }

  /** The relation's width-weighted row: bytes of one row by [[widths]]. */
  def rowWidth: Double = math.max(1.0, relation.schema.fields.map(f => widths(f.name.toLowerCase(Locale.ROOT))).sum)

  private def isParquet: Boolean =
    fs.fileFormat.getClass == classOf[ParquetFileFormat] && source.versioned.isEmpty

  /** Per Parquet file: its footer's row count and the ranges it tells exactly, read once (several at a time). */
  private lazy val footersAndGroups: Map[String, Option[(FileStats, Seq[RowGroupStats])]] =
    if (!isParquet) Map.empty
    else {
      val conf = spark.sessionState.newHadoopConf()
      val columns = fs.dataSchema.fieldNames.toSeq
      RelationSample.inParallel(files, RelationSample.FooterThreads)(f =>
        f.path -> ParquetFooterRanges.fileStatsAndGroups(conf, new Path(f.path), fs.dataSchema, columns)).toMap
    }
  private lazy val footers: Map[String, Option[FileStats]] = footersAndGroups.map { case (p, s) => p -> s.map(_._1) }

  /**
   * Per source file (Parquet only, and only when every footer was read), its row groups: rows,
   * compressed bytes and the ranges their statistics tell (for split index estimates).
   */
  lazy val rowGroups: Option[Map[SourceFile, Seq[RowGroupStats]]] =
    if (!isParquet) None
    else {
      val perFile = files.map(f => f -> footersAndGroups.get(f.path).flatten.map(_._2))
      if (perFile.forall(_._2.isDefined)) Some(perFile.map { case (f, g) => f -> g.get }.toMap) else None
    }

  /** The estimated number of rows: footers' counts (Parquet), else bytes over the sampled row width. */
  lazy val rowCount: Long = {
    val counted = if (isParquet) {
      val perFile = files.map(f => footers.get(f.path).flatten.map(_.rowCount))
      if (perFile.forall(_.isDefined)) Some(perFile.flatten.sum) else None
    } else None
    counted.getOrElse((files.map(_.size).sum / rowWidth).toLong.max(rows.size.toLong))
  }

  /**
   * Per sampled source file, `column`'s sampled values and estimated distinct count, and the
   * estimated distinct count of the whole relation (the same estimator over all sampled rows).
   * Files without sampled rows are absent. The sampled rows are each file's first rows: a file
   * sorted by the column shows fewer distinct values there than it holds.
   */
  def fileValues(column: String): (Map[SourceFile, FileValues], Double) =
    valueCache.getOrElseUpdate(column.toLowerCase(Locale.ROOT), {
        indexOf(column) match {
          case None => (Map.empty, 0.0)
          case Some(i) =>
            val t = schema(i).dataType
            val pathColumn = schema.size
            val byPath = rows.groupBy(_.getUTF8String(pathColumn).toString)
            def nonNull(rs: Seq[InternalRow]) = rs.filterNot(_.isNullAt(i)).map(_.get(i, t))
            val perFile = files.flatMap { f =>
              byPath.get(SourcePaths.asMetadataPath(f.path)).map { sampled =>
                val values = nonNull(sampled)
                val (d, f1) = FileValues.counts(values)
                val n = footers.get(f.path).flatten.map(_.rowCount)
                  .getOrElse((rowCount * sampled.size.toDouble / rows.size).round.max(sampled.size.toLong))
                f -> FileValues(n, values.toSet, sampled.exists(_.isNullAt(i)),
                  FileValues.estimate(n, sampled.size, d, f1))
              }
            }.toMap
            val (d, f1) = FileValues.counts(nonNull(rows))
            (perFile, FileValues.estimate(rowCount, rows.size, d, f1))
        }
      })
  private val valueCache = scala.collection.mutable.Map[String, (Map[SourceFile, FileValues], Double)]()

  /** The index of `column` (case-insensitive) among the sampled columns. */
  def indexOf(column: String): Option[Int] =
    Some(schema.fieldNames.indexWhere(_.equalsIgnoreCase(column))).filter(_ >= 0)

  /**
   * Per source file (the listing's), its row count and range of `column` (a sampled top-level
   * column of a type [[FileRanges.supported]]): from the footer, exactly, for Parquet; else from
   * the file's sampled rows (a sample's range is within the file's: the estimate then skips more
   * than the index would). A file whose range is not known is absent: it would always be read.
   */
  def fileRanges(column: String): Map[SourceFile, (Long, ColumnStats)] = {
    val i = indexOf(column).getOrElse(return Map.empty)
    val t = schema(i).dataType
    if (!FileRanges.supported(t)) return Map.empty
    val name = schema(i).name
    val fromFooters =
      if (isParquet && fs.dataSchema.fieldNames.contains(name) && fs.partitionSchema.isEmpty) {
        val perFile =
          files.map(f => f -> footers.get(f.path).flatten.flatMap(s => s.columns.get(name).map(s.rowCount -> _)))
        if (perFile.forall(_._2.isDefined)) Some(perFile.map { case (f, s) => f -> s.get }) else None
      } else None
    fromFooters.map(_.toMap).getOrElse {
      val pathColumn = schema.size
      val byPath = rows.groupBy(_.getUTF8String(pathColumn).toString)
      val ordering = org.apache.spark.sql.catalyst.util.TypeUtils.getInterpretedOrdering(t)
      files.flatMap { f =>
        byPath.get(SourcePaths.asMetadataPath(f.path)).flatMap { sampled =>
          val values = sampled.filterNot(_.isNullAt(i)).map(_.get(i, t))
          val (lo, hi) = if (values.isEmpty) (null, null) else (values.min(ordering), values.max(ordering))
          val share = sampled.size.toDouble / rows.size
          FileRanges.columnStats(lo, hi, sampled.count(_.isNullAt(i)).toLong, t)
            .map(s => f -> ((rowCount * share).round.max(sampled.size.toLong), s))
        }
      }.toMap
    }
  }
}

/**
 * The sampled values of one column in one source file, and the file's estimated distinct count.
 *
 * @param rows      the file's row count (footer, or its share of the estimated rows)
 * @param sampled   the distinct non-null values among the file's sampled rows (internal form)
 * @param hasNull   whether a sampled row is null
 * @param estimated the file's estimated distinct non-null count ([[FileValues.estimate]])
 */
private[advisor] final case class FileValues(rows: Long, sampled: Set[Any], hasNull: Boolean, estimated: Double)

private[advisor] object FileValues {

  /**
   * The distinct count of `n` rows estimated from `r` sampled ones holding `d` distinct values,
   * `f1` of them once: Haas et al.'s unsmoothed first-order jackknife (Duj1), `d / (1 - (1 - r/n)
   * f1 / r)`, between `d` and `n`. A sample of repeated values says few (a list of values fits);
   * one of values seen once each says about as many as rows (a Bloom filter sized for the file).
   */
  def estimate(n: Long, r: Int, d: Int, f1: Int): Double =
    if (r == 0 || d == 0) 0.0
    else {
      val q = math.min(1.0, r.toDouble / math.max(1L, n))
      val denominator = 1.0 - (1.0 - q) * f1 / r
      if (denominator <= 0) n.toDouble else math.min(n.toDouble, math.max(d.toDouble, d / denominator))
    }

  /** (distinct, seen once) of `values`. */
  def counts(values: Seq[Any]): (Int, Int) = {
    val byValue = values.groupBy(identity)
    (byValue.size, byValue.count(_._2.size == 1))
  }
}

private[advisor] object RelationSample extends org.apache.spark.internal.Logging {

  /** Footers read at once: each is a small read whose latency, not the CPU, bounds it. */
  private val FooterThreads = 8

  /**
   * `f` over `items`, up to `threads` at a time on threads of their own; in `items`' order. A
   * failure is rethrown (the first in that order); the others still running finish unobserved.
   */
  def inParallel[A, B](items: Seq[A], threads: Int)(f: A => B): Seq[B] =
    if (items.size <= 1) items.map(f)
    else {
      val pool = java.util.concurrent.Executors.newFixedThreadPool(math.min(threads, items.size))
      try {
        val futures = items.map(a => pool.submit(new java.util.concurrent.Callable[B] { def call(): B = f(a) }))
        futures.map { future =>
          try future.get()
          catch { case e: java.util.concurrent.ExecutionException if e.getCause != null => throw e.getCause }
        }
      } finally pool.shutdown()
    }

  /** Rows sampled per relation, about: enough for stable averages and curve boundaries. */
  val SampleRows: Int = 10000
  /** Rows each sampled scan task contributes at least (a task costs its first row group anyway). */
  private val MinRowsPerTask = 50
  /** At most this many files are sampled; beyond it, every n-th is (evenly over the listing). */
  private val MaxTasks = 400
  private val OneFilePerTask = 1L << 50

  /** The sample of `relation`: one Spark job reading the first rows of each (sampled) scan task. */
  def of(spark: SparkSession, relation: LogicalRelation): RelationSample = {
    val fs = CandidateIndexes.sourceScan(relation).get
    val source = FileSource(relation, fs)
    val fields = relation.schema.fields.filter(f =>
      FileRanges.supported(f.dataType) || f.dataType == StringType || f.dataType == BinaryType)
    val schema = StructType(fields)
    val copy = SparkInternals.cloneSession(spark)
    copy.conf.set(HyperspaceConf.APPLY_ENABLED.key, "false")
    copy.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "false")
    // One scan task per file, never a file split or files packed together: each task's first
    // rows are then its file's first rows, and every file is sampled.
    copy.conf.set("spark.sql.files.maxPartitionBytes", OneFilePerTask.toString)
    copy.conf.set("spark.sql.files.openCostInBytes", OneFilePerTask.toString)
    // The scan sizes its tasks by its relation's session: the relation is rebound to the copy.
    val rebound = relation.copy(relation = fs.copy()(copy))
    val df = SparkInternals.ofRows(copy, rebound)
      .select(fields.map(f => col(s"`${f.name.replace("`", "``")}`")).toSeq :+ col("_metadata.file_path"): _*)
    val rdd = df.queryExecution.toRdd
    val tasks = rdd.getNumPartitions
    val step = math.max(1, (tasks + MaxTasks - 1) / MaxTasks)
    val sampledTasks = (tasks + step - 1) / step
    val perTask = math.max(MinRowsPerTask, (SampleRows + sampledTasks - 1) / math.max(1, sampledTasks))
    val started = System.nanoTime()
    val rows = rdd.mapPartitionsWithIndex { (i, it) =>
      if (i % step == 0) it.take(perTask).map(_.copy()) else Iterator.empty
    }.collect().toSeq
    logInfo(s"Sampled ${rows.size} rows of ${source.format} ${fs.location.rootPaths.mkString(", ")} from " +
      s"$sampledTasks of $tasks scan tasks in ${(System.nanoTime() - started) / 1000000} ms.")
    new RelationSample(relation, source, schema, rows, spark)
  }
}
