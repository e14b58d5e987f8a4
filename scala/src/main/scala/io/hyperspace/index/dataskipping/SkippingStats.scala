package io.hyperspace.index.dataskipping

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.module.scala.DefaultScalaModule

/**
 * Files one sketch of an index rules out on its own (with the query's filter translated through
 * that sketch alone). Several sketches may rule out the same file, so these counts may add up to
 * more than the index's total.
 */
case class SketchSkips(sketch: String, filesSkipped: Int, bytesSkipped: Long)

/**
 * What one data skipping index did for one relation: the files it ruled out, and per sketch
 * (empty when the sketch table was too large to evaluate on the driver, see
 * [[SketchTableEvaluator]]).
 */
case class IndexSkips(
    index: String,
    logVersion: Long,
    filesSkipped: Int,
    bytesSkipped: Long,
    sketches: Seq[SketchSkips])

/**
 * What a table format's own file pruning did for a scan that data skipping indexes also pruned
 * (Delta prunes by partition values and by the per-file min/max its log keeps). The format prunes
 * first; the indexes' contribution is what they rule out among the files the format keeps.
 *
 * @param format               the table format (`delta`)
 * @param filesPruned          files of the table the format's own pruning leaves out for the filter
 * @param bytesPruned          their bytes
 * @param filesSkippedAfter    files the format keeps that the indexes rule out (the indexes' own gain)
 * @param bytesSkippedAfter    their bytes
 */
case class FormatPruning(
    format: String,
    filesPruned: Int,
    bytesPruned: Long,
    filesSkippedAfter: Int,
    bytesSkippedAfter: Long)

/**
 * Data skipping statistics of one scanned relation of a query, fixed when the query was
 * optimized. `files*`/`bytes*Total` are the relation's files as listed (before Spark's own
 * partition pruning, which may read fewer still; for a table format, the table's files at the
 * scanned version); skipped are the files some data skipping index ruled out; read = total −
 * skipped. A file skipped by several indexes counts once. For a table format that prunes files
 * itself, `formatPruning` says what it pruned and what the indexes skipped beyond it, and read
 * = total − pruned by the format − skipped beyond it.
 *
 * @param relation      the relation: its catalog table, or its root paths
 * @param filter        the query filter the sketches were given, as SQL
 * @param formatPruning the table format's own pruning, for a table format's scan
 */
case class RelationSkippingStats(
    relation: String,
    filter: String,
    filesTotal: Int,
    bytesTotal: Long,
    filesSkipped: Int,
    bytesSkipped: Long,
    indexes: Seq[IndexSkips],
    formatPruning: Option[FormatPruning] = None) {

  /** Files the scan may read (total − skipped, and − what the format pruned itself). */
  def filesRead: Int =
    formatPruning.map(f => filesTotal - f.filesPruned - f.filesSkippedAfter).getOrElse(filesTotal - filesSkipped)

  /** Bytes of the files the scan may read. */
  def bytesRead: Long =
    formatPruning.map(f => bytesTotal - f.bytesPruned - f.bytesSkippedAfter).getOrElse(bytesTotal - bytesSkipped)

  /** One line, e.g. `data/events: skipped 90 of 100 files (9.0 MB of 10.0 MB) by events_skip (...)`. */
  def describe: String = {
    val by = indexes.map { i =>
      val sketches = i.sketches.filter(_.filesSkipped > 0).map(s => s"${s.sketch}: ${s.filesSkipped}")
      s"${i.index} (log version ${i.logVersion}): ${i.filesSkipped}" +
        (if (sketches.isEmpty) "" else sketches.mkString(" [", ", ", "]"))
    }.mkString("; ")
    val format = formatPruning.map(f =>
      s"${f.format} pruned ${f.filesPruned} itself, the indexes ${f.filesSkippedAfter} more; ").getOrElse("")
    s"$relation: skipped $filesSkipped of $filesTotal files ($bytesSkipped of $bytesTotal bytes), " +
      s"${format}read $filesRead; by $by"
  }
}

object RelationSkippingStats {
  private val mapper = new ObjectMapper().registerModule(DefaultScalaModule)

  /** `stats` as a JSON array of objects (the fields above plus filesRead and bytesRead), for Python. */
  def toJson(stats: Seq[RelationSkippingStats]): String = {
    val rows = stats.map { s =>
      Map("relation" -> s.relation, "filter" -> s.filter, "filesTotal" -> s.filesTotal,
        "bytesTotal" -> s.bytesTotal, "filesSkipped" -> s.filesSkipped, "bytesSkipped" -> s.bytesSkipped,
        "filesRead" -> s.filesRead, "bytesRead" -> s.bytesRead, "indexes" -> s.indexes,
        "formatPruning" -> s.formatPruning.orNull)
    }
    mapper.writeValueAsString(rows)
  }
}
