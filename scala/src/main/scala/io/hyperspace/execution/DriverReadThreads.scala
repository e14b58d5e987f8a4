package io.hyperspace.execution

import java.util.concurrent.{ExecutionException, ExecutorService, LinkedBlockingQueue, ThreadFactory, ThreadPoolExecutor, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.{classic, SparkSession}
import org.apache.spark.sql.execution.SQLExecution

/**
 * The threads a driver-side read ([[DriverIndexReadExec]]) reads several index files on: the
 * query's own thread and daemon threads shared by all queries of the JVM, each given the query's
 * session and local properties as Spark gives them to its own driver-side work (broadcasts,
 * subqueries).
 */
private[execution] object DriverReadThreads {

  /** At most this many reads off the query threads run at once; more wait in the queue. */
  private val PoolSize = 16

  private lazy val pool: ExecutorService = {
    val threadFactory = new ThreadFactory {
      private val created = new AtomicInteger
      override def newThread(r: Runnable): Thread = {
        val thread = new Thread(r, s"hyperspace-driver-read-${created.incrementAndGet()}")
        thread.setDaemon(true)
        thread
      }
    }
    val executor = new ThreadPoolExecutor(PoolSize, PoolSize, 60L, TimeUnit.SECONDS,
      new LinkedBlockingQueue[Runnable], threadFactory)
    executor.allowCoreThreadTimeOut(true)
    executor
  }

  /**
   * `files`, in their order, as at most `count` runs of consecutive files of about equal bytes:
   * a file goes to the run its middle byte falls in. The same files always make the same runs,
   * so results that depend on the order rows are combined in (sums of doubles) repeat.
   */
  def runs(files: Seq[FileStatus], count: Int): Seq[Seq[FileStatus]] = {
    val total = math.max(1L, files.map(_.getLen).sum)
    val starts = files.scanLeft(0L)(_ + _.getLen)
    files.zip(starts).groupBy { case (file, start) =>
      math.min(count - 1L, (start + file.getLen / 2) * count / total).toInt
    }.toSeq.sortBy(_._1).map(_._2.map(_._1))
  }

  /**
   * The results of `tasks`, in their order: the first run on the calling thread, the others on the
   * shared threads. Returns (or throws the first task's failure, in task order) only once every
   * task has ended, so no read is still open when the query moves on.
   */
  def runAll[T](spark: SparkSession, tasks: Seq[() => T]): Seq[T] = tasks match {
    case Seq() => Nil
    case first +: rest =>
      // Every session of a JVM that runs queries is a classic one (Connect's server runs those too).
      val session = spark.asInstanceOf[classic.SparkSession]
      val others = rest.map(task => SQLExecution.withThreadLocalCaptured(session, pool)(task()))
      val outcomes = attempt(first()) +: others.map { future =>
        attempt {
          try future.get()
          catch { case e: ExecutionException if e.getCause != null => throw e.getCause }
        }
      }
      outcomes.map(_.fold(e => throw e, identity))
  }

  private def attempt[T](body: => T): Either[Throwable, T] =
    try Right(body)
    catch { case e: Throwable => Left(e) }
}
