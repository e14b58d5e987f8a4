package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.log.{Content, IndexLogManager}

/** The `v__=N` data directories of an index. */
object DataVersions {

  /** The version numbers of the data directories present under the index. */
  def present(spark: SparkSession, indexLog: IndexLogManager): Seq[Int] = {
    val fs = indexLog.indexPath.getFileSystem(spark.sessionState.newHadoopConf())
    if (!fs.exists(indexLog.indexPath)) Nil
    else fs.listStatus(indexLog.indexPath).toSeq.filter(_.isDirectory)
      .flatMap(s => Content.versionOf(s.getPath.getName))
  }

  /**
   * A version number no directory and no log entry has used, so a new build never writes into
   * what a crashed one left behind.
   */
  def next(spark: SparkSession, indexLog: IndexLogManager): Int = {
    val used = present(spark, indexLog) ++ indexLog.readableEntries.map(_.content.dataVersion)
    if (used.isEmpty) 0 else used.max + 1
  }

  /** Removes a data directory (and everything in it), if present. */
  def delete(spark: SparkSession, dataPath: Path): Unit = {
    val fs = dataPath.getFileSystem(spark.sessionState.newHadoopConf())
    if (fs.exists(dataPath)) fs.delete(dataPath, true)
  }
}
