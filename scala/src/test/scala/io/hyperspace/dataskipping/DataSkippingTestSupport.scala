package io.hyperspace.dataskipping

import java.io.File

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.functions.input_file_name

import io.hyperspace.index.dataskipping.{DataSkippingFileIndex, DataSkippingStats, RelationSkippingStats}
import io.hyperspace.maintenance.MaintenanceTestSupport
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.shims.FileRelation

/**
 * What data skipping did to a query, as the skipping statistics report it: for suites over any
 * source (the Delta and Iceberg suites use it without the file-source helpers below).
 */
trait SkippingStatsSupport extends RuleTestSupport {

  /** Runs `df` with Hyperspace on and off (same rows asserted); its skipping statistics with it on. */
  protected def statsOf(df: => DataFrame): Seq[RelationSkippingStats] =
    DataSkippingStats.of(ranAlike(df).queryExecution)

  /** The one relation `df`'s indexes pruned (else the failure says why not, per `index`). */
  protected def pruned(df: => DataFrame, index: String): RelationSkippingStats = statsOf(df) match {
    case Seq(one) => one
    case other => fail(s"expected one pruned relation, got $other: ${withHyperspace(on = true)(hs.whyNot(df, index))}")
  }
}

/** Clustered multi-file sources and what data skipping did to a query. */
trait DataSkippingTestSupport extends MaintenanceTestSupport with SkippingStatsSupport {

  /**
   * `files` files of `rowsPerFile` rows, ids contiguous per file (so `id`, `ts`, `cat` and the
   * prefix of `name` are clustered by file); `k` and `score` (with NULLs) are not.
   */
  protected def clusteredSource(
      name: String,
      files: Int = 40,
      rowsPerFile: Int = 50,
      format: String = "parquet",
      partitioned: Boolean = false): File = {
    val dir = new File(newDir(name), "data")
    val n = files.toLong * rowsPerFile
    val df = spark.range(0, n, 1, files).selectExpr(
      "id",
      s"TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 60) AS ts",
      s"CHR(65 + CAST(id * 10 / $n AS INT)) AS cat",
      s"CONCAT('u', LPAD(CAST(id DIV $rowsPerFile AS STRING), 4, '0'), '-', CAST(id % 7 AS STRING), '.', " +
        "CASE WHEN id % 3 = 0 THEN 'com' ELSE 'org' END) AS name",
      "CAST((id * 7919) % 101 AS INT) AS k",
      "IF(id % 11 = 0, NULL, CAST((id * 31) % 50 AS INT)) AS score",
      s"CAST(id * 4 DIV $n AS INT) AS part")
    val writer = df.write.mode("overwrite").format(format)
    val withOpts = if (format == "csv") writer.option("header", "true") else writer
    (if (partitioned) withOpts.partitionBy("part") else withOpts)
      .save(dir.getAbsolutePath)
    dir
  }

  /** Reads a source written by [[clusteredSource]] the way users do. */
  protected def readAs(dir: File, format: String): DataFrame = format match {
    case "csv" => spark.read.option("header", "true").option("inferSchema", "true").csv(dir.getAbsolutePath)
    case f => spark.read.format(f).load(dir.getAbsolutePath)
  }

  /** The data skipping file index of the (one) pruned relation of `df`'s optimized plan. */
  protected def pruned(df: DataFrame): Option[DataSkippingFileIndex] = df.queryExecution.optimizedPlan.collectFirst {
    case FileRelation(_, fs) if fs.location.isInstanceOf[DataSkippingFileIndex] =>
      fs.location.asInstanceOf[DataSkippingFileIndex]
  }

  /** The "number of files read" metric of the source scans of an executed plan. */
  protected def filesRead(plan: SparkPlan): Long = plan.collect {
    case s: FileSourceScanExec => s.metrics("numFiles").value
  }.sum

  /** The files holding rows `df` keeps (Hyperspace off), as paths. */
  protected def filesWithRows(df: DataFrame): Set[String] = withHyperspace(on = false) {
    df.select(input_file_name()).distinct().collect().map(r => normalize(r.getString(0))).toSet
  }

  protected def normalize(path: String): String = new Path(path).toUri.getPath
}
