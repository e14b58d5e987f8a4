package io.hyperspace.actions

import org.apache.spark.sql.SparkSession

import io.hyperspace.log.{IndexLogManager, LogEntry, States}

/** Soft delete: the index stays on disk, unused by queries, until vacuumed; restore undoes it. */
class DeleteAction(spark: SparkSession, indexLog: IndexLogManager, indexName: String)
  extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.DELETE
  override protected def transientState: String = States.DELETING
  override protected def finalState: String = States.DELETED

  // A CORRUPT index with no readable stable entry starts DELETED (Action.unrecoverable); deleting
  // it records that state, so it is listed DELETED rather than CORRUPT and can be vacuumed.
  override protected def validate(base: Option[LogEntry]): Unit =
    if (!(base.exists(Action.isUnrecoverable) && indexLog.damage.isDefined)) {
      Action.requireState(indexName, operation, base, Set(States.ACTIVE),
        if (base.exists(_.state == States.DELETED)) "It is already deleted." else "")
    }

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry =
    base.get.copy(id = id)

  override protected def op(begin: LogEntry): LogEntry = begin
}
