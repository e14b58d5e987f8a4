package org.apache.spark.sql.execution.hyperspace

import java.util.concurrent.{CompletableFuture, Future => JFuture}

import scala.concurrent.{ExecutionContext, Future, Promise}
import scala.util.{Failure, Success}

import org.apache.spark.SparkEnv
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, BroadcastPartitioning, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeExec, BroadcastExchangeLike, Exchange}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.storage.BroadcastBlockId

/**
 * A broadcast kept between queries: the size of its relation and its rows as Spark measured them
 * when it built it (what the plan's statistics say), and the bytes the driver's block manager
 * stores for it (serialized).
 */
final case class KeptBroadcast(broadcast: Broadcast[Any], dataSize: Long, rows: Long, storedBytes: Long)

object KeptBroadcast {
  /** Bytes of the pieces of `b` (a torrent broadcast: piece0, piece1, ...) in the driver's block manager. */
  private[hyperspace] def storedBytes(b: Broadcast[_]): Long = {
    val blocks = SparkEnv.get.blockManager
    Iterator.from(0).map(i => blocks.getStatus(BroadcastBlockId(b.id, s"piece$i")))
      .takeWhile(_.isDefined).map(s => s.get.memSize + s.get.diskSize).sum
  }
}

/** Where the broadcasts of a [[KeptBroadcastExchangeExec]] are kept, and whether they may be. */
trait BroadcastKeeper {
  /** The broadcast of `child`'s rows in `mode` kept by an earlier query, if any. */
  def kept(mode: BroadcastMode, child: SparkPlan): Option[KeptBroadcast]

  /** Offers the broadcast just built of `child`'s rows in `mode` to keep. */
  def keep(mode: BroadcastMode, child: SparkPlan, broadcast: KeptBroadcast): Unit

  /** Where the broadcasts are kept (for explain). */
  def description: String
}

/**
 * A broadcast exchange whose broadcast is kept by `keeper` for later queries over the same rows:
 * the first query builds it exactly as Spark's [[BroadcastExchangeExec]] does (by running one);
 * a later query takes the kept broadcast as it is, with no job to collect the rows, no hashed
 * relation to build and nothing to send again. Only for rows that do not change between queries
 * (the keeper decides which those are).
 *
 * It canonicalizes as Spark's exchange of the same rows, so exchange reuse and dynamic pruning's
 * reuse of a join's broadcast treat it as that exchange. Here because a broadcast exchange
 * implements methods private to Spark's SQL package.
 */
case class KeptBroadcastExchangeExec(mode: BroadcastMode, child: SparkPlan, keeper: BroadcastKeeper)
  extends Exchange with BroadcastExchangeLike {

  // Made with this node, while the planning session is active (a plan node takes its session
  // when it is created).
  @transient private val build = BroadcastExchangeExec(mode, child)

  @transient private lazy val kept: Option[KeptBroadcast] = keeper.kept(mode, child)

  @transient private lazy val promise = Promise[Broadcast[Any]]()

  override lazy val metrics: Map[String, SQLMetric] = build.metrics

  override def output: Seq[Attribute] = child.output

  override def outputPartitioning: Partitioning = BroadcastPartitioning(mode)

  // Cancelling this exchange's jobs cancels the build's.
  override def jobTag: String = build.jobTag

  override def runtimeStatistics: Statistics = build.runtimeStatistics

  override def completionFuture: Future[Broadcast[Any]] = promise.future

  @transient override lazy val relationFuture: JFuture[Broadcast[Any]] = kept match {
    case Some(k) =>
      metrics("numOutputRows").set(k.rows)
      metrics("dataSize").set(k.dataSize)
      Option(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)).foreach { id =>
        SQLMetrics.postDriverMetricUpdates(sparkContext, id, metrics.values.toSeq)
      }
      promise.trySuccess(k.broadcast)
      CompletableFuture.completedFuture(k.broadcast)
    case None =>
      build.completionFuture.onComplete {
        case Success(b) =>
          val stats = build.runtimeStatistics
          keeper.keep(mode, child,
            KeptBroadcast(b, stats.sizeInBytes.toLong,
              stats.rowCount.map(_.toLong).getOrElse(0L), KeptBroadcast.storedBytes(b)))
          promise.trySuccess(b)
        case Failure(e) => promise.tryFailure(e)
      }(ExecutionContext.parasitic)
      build.relationFuture
  }

  override protected def doPrepare(): Unit = relationFuture

  override protected[sql] def doExecuteBroadcast[T](): Broadcast[T] = kept match {
    case Some(k) => k.broadcast.asInstanceOf[Broadcast[T]]
    case None => build.executeBroadcast[T]()
  }

  override protected def doExecute(): RDD[InternalRow] =
    throw new UnsupportedOperationException(s"$nodeName does not support execute()")

  override def doCanonicalize(): SparkPlan = build.canonicalized

  override protected def withNewChildInternal(newChild: SparkPlan): KeptBroadcastExchangeExec =
    copy(child = newChild)

  override def simpleString(maxFields: Int): String =
    s"KeptBroadcastExchange $mode, ${keeper.description}"
}
