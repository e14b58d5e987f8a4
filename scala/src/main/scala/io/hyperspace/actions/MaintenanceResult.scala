package io.hyperspace.actions

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.module.scala.DefaultScalaModule

/**
 * What a refresh, optimize or vacuum did, for the caller to show or check.
 *
 * @param changed       false when the index was already up to date and nothing was written
 * @param logVersion    the id of the index's newest stable log entry afterwards
 * @param appendedFiles source files appended (or rewritten) since the index data was built
 * @param deletedFiles  source files deleted (or rewritten) since then
 * @param mergedFiles   index files an optimize merged
 * @param message       one sentence saying what happened
 */
case class MaintenanceResult(
    indexName: String,
    operation: String,
    mode: String,
    changed: Boolean,
    logVersion: Long,
    appendedFiles: Int,
    deletedFiles: Int,
    mergedFiles: Int,
    message: String) {

  /** The result as JSON (field names as above), for the Python bindings. */
  def toJson: String = MaintenanceResult.mapper.writeValueAsString(this)

  override def toString: String = message
}

object MaintenanceResult {
  private val mapper = new ObjectMapper().registerModule(DefaultScalaModule)

  /** The result of a refresh run that ended at log entry `after`. */
  def of(action: RefreshAction, after: Long): MaintenanceResult = {
    val c = action.changes
    val changed = action.committedChanges
    val what = action.mode match {
      case MaintenanceModes.Quick => "recorded"
      case _ => "indexed"
    }
    val message =
      if (!changed) s"Index '${action.indexName}' is up to date with its source; nothing to refresh."
      else s"Refreshed index '${action.indexName}' (${action.mode}): ${c.appended.size} appended and " +
        s"${c.deleted.size} deleted source file(s) $what; log version $after." +
        // For a table format, whether the changes came from its log (the cheap way) or a listing.
        (if (action.filesFound.detail.isEmpty) "" else s" Source files ${action.filesFound.detail}.")
    MaintenanceResult(action.indexName, "refresh", action.mode, changed, after,
      c.appended.size, c.deleted.size, 0, message)
  }

  /** The result of a vacuum run that ended at log entry `after`. */
  def of(action: VacuumAction, after: Long): MaintenanceResult = {
    val changed = action.committedChanges
    MaintenanceResult(action.indexName, "vacuum", "", changed, after, 0, 0, 0, action.describe(changed))
  }

  /** The result of an optimize run. */
  def of(action: OptimizeAction, after: Long): MaintenanceResult = {
    val changed = action.committedChanges
    val message =
      if (!changed) s"Index '${action.indexName}' has nothing to optimize in ${action.mode} mode."
      else s"Optimized index '${action.indexName}' (${action.mode}): merged ${action.merged.size} " +
        s"file(s); log version $after."
    MaintenanceResult(action.indexName, "optimize", action.mode, changed, after, 0, 0,
      if (changed) action.merged.size else 0, message)
  }
}
