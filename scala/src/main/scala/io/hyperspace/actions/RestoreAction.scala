package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.HyperspaceException
import io.hyperspace.log.{IndexLogManager, LogEntry, States}

/** Brings a DELETED index back to ACTIVE, with the data it had. */
class RestoreAction(spark: SparkSession, indexLog: IndexLogManager, indexName: String)
  extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.RESTORE
  override protected def transientState: String = States.RESTORING
  override protected def finalState: String = States.ACTIVE

  override protected def validate(base: Option[LogEntry]): Unit = {
    Action.requireState(indexName, operation, base, Set(States.DELETED),
      if (base.exists(_.state == States.ACTIVE)) "It is not deleted." else "")
    val entry = base.get
    if (Action.isUnrecoverable(entry)) {
      throw new HyperspaceException(
        s"Cannot restore index '$indexName': it was deleted while CORRUPT with no readable stable " +
          s"log entry (${entry.extra(Action.UnrecoverableKey)}), so what it held is unknown. Vacuum " +
          s"it with vacuumIndex('$indexName') and create it again.")
    }
    // An interrupted vacuum may have removed data a DELETED entry still lists.
    val fs = indexLog.indexPath.getFileSystem(spark.sessionState.newHadoopConf())
    entry.content.files.map(f => new Path(entry.content.pathOf(f))).find(!fs.exists(_))
      .foreach { missing =>
        throw new HyperspaceException(
          s"Cannot restore index '$indexName': its data file $missing is gone (an interrupted " +
            s"vacuum?). Vacuum it with vacuumIndex('$indexName') and create it again.")
      }
  }

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry =
    base.get.copy(id = id)

  override protected def op(begin: LogEntry): LogEntry = begin
}
