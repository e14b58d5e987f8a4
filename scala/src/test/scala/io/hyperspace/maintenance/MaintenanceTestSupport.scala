package io.hyperspace.maintenance

import java.io.File

import scala.jdk.CollectionConverters._

import org.apache.commons.io.FileUtils
import org.apache.spark.sql.DataFrame

import io.hyperspace.rules.RuleTestSupport

/**
 * A source directory of Parquet files (`id`, `name`, `amount`, `day`), optionally hive
 * partitioned by `day`, and the changes lakes see: appended files, deleted files and files
 * rewritten in place.
 */
trait MaintenanceTestSupport extends RuleTestSupport {

  /** A source of `rows` rows in about `files` files; ids are 0 until rows. */
  protected def newSource(name: String, partitioned: Boolean, rows: Int = 400, files: Int = 4): File = {
    val dir = new File(newDir(name), "data")
    write(rowsOf(0, rows, files), dir, partitioned, "overwrite")
    dir
  }

  private def rowsOf(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).selectExpr(
      "id", "CONCAT('name-', id % 13) AS name", "CAST(id * 1.5 AS DOUBLE) AS amount",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 3 AS INT)) AS day")

  private def write(df: DataFrame, dir: File, partitioned: Boolean, mode: String): Unit = {
    val writer = df.write.mode(mode)
    (if (partitioned) writer.partitionBy("day") else writer).parquet(dir.getAbsolutePath)
  }

  /** Reads the source the way users do. */
  protected def read(dir: File): DataFrame = spark.read.parquet(dir.getAbsolutePath)

  /** The source's data files, in path order. */
  protected def dataFiles(dir: File): Seq[File] =
    FileUtils.listFiles(dir, Array("parquet"), true).asScala.toSeq.sortBy(_.getPath)

  /** Appends ids `from until from + n` in new files. */
  protected def append(dir: File, partitioned: Boolean, from: Long, n: Int = 60): Unit =
    write(rowsOf(from, from + n, 1), dir, partitioned, "append")

  /** Deletes the `i`-th data file; returns the ids it held. */
  protected def deleteFile(dir: File, i: Int = 0): Set[Long] = {
    val file = dataFiles(dir)(i)
    val ids = idsIn(file)
    assert(file.delete())
    new File(file.getParentFile, s".${file.getName}.crc").delete()
    ids
  }

  /**
   * Rewrites the `i`-th data file in place (same path, other size and time) keeping only its
   * even ids, as a GDPR delete or a correction job would.
   */
  protected def rewriteFile(dir: File, i: Int = 1): Unit = {
    val file = dataFiles(dir)(i)
    val scratch = newDir("rewrite")
    spark.read.parquet(file.getAbsolutePath).where("id % 2 = 0").coalesce(1)
      .write.mode("overwrite").parquet(scratch.getAbsolutePath)
    val rewritten = dataFiles(scratch).head
    val mtime = file.lastModified()
    FileUtils.copyFile(rewritten, file)
    // Hadoop's local filesystem would check the new bytes against the old file's checksum.
    new File(file.getParentFile, s".${file.getName}.crc").delete()
    file.setLastModified(mtime + 5000) // distinct even on coarse file-time filesystems
  }

  private def idsIn(file: File): Set[Long] =
    spark.read.parquet(file.getAbsolutePath).select("id").collect().map(_.getLong(0)).toSet

  /**
   * Turns hybrid scan on for the whole suite, allowing up to `maxRatio` of the source's bytes to
   * be appended and up to `maxRatio` deleted: test sources are a handful of files, so one
   * changed file is a large share of them.
   */
  protected def enableHybridScan(maxRatio: Double): Unit = {
    spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
    spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", maxRatio.toString)
    spark.conf.set("spark.hyperspace.index.hybridscan.maxDeletedRatio", maxRatio.toString)
  }

}
