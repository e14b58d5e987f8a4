package io.hyperspace

import java.io.File

import org.apache.spark.sql.DataFrame

import io.hyperspace.index.IndexCatalog
import io.hyperspace.log.{IndexLogManager, LogEntry}

/** A session suite with a Hyperspace facade, a private system path and data helpers. */
trait HyperspaceSuite extends SparkSessionSuite {

  protected lazy val hs: Hyperspace = Hyperspace(spark)

  protected def systemPath: File = new File(tempDir, "indexes")

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.hyperspace.system.path", systemPath.getAbsolutePath)
    spark.conf.set("spark.hyperspace.index.numBuckets", "4")
  }

  /** Writes a small Parquet table (`id`, `name`, `amount`, `day`) in `files` files; returns its path. */
  protected def writeSource(name: String, rows: Int = 200, files: Int = 3): String = {
    val path = newDir(name).getAbsolutePath + "/data"
    spark.range(0, rows, 1, files).selectExpr(
      "id", "CONCAT('name-', id % 17) AS name", "CAST(id * 1.5 AS DOUBLE) AS amount",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 5 AS INT)) AS day")
      .write.parquet(path)
    path
  }

  protected def logOf(name: String): IndexLogManager = new IndexCatalog(spark).logOf(name)

  protected def entries(name: String): Seq[LogEntry] = logOf(name).entries

  protected def states(name: String): Seq[String] = entries(name).map(_.state)

  protected def indexDir(name: String): File = new File(systemPath, name)

  /** The data version directories present for index `name`. */
  protected def versionDirs(name: String): Seq[String] =
    Option(indexDir(name).listFiles()).toSeq.flatten.map(_.getName).filter(_.startsWith("v__=")).sorted

  protected def indexRow(name: String) = hs.index(name).collect().head

  protected def readIndexData(name: String): DataFrame = {
    val entry = logOf(name).latestStable.get
    spark.read.parquet(entry.content.files.map(entry.content.pathOf): _*)
  }

  /** Deletes the indexes `names` and vacuums them now: a test's cleanup, leaving nothing on disk. */
  protected def drop(names: String*): Unit = names.foreach { n =>
    hs.deleteIndex(n)
    vacuumNow(n)
  }

  /**
   * Vacuums `name` with a retention of 0, as if every version it no longer uses had been unused
   * for long: what the original Hyperspace's delete + vacuum + create flows expect.
   */
  protected def vacuumNow(name: String): Unit = {
    val key = "spark.hyperspace.index.vacuum.retention"
    val previous = spark.conf.getOption(key)
    spark.conf.set(key, "0")
    try hs.vacuumIndex(name)
    finally previous match {
        case Some(v) => spark.conf.set(key, v)
        case None => spark.conf.unset(key)
      }
  }
}
