package io.hyperspace.actions

import org.apache.spark.sql.SparkSession

import io.hyperspace.actions.MaintenanceModes.Quick
import io.hyperspace.log.{ContentFile, IndexLogManager, LogEntry, States}

/**
 * Compacts an ACTIVE index's data files within each bucket into a new data version (the
 * untouched files stay where they are; the replaced ones stay until vacuum, so readers of the
 * previous version are not disturbed). `quick` merges, per bucket, the files smaller than
 * `spark.hyperspace.index.optimize.fileSizeThreshold` when there are at least two; `full`
 * leaves one file per bucket. A data skipping index's sketch files are merged into one file
 * (quick: those below the threshold). Rows, and so query results, never change.
 */
class OptimizeAction(
    spark: SparkSession,
    indexLog: IndexLogManager,
    indexName: String,
    val mode: String) extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.OPTIMIZE
  override protected def transientState: String = States.OPTIMIZING
  override protected def finalState: String = States.ACTIVE
  override protected def alreadyDone(base: Option[LogEntry]): Boolean = false

  private var selected: Seq[ContentFile] = Nil

  /** The files the run merges (empty when there was nothing to do). */
  def merged: Seq[ContentFile] = selected

  override protected def validate(base: Option[LogEntry]): Unit = {
    val entry = Action.requireActive(indexName, operation, base)
    selected = IndexData.filesToMerge(spark, entry, quickOnly = mode == Quick)
  }

  override protected def upToDate(base: Option[LogEntry]): Boolean = selected.isEmpty

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry = {
    val entry = base.get
    entry.copy(id = id, content = entry.content.copy(dataVersion = DataVersions.next(spark, indexLog)))
  }

  override protected def op(begin: LogEntry): LogEntry = {
    val dataPath = indexLog.versionPath(begin.content.dataVersion)
    step("merging index files")(IndexData.merge(spark, begin, selected, dataPath))
    val replaced = selected.map(_.path).toSet
    begin.copy(content = begin.content.copy(files =
      (begin.content.files.filterNot(f => replaced.contains(f.path)) ++
        IndexData.listDataFiles(spark, begin.index, begin.name, dataPath)).sortBy(_.path)))
  }

  override protected def cleanup(begin: LogEntry): Unit =
    DataVersions.delete(spark, indexLog.versionPath(begin.content.dataVersion))
}
