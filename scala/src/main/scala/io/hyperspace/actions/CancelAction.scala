package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.{HyperspaceConflictException, HyperspaceException, HyperspaceIndexNotFoundException}
import io.hyperspace.index.CatalogVersion
import io.hyperspace.log.{IndexLogManager, LogEntry}

/**
 * Rolls an index stuck in a transient state (its operation crashed or was killed) back to its
 * last stable state, and removes the data directory the stuck operation was writing.
 */
class CancelAction(spark: SparkSession, indexLog: IndexLogManager, indexName: String) {

  /** Runs the cancel; returns the stable entry it wrote. */
  def run(): LogEntry = {
    val stuck = indexLog.latest.getOrElse(
      throw new HyperspaceIndexNotFoundException(s"Cannot cancel: index '$indexName' does not exist."))
    if (stuck.isStable) {
      throw new HyperspaceException(
        s"Index '$indexName' has no unfinished operation to cancel (it is ${stuck.state}).")
    }
    val base = indexLog.latestStable
    val restored = Action.rollbackEntry(base, stuck, Operations.CANCEL)
    if (!indexLog.tryAppend(restored)) {
      throw new HyperspaceConflictException(
        s"Cannot cancel the ${stuck.operation} of index '$indexName': it finished or was " +
          "cancelled concurrently. Check its state with indexes().")
    }
    indexLog.setLatestStable(restored.id)
    CatalogVersion.bump(indexLog.indexPath.getParent, spark.sessionState.newHadoopConf())
    if (!base.exists(_.content.dataVersion == stuck.content.dataVersion)) {
      DataVersions.delete(spark, new Path(stuck.content.dataPath))
    }
    restored
  }
}
