package io.hyperspace.advisor

import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.functions.{avg, coalesce, col, lit, octet_length}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.{BinaryType, StringType}

import io.hyperspace.config.HyperspaceConf

/**
 * Average widths in bytes of a relation's columns, from a sample of its rows, so that an index's
 * estimated size follows the data: a string column counts its sampled average length (Spark's
 * default width says 20 bytes whatever the strings hold). Fixed-width types keep their width;
 * nested and other variable-width types keep Spark's default (not sampled).
 */
private[advisor] object ColumnWidths {

  /** Rows read per relation: enough for a stable average, few enough to cost one small job. */
  val SampleRows: Int = 10000

  /**
   * Top-level column name (lower case) → average width, read from the first [[SampleRows]] rows
   * of `relation` (the files in listing order: deterministic, and no full scan). Read in a
   * private copy of the session, so the read is not one of the user's recorded queries.
   */
  def sampled(spark: SparkSession, relation: LogicalRelation): Map[String, Double] = {
    val strings = relation.schema.fields.filter(f => f.dataType == StringType || f.dataType == BinaryType)
    val fixed = relation.schema.fields.filterNot(strings.contains).map(f =>
      f.name.toLowerCase(Locale.ROOT) -> f.dataType.defaultSize.toDouble).toMap
    if (strings.isEmpty) fixed
    else {
      val copy = SparkInternals.cloneSession(spark)
      copy.conf.set(HyperspaceConf.APPLY_ENABLED.key, "false")
      copy.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "false")
      val sample = SparkInternals.ofRows(copy, relation).select(strings.map(f => col(s"`${f.name}`")).toSeq: _*)
        .limit(SampleRows)
      // An empty sample (no rows) gives nulls: those columns keep the default width.
      val averages = strings.map(f => avg(coalesce(octet_length(col(s"`${f.name}`")), lit(0)))).toSeq
      val row = sample.agg(averages.head, averages.tail: _*).head()
      fixed ++ strings.indices.map { i =>
        strings(i).name.toLowerCase(Locale.ROOT) ->
          (if (row.isNullAt(i)) strings(i).dataType.defaultSize.toDouble else row.getDouble(i))
      }
    }
  }
}
