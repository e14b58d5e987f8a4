package io.hyperspace.log

import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.FiniteDuration

import org.apache.hadoop.fs.Path
import org.scalatest.Assertions

/** Threads racing for one log entry, as the local and the S3 store suites run them. */
trait PutIfAbsentRacing { self: Assertions =>

  /**
   * For each of `rounds` rounds, `threads` threads put `thread <t>` at `pathOf(round)` at once:
   * exactly one wins each round, and the entry holds the winner's text.
   */
  protected def raceThreads(store: LogStore, threads: Int, rounds: Int, timeout: FiniteDuration)(
      pathOf: Int => Path): Unit = {
    val pool = Executors.newFixedThreadPool(threads)
    implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
    try {
      for (round <- 0 until rounds) {
        val path = pathOf(round)
        val start = new CountDownLatch(1)
        val racers = (0 until threads).map(t => Future { start.await(); t -> store.putIfAbsent(path, s"thread $t") })
        start.countDown()
        val winners = Await.result(Future.sequence(racers), timeout).collect { case (t, true) => t }
        assert(winners.size == 1, s"round $round: winners $winners")
        assert(store.read(path).contains(s"thread ${winners.head}"))
      }
    } finally {
      pool.shutdown()
      pool.awaitTermination(10, TimeUnit.SECONDS)
    }
  }
}
