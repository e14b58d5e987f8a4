package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.log.{Content, IndexLogManager, LogEntry, States}

/**
 * Vacuum. A DELETED index: every data version and then the whole directory are removed and the
 * name becomes free. An ACTIVE index: every data directory its current entry does not use
 * (versions replaced by refresh or optimize, leftovers of crashed or cancelled operations) is
 * removed; an incrementally refreshed index keeps using files of several versions.
 */
class VacuumAction(spark: SparkSession, indexLog: IndexLogManager, indexName: String)
  extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.VACUUM
  override protected def transientState: String = States.VACUUMING

  // Decided when the run starts: the base state does not change while we hold the index.
  private var startedFrom: String = States.DELETED

  override protected def finalState: String =
    if (startedFrom == States.ACTIVE) States.ACTIVE else States.DOESNOTEXIST

  override protected def alreadyDone(base: Option[LogEntry]): Boolean =
    base.forall(_.state == States.DOESNOTEXIST)

  override protected def validate(base: Option[LogEntry]): Unit = {
    Action.requireState(indexName, operation, base, Set(States.ACTIVE, States.DELETED), "")
    startedFrom = base.get.state
  }

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry =
    base.get.copy(id = id)

  override protected def op(begin: LogEntry): LogEntry = {
    val keep = if (startedFrom == States.ACTIVE) begin.content.versionsUsed else Set.empty[Int]
    DataVersions.present(spark, indexLog).filterNot(keep.contains).foreach { v =>
      DataVersions.delete(spark, new Path(indexLog.indexPath, Content.versionDirName(v)))
    }
    if (startedFrom == States.ACTIVE) begin
    else begin.copy(content = begin.content.copy(files = Nil))
  }

  override protected def afterCommit(committed: LogEntry): Unit = {
    if (committed.state == States.DOESNOTEXIST) VacuumAction.removeIndexDirectory(spark, indexLog)
  }
}

object VacuumAction {
  /** Removes an index's whole directory, log included: its name is free again. */
  def removeIndexDirectory(spark: SparkSession, indexLog: IndexLogManager): Unit = {
    val fs = indexLog.indexPath.getFileSystem(spark.sessionState.newHadoopConf())
    if (fs.exists(indexLog.indexPath)) fs.delete(indexLog.indexPath, true)
  }
}
