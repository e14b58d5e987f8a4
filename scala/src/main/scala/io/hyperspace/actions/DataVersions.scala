package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.log.{Content, IndexLogManager, LogEntry, States}

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

  /** What an index's log says of one of its data versions, for vacuum. */
  sealed trait Use
  object Use {
    /** The newest stable entry is ACTIVE and reads it. */
    case object Current extends Use
    /** ACTIVE entries read it until the stable entry written at `since` (ms) stopped doing so. */
    final case class UnusedSince(since: Long) extends Use
    /** Only transient entries name it: written by an operation that failed or was cancelled, never read. */
    case object NeverRead extends Use
  }

  /**
   * What `entries` (an index's whole log) say of each data version they name. Readers only
   * ever use the newest stable entry, and only an ACTIVE one: a version is in use from the first
   * ACTIVE entry that reads it until the next stable entry that does not (a refresh or optimize
   * that replaced it, or the delete of the index); a restore makes it current again. Versions no
   * entry names are not in the map: they are not the index's.
   */
  def uses(entries: Seq[LogEntry]): Map[Int, Use] = {
    var current = Set.empty[Int]
    val unusedSince = scala.collection.mutable.Map[Int, Long]()
    val named = scala.collection.mutable.Set[Int]()
    entries.sortBy(_.id).foreach { e =>
      named ++= e.content.versionsUsed
      if (e.isStable) {
        val now = if (e.state == States.ACTIVE) e.content.versionsUsed else Set.empty[Int]
        (current -- now).foreach(v => unusedSince(v) = e.timestamp)
        now.foreach(unusedSince.remove)
        current = now
      }
    }
    named.iterator.map { v =>
      v ->
        (if (current.contains(v)) Use.Current
         else unusedSince.get(v).map[Use](Use.UnusedSince(_)).getOrElse(Use.NeverRead))
    }.toMap
  }
}
