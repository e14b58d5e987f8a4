package io.hyperspace.explain

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.types.{StructField, StructType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{IndexConfig, IndexNames}
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.log._
import io.hyperspace.rules.CandidateIndexes
import io.hyperspace.sources.FileSource

/**
 * `whatIf(df, configs)`: plans the query as if the configured indexes existed — hypothetical log
 * entries over the query's own source files, sized by estimate, nothing written — and reports
 * which would be used, the bytes the query would scan and the shuffles it would avoid.
 */
object WhatIf {

  def whatIf(df: DataFrame, configs: Seq[IndexConfig]): String = {
    val spark = df.sparkSession
    val planning = new QueryPlanning(df)
    val relations = planning.optimizedWithout.collect {
      case r: LogicalRelation if CandidateIndexes.sourceScan(r).isDefined => r
    }
    val hypothetical = configs.map { config =>
      IndexNames.validate(config.name)
      val relation = relations.find { r =>
        val names = r.output.map(_.name)
        // A nested field (`nested.leaf.id`) belongs to the relation with its top-level column.
        (config.indexedColumns ++ config.includedColumns).forall(c =>
          (c +: scala.util.Try(UnresolvedAttribute.parseAttributeName(c).take(1)).getOrElse(Nil))
            .exists(n => names.exists(spark.sessionState.conf.resolver(_, n))))
      }.getOrElse(throw new io.hyperspace.HyperspaceException(
          s"Hypothetical index '${config.name}': no data the query reads has the columns " +
            s"${(config.indexedColumns ++ config.includedColumns).mkString(", ")}."))
      entryFor(df, relation, config)
    }
    val baseline = planning.physicalWithout
    val planned = planning.physicalWithOnly(hypothetical)
    val used = Plans.indexesIn(planned).map(_.name).toSet
    def exchanges(p: org.apache.spark.sql.execution.SparkPlan): Int =
      Plans.operatorCounts(p).getOrElse("Exchange", 0)
    val lines = hypothetical.map { e =>
      s"${e.name} (${e.index.indexedColumns.mkString(", ")}; incl. ${e.index.includedColumns.mkString(", ")}; " +
        s"${e.index.numBuckets} buckets, ~${e.content.sizeInBytes} bytes): " +
        (if (used.contains(e.name)) "would be used" else "would not be used")
    }
    (lines ++ Seq(
      s"Bytes scanned: ${Plans.bytesScanned(baseline)} without → ${Plans.bytesScanned(planned)} with the hypothetical indexes",
      s"Shuffles (Exchange): ${exchanges(baseline)} without → ${exchanges(planned)} with the hypothetical indexes"))
      .mkString("\n")
  }

  /**
   * A log entry for an index that is not built: the real source files, and one estimated data
   * file per bucket sized by the share of the row width the index keeps (files never read).
   * Column widths come from `widths` (lower-case top-level name → bytes, e.g. sampled) where
   * it has them, else from the types' default sizes.
   */
  private[hyperspace] def entryFor(
      df: DataFrame,
      relation: LogicalRelation,
      config: IndexConfig,
      widths: Map[String, Double] = Map.empty): LogEntry = {
    val spark = df.sparkSession
    val source = FileSource(relation, CandidateIndexes.sourceScan(relation).get)
    val numBuckets = config.numBuckets.getOrElse(HyperspaceConf.numBuckets(spark))
    val definition = CoveringIndex.define(spark, config.name, source, config.indexedColumns,
      config.includedColumns, numBuckets, config.lineage.getOrElse(false))
    val described = source.describe()
    def width(f: StructField): Double =
      widths.getOrElse(f.name.toLowerCase(java.util.Locale.ROOT), f.dataType.defaultSize.toDouble)
    val indexSchema = org.apache.spark.sql.types.DataType.fromJson(definition.schema).asInstanceOf[StructType]
    val indexWidth = indexSchema.fields.map(width).sum
    val rowWidth = math.max(1.0, relation.schema.fields.map(width).sum)
    val estimated = (described.sizeInBytes * indexWidth / rowWidth).toLong.max(numBuckets.toLong)
    val root = s"hypothetical:/${config.name}"
    val files = (0 until numBuckets).map(b =>
      ContentFile(f"v__=0/part-00000-hypothetical_$b%05d.c000.snappy.parquet", estimated / numBuckets, 0L))
    LogEntry(LogEntry.SpecVersion, 0, config.name, States.ACTIVE, LogEntry.HypotheticalOperation,
      System.currentTimeMillis(),
      enabled = true, Owner.current, definition, Content(root, 0, files), described,
      Signature.of(described.files))
  }

}
