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
 * Data skipping statistics of one scanned relation of a query, fixed when the query was
 * optimized. `files*`/`bytes*Total` are the relation's files as listed (before Spark's own
 * partition pruning, which may read fewer still); skipped are the files some data skipping
 * index ruled out; read = total − skipped. A file skipped by several indexes counts once.
 *
 * @param relation the relation: its catalog table, or its root paths
 * @param filter   the query filter the sketches were given, as SQL
 */
case class RelationSkippingStats(
    relation: String,
    filter: String,
    filesTotal: Int,
    bytesTotal: Long,
    filesSkipped: Int,
    bytesSkipped: Long,
    indexes: Seq[IndexSkips]) {

  /** Files the scan may read (total − skipped). */
  def filesRead: Int = filesTotal - filesSkipped

  /** Bytes of the files the scan may read. */
  def bytesRead: Long = bytesTotal - bytesSkipped

  /** One line, e.g. `data/events: skipped 90 of 100 files (9.0 MB of 10.0 MB) by events_skip (...)`. */
  def describe: String = {
    val by = indexes.map { i =>
      val sketches = i.sketches.filter(_.filesSkipped > 0).map(s => s"${s.sketch}: ${s.filesSkipped}")
      s"${i.index} (log version ${i.logVersion}): ${i.filesSkipped}" +
        (if (sketches.isEmpty) "" else sketches.mkString(" [", ", ", "]"))
    }.mkString("; ")
    s"$relation: skipped $filesSkipped of $filesTotal files ($bytesSkipped of $bytesTotal bytes), " +
      s"read $filesRead; by $by"
  }
}

object RelationSkippingStats {
  private val mapper = new ObjectMapper().registerModule(DefaultScalaModule)

  /** `stats` as a JSON array of objects (the fields above plus filesRead and bytesRead), for Python. */
  def toJson(stats: Seq[RelationSkippingStats]): String = {
    val rows = stats.map { s =>
      Map("relation" -> s.relation, "filter" -> s.filter, "filesTotal" -> s.filesTotal,
        "bytesTotal" -> s.bytesTotal, "filesSkipped" -> s.filesSkipped, "bytesSkipped" -> s.bytesSkipped,
        "filesRead" -> s.filesRead, "bytesRead" -> s.bytesRead, "indexes" -> s.indexes)
    }
    mapper.writeValueAsString(rows)
  }
}
