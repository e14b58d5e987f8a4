package io.hyperspace.index.dataskipping

import java.io.File

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.StructType

import io.hyperspace.SparkSessionSuite
import io.hyperspace.sources.FileSource

/**
 * Writes real Parquet files (one per row group given) and checks what a sketch table built over
 * them skips against the rows that actually match, file by file.
 */
trait SketchTestSupport extends SparkSessionSuite {

  override protected def withExtension: Boolean = false

  /**
   * A source of one Parquet file per entry of `files`, named `f<position>.parquet` (an empty entry
   * is an empty file), read back. One Spark job writes all non-empty files: one partition each.
   */
  protected def writeFiles(schema: StructType, files: Seq[Seq[Row]]): DataFrame = {
    val dir = newDir("source")
    val staging = new File(newDir("staging"), "out")
    val rdd = spark.sparkContext.parallelize(files.map(_.toVector), files.size).flatMap(identity)
    spark.createDataFrame(rdd, schema).write.parquet(staging.getAbsolutePath)
    val Part = "part-(\\d+)-.*\\.parquet".r
    staging.listFiles().map(_.getName).foreach {
      case name @ Part(n) => assert(new File(staging, name).renameTo(new File(dir, f"f${n.toInt}%03d.parquet")))
      case _ =>
    }
    files.zipWithIndex.filter(_._2 < files.size).foreach { case (rows, i) =>
      if (rows.isEmpty) {
        // Spark writes no file for an empty partition; write an empty file of the schema on its own.
        val empty = new File(newDir("empty"), "out")
        spark.createDataFrame(spark.sparkContext.emptyRDD[Row], schema).coalesce(1).write.parquet(empty.getAbsolutePath)
        val written = empty.listFiles().filter(_.getName.endsWith(".parquet"))
        assert(written.length == 1, s"expected one empty file, got ${written.toSeq}")
        assert(written.head.renameTo(new File(dir, f"f$i%03d.parquet")))
      }
      assert(new File(dir, f"f$i%03d.parquet").exists(), s"file $i was not written")
    }
    spark.read.schema(schema).parquet(dir.getAbsolutePath)
  }

  /** A built sketch table and what is needed to query it. */
  case class Built(source: DataFrame, sketches: Seq[ResolvedSketch], table: DataFrame, ids: Map[String, Long]) {
    /** The file id of the file written at position `i` by [[writeFiles]]. */
    def idOf(i: Int): Long = ids.collectFirst { case (p, id) if p.endsWith(f"/f$i%03d.parquet") => id }.get
    /** The position in [[writeFiles]] of file id `id`. */
    def positionOf(id: Long): Int = ids.collectFirst { case (p, `id`) => p }.get
      .split('/').last.stripPrefix("f").stripSuffix(".parquet").toInt
  }

  /** The sketch table of `source` for `sketches`, file ids numbered as the log would. */
  protected def build(source: DataFrame, sketches: Sketch*): Built = {
    val fileSource = FileSource.of(source, "test_index")
    val ids = fileSource.listedFiles.map(_.path).zipWithIndex.map { case (p, i) => p -> i.toLong }.toMap
    val resolved = DataSkippingIndex.resolveSketches(spark, "test_index", sketches, source.queryExecution.analyzed)
    val table = DataSkippingIndex.buildSketchTable(source, resolved, ids).cache()
    Built(source, resolved, table, ids)
  }

  /** The filter condition of `source.filter(sql)`, as analyzed and as optimized. */
  protected def conditions(source: DataFrame, sql: String): Seq[Expression] = {
    val df = source.filter(sql)
    val analyzed = df.queryExecution.analyzed.asInstanceOf[Filter].condition
    val optimized = df.queryExecution.optimizedPlan.collectFirst { case f: Filter => f.condition }
    analyzed +: optimized.toSeq
  }

  /** Ids of the files some row of which satisfies `sql`. */
  protected def matchingIds(built: Built, sql: String): Set[Long] =
    built.source.filter(sql).select(col("_metadata.file_path")).distinct().collect()
      .map(r => built.ids(r.getString(0))).toSet

  /**
   * Ids of the files skipped for `sql`, per form of its condition (analyzed, optimized), after
   * checking that no skipped file has a matching row.
   */
  protected def skippedIdsPerForm(built: Built, sql: String): Seq[Set[Long]] = {
    val output = built.table.queryExecution.analyzed.output
    val sets = conditions(built.source, sql).map { c =>
      DataSkippingIndex.translate(c, built.sketches, output) match {
        case Some(cond) => DataSkippingIndex.skippedFileIds(built.table, cond)
        case None => Set.empty[Long]
      }
    }
    val matching = matchingIds(built, sql)
    sets.foreach { s =>
      assert((s intersect matching).isEmpty,
        s"'$sql' skipped files ${(s intersect matching).toSeq.sorted.mkString(", ")} that have matching rows")
    }
    sets
  }

  /** [[skippedIdsPerForm]] as positions in [[writeFiles]]. */
  protected def skippedPerForm(built: Built, sql: String): Seq[Set[Int]] =
    skippedIdsPerForm(built, sql).map(_.map(built.positionOf))

  /** Positions of the files skipped for the optimized form of `sql` (both forms checked safe). */
  protected def skipped(built: Built, sql: String): Set[Int] = skippedPerForm(built, sql).last

  /**
   * Asserts that both the analyzed and the optimized form of `sql` skip exactly the files at
   * `expected` (and, as always, no file with a matching row).
   */
  protected def assertSkips(built: Built, sql: String, expected: Int*): Unit =
    skippedPerForm(built, sql).zip(Seq("analyzed", "optimized")).foreach { case (got, form) =>
      assert(got == expected.toSet, s"'$sql' ($form) skipped ${got.toSeq.sorted} rather than ${expected.sorted}")
    }
}
