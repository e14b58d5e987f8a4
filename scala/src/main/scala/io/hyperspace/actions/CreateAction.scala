package io.hyperspace.actions

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.{Content, IndexDefinition, IndexLogManager, LogEntry, Owner, States}
import io.hyperspace.sources.FileSource

/**
 * Builds an index over `source` into a new data version and makes it ACTIVE: a covering index or
 * a data skipping index (sketch table), by `definition.kind`.
 *
 * The data is read by a fresh scan of exactly the files the entry records, never through the
 * user's DataFrame: that one may be cached (`df.cache()` before files were appended), and
 * building from its cached rows while recording the current listing would make the index miss
 * rows.
 */
class CreateAction(
    spark: SparkSession,
    indexLog: IndexLogManager,
    indexName: String,
    source: FileSource,
    definition: IndexDefinition) extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.CREATE
  override protected def transientState: String = States.CREATING
  override protected def finalState: String = States.ACTIVE
  override protected def alreadyDone(base: Option[LogEntry]): Boolean = false

  override protected def validate(base: Option[LogEntry]): Unit = base.map(_.state) match {
    case None | Some(States.DOESNOTEXIST) =>
    case Some(States.DELETED) =>
      throw new io.hyperspace.HyperspaceException(
        s"Index '$indexName' already exists and is DELETED: restore it with " +
          s"restoreIndex('$indexName'), or vacuum it with vacuumIndex('$indexName') to free the name: " +
          s"vacuum removes it once its data has been unused for ${HyperspaceConf.VACUUM_RETENTION.key}, " +
          s"or at once with vacuumIndex('$indexName', 0) when " +
          s"${HyperspaceConf.VACUUM_RETENTION_CHECK_ENABLED.key}=false and no query still reads it.")
    case Some(state) =>
      throw new io.hyperspace.HyperspaceException(s"Index '$indexName' already exists (state $state).")
  }

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry = {
    val described = source.describe()
    LogEntry(
      specVersion = LogEntry.SpecVersion, id = id, name = indexName, state = transientState,
      operation = operation, timestamp = System.currentTimeMillis(), enabled = false,
      owner = Owner.current, index = definition, incarnation = Some(LogEntry.newIncarnation()),
      content = Content(indexLog.indexPath.toString, DataVersions.next(spark, indexLog), Nil),
      source = described, signature = source.signature(described.files), extra = source.entryExtra)
  }

  override protected def op(begin: LogEntry): LogEntry = {
    val dataPath = indexLog.versionPath(begin.content.dataVersion)
    val files = begin.source.files
    val scan = SparkInternals.ofRows(spark, source.restrictedTo(files.map(_.path).toSet))
    step("writing index data")(IndexData.write(scan, definition, indexName, files, dataPath))
    begin.copy(content = begin.content.copy(files = IndexData.listDataFiles(spark, definition, indexName, dataPath)))
  }

  override protected def cleanup(begin: LogEntry): Unit =
    DataVersions.delete(spark, indexLog.versionPath(begin.content.dataVersion))
}
