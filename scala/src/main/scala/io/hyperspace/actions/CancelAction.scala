package io.hyperspace.actions

import java.time.Instant

import org.apache.spark.sql.SparkSession

import io.hyperspace.{HyperspaceConflictException, HyperspaceException, HyperspaceIndexNotFoundException}
import io.hyperspace.index.CatalogVersion
import io.hyperspace.log.{IndexLogManager, LogEntry, Owner}

/**
 * Rolls an index stuck in a transient state (its operation crashed or was killed) back to its
 * last stable state, and removes the data directory the stuck operation was writing.
 *
 * An operation whose process is still running on this host is not stuck: cancelling it would
 * delete the data it is writing under it. Such a cancel is refused unless `force` is set (an
 * operation of another host cannot be checked and is cancelled as asked).
 */
class CancelAction(spark: SparkSession, indexLog: IndexLogManager, indexName: String, force: Boolean = false) {

  /** Runs the cancel; returns the stable entry it wrote. */
  def run(): LogEntry = {
    val stuck = indexLog.latest.getOrElse(
      throw new HyperspaceIndexNotFoundException(s"Cannot cancel: index '$indexName' does not exist."))
    if (stuck.isStable) {
      throw new HyperspaceException(
        s"Index '$indexName' has no unfinished operation to cancel (it is ${stuck.state}).")
    }
    if (!force && Owner.isAliveOnThisHost(stuck.owner)) {
      throw new HyperspaceConflictException(
        s"Cannot cancel the ${stuck.operation} of index '$indexName' (log entry ${stuck.id}, started " +
          s"${Instant.ofEpochMilli(stuck.timestamp)}): its process ${stuck.owner.pid} is still running " +
          s"on ${stuck.owner.host}. Wait for it to finish, or stop that process; to cancel anyway, use " +
          s"cancel('$indexName', force=True) (Scala: hs.cancel(\"$indexName\", force = true)).")
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
      DataVersions.delete(spark, indexLog.versionPath(stuck.content.dataVersion))
    }
    restored
  }
}
