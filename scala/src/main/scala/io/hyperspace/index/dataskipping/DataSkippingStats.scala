package io.hyperspace.index.dataskipping

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{FileSourceScanExec, QueryExecution, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.util.QueryExecutionListener

import io.hyperspace.shims.FileRelation

/**
 * Data skipping statistics of queries: per scanned relation, the files and bytes listed, skipped
 * and read, and which index and sketch skipped them ([[RelationSkippingStats]]).
 *
 * Three ways to get them:
 *  - [[of]] a query's `QueryExecution` (e.g. `df.queryExecution`, as planned), or [[ofRun]] after
 *    running it (with what adaptive execution pruned at run time);
 *  - a [[DataSkippingListener]] registered with `spark.listenerManager`, called per query;
 *  - [[last]]: the most recent query the session ran (what `Hyperspace.lastQuerySkippingStats`
 *    returns).
 */
object DataSkippingStats {

  /** The statistics of the relations data skipping pruned in `qe`'s optimized plan. */
  def of(qe: QueryExecution): Seq[RelationSkippingStats] = of(qe.optimizedPlan)

  /**
   * The statistics of `qe` once it ran: those of the scans it executed when adaptive execution
   * pruned one at run time (join pruning, which the optimized plan does not show), else [[of]].
   */
  def ofRun(qe: QueryExecution): Seq[RelationSkippingStats] = {
    val planned = of(qe)
    val run = scanned(qe.executedPlan)
    if (run.exists(s => !planned.exists(_ eq s))) run else planned
  }

  private def scanned(plan: SparkPlan): Seq[RelationSkippingStats] = plan match {
    case a: AdaptiveSparkPlanExec => scanned(a.executedPlan)
    case q: QueryStageExec => scanned(q.plan)
    case s: FileSourceScanExec =>
      s.relation.location match {
        case d: SkippedFilesIndex => Seq(d.stats)
        case _ => Nil
      }
    case p => (p.children ++ p.subqueries).flatMap(scanned)
  }

  /** The statistics of the relations data skipping pruned in an optimized `plan` (subqueries included). */
  def of(plan: LogicalPlan): Seq[RelationSkippingStats] = plan.collectWithSubqueries {
    case FileRelation(_, fs) if fs.location.isInstanceOf[SkippedFilesIndex] =>
      fs.location.asInstanceOf[SkippedFilesIndex].stats
  }

  private val listeners = new java.util.WeakHashMap[SparkSession, LastQueryListener]()

  /** Registers the listener behind [[last]] with `spark`, once per session. */
  def ensureListener(spark: SparkSession): Unit = listeners.synchronized {
    if (!listeners.containsKey(spark)) {
      val listener = new LastQueryListener
      spark.listenerManager.register(listener)
      listeners.put(spark, listener)
    }
  }

  /**
   * The statistics of the most recent query `spark` ran successfully (empty when no data
   * skipping index pruned it). Query events are delivered asynchronously: this waits until the
   * ones already posted have been handled.
   */
  def last(spark: SparkSession): Seq[RelationSkippingStats] = {
    ensureListener(spark)
    SparkInternals.waitForListenerEvents(spark)
    listeners.synchronized(Option(listeners.get(spark))).map(_.last).getOrElse(Nil)
  }

  private class LastQueryListener extends DataSkippingListener {
    @volatile var last: Seq[RelationSkippingStats] = Nil
    override def onQuery(funcName: String, qe: QueryExecution, stats: Seq[RelationSkippingStats]): Unit =
      last = stats
  }
}

/**
 * A query execution listener told each successful query's data skipping statistics, e.g.
 * {{{
 *   spark.listenerManager.register(new DataSkippingListener {
 *     def onQuery(funcName: String, qe: QueryExecution, stats: Seq[RelationSkippingStats]): Unit =
 *       stats.foreach(s => println(s.describe))
 *   })
 * }}}
 * Spark calls it on its listener thread after the query finished.
 */
abstract class DataSkippingListener extends QueryExecutionListener {

  /** Called after each successful query with its statistics (empty when nothing was pruned). */
  def onQuery(funcName: String, qe: QueryExecution, stats: Seq[RelationSkippingStats]): Unit

  override final def onSuccess(funcName: String, qe: QueryExecution, durationNs: Long): Unit =
    onQuery(funcName, qe, DataSkippingStats.ofRun(qe))

  override def onFailure(funcName: String, qe: QueryExecution, exception: Exception): Unit = ()
}
