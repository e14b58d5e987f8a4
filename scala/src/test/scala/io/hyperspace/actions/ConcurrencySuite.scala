package io.hyperspace.actions

import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.util.Try

import io.hyperspace.{HyperspaceConflictException, HyperspaceException, HyperspaceSuite}
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.{LogEntry, Owner, States}

class ConcurrencySuite extends HyperspaceSuite {

  private val transientOf = Map(
    Operations.CREATE -> States.CREATING, Operations.DELETE -> States.DELETING,
    Operations.OPTIMIZE -> States.OPTIMIZING, Operations.REFRESH -> States.REFRESHING,
    Operations.RESTORE -> States.RESTORING, Operations.VACUUM -> States.VACUUMING)

  // The paper's Table 1, row = running operation, column = new operation.
  private val table1 = Seq(
    "C  " -> "N N N N N N",
    "D  " -> "N Y Y Y N N",
    "O  " -> "N Y Y Y N N",
    "RF " -> "N Y Y Y N N",
    "RS " -> "N N N N Y N",
    "V  " -> "N N N N N Y")

  test("the compatibility matrix is the paper's Table 1") {
    for (((_, row), running) <- table1.zip(Operations.all);
      (cell, incoming) <- row.split(" ").zip(Operations.all)) {
      assert(Operations.compatible(running, incoming) == (cell == "Y"), s"$running vs $incoming")
    }
  }

  private def withWaitTimeout[T](ms: Long)(body: => T): T = {
    spark.conf.set("spark.hyperspace.concurrency.waitTimeout", s"${ms}ms")
    try body
    finally spark.conf.unset("spark.hyperspace.concurrency.waitTimeout")
  }

  /** Appends a transient entry as if `operation` were running in a live process. */
  private def holdWith(name: String, operation: String, owner: Owner = Owner.current): LogEntry = {
    val log = logOf(name)
    val latest = log.latest.get
    val held = latest.copy(id = latest.id + 1, state = transientOf(operation), operation = operation,
      owner = owner, timestamp = System.currentTimeMillis())
    assert(log.tryAppend(held))
    held
  }

  private lazy val source = writeSource("concurrency")

  /** The operations, with the state each needs to start from. */
  private val incomingOps: Seq[(String, String, String => Unit)] = Seq(
    (Operations.CREATE, States.DOESNOTEXIST,
      (n: String) => hs.createIndex(spark.read.parquet(source), IndexConfig(n, Seq("id")))),
    (Operations.DELETE, States.ACTIVE, (n: String) => hs.deleteIndex(n)),
    (Operations.REFRESH, States.ACTIVE, (n: String) => hs.refreshIndex(n, "incremental")),
    (Operations.OPTIMIZE, States.ACTIVE, (n: String) => hs.optimizeIndex(n, "full")),
    (Operations.RESTORE, States.DELETED, (n: String) => hs.restoreIndex(n)),
    (Operations.VACUUM, States.DELETED, (n: String) => hs.vacuumIndex(n)))

  for (running <- Operations.all; (incoming, from, run) <- incomingOps) {
    val compatible = Operations.compatible(running, incoming)
    test(s"Table 1: $incoming while $running runs ${if (compatible) "waits" else "fails fast"}, writing nothing") {
      val name = s"t1-${running.toLowerCase}-${incoming.toLowerCase}"
      hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id")))
      if (from == States.DELETED) hs.deleteIndex(name)
      holdWith(name, running)
      val before = entries(name)
      val dirsBefore = versionDirs(name)
      val started = System.nanoTime()
      val e = withWaitTimeout(400) { intercept[HyperspaceConflictException](run(name)) }
      val waitedMs = (System.nanoTime() - started) / 1000000
      assert(e.getMessage.contains(s"index '$name'"), e.getMessage)
      assert(e.getMessage.contains(running), e.getMessage)
      assert(e.getMessage.contains(s"cancel('$name')"), e.getMessage)
      if (compatible) {
        assert(e.getMessage.contains("did not finish within 0.4s"), e.getMessage)
        assert(waitedMs >= 400)
      } else {
        assert(e.getMessage.contains("cannot run together"), e.getMessage)
      }
      assert(entries(name) == before, "the loser must not write to the log")
      assert(versionDirs(name) == dirsBefore, "the loser must not leave data behind")
    }
  }

  test("a compatible operation waits for the running one and then has nothing left to do") {
    val name = "waiter"
    hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id")))
    val held = holdWith(name, Operations.DELETE)
    implicit val ec: ExecutionContext = ExecutionContext.global
    val waiting = Future(withWaitTimeout(30000)(hs.deleteIndex(name)))
    Thread.sleep(500)
    assert(!waiting.isCompleted, "the second delete must wait for the first")
    val done = held.copy(id = held.id + 1, state = States.DELETED, enabled = false)
    assert(logOf(name).tryAppend(done))
    logOf(name).setLatestStable(done.id)
    Await.result(waiting, 30.seconds)
    assert(entries(name).last == done, "the waiting delete found the work done and wrote nothing")
  }

  test("an operation left by a dead process is reported with what to do") {
    val name = "orphaned"
    hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id")))
    val dead = new ProcessBuilder("true").start()
    dead.waitFor()
    holdWith(name, Operations.DELETE, Owner.current.copy(pid = dead.pid()))
    val e = withWaitTimeout(60000) { intercept[HyperspaceConflictException](hs.deleteIndex(name)) }
    assert(e.getMessage.contains("whose process is no longer running"), e.getMessage)
    assert(e.getMessage.contains(s"run cancel('$name')"))
    hs.cancel(name)
    assert(logOf(name).latestStable.get.state == States.ACTIVE)
    assert(entries(name).last.operation == Operations.CANCEL)
    hs.deleteIndex(name)
    assert(logOf(name).latestStable.get.state == States.DELETED)
  }

  test("racing deletes from many threads: each succeeds or finds it already deleted; one delete is logged") {
    val name = "racing-deletes"
    hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id")))
    val pool = Executors.newFixedThreadPool(8)
    implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
    try {
      val start = new CountDownLatch(1)
      val all = (0 until 8).map(_ => Future { start.await(); Try(hs.deleteIndex(name)) })
      start.countDown()
      val results = Await.result(Future.sequence(all), 60.seconds)
      // A delete that overlaps the winner waits and succeeds; one that starts after the winner
      // committed is an ordinary delete of a DELETED index.
      assert(results.exists(_.isSuccess))
      results.filter(_.isFailure).map(_.failed.get).foreach { e =>
        assert(e.getMessage.endsWith("It is already deleted."), e.getMessage)
      }
    } finally pool.shutdown()
    assert(states(name) == Seq(States.CREATING, States.ACTIVE, States.DELETING, States.DELETED))
  }

  test("racing creates of one name: exactly one wins, the others fail and leave nothing") {
    val name = "racing-creates"
    val pool = Executors.newFixedThreadPool(6)
    implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
    val results = try {
      val start = new CountDownLatch(1)
      val all = (0 until 6).map(_ =>
        Future {
          start.await()
          Try(hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id"))))
        })
      start.countDown()
      Await.result(Future.sequence(all), 120.seconds)
    } finally {
      pool.shutdown()
      pool.awaitTermination(10, TimeUnit.SECONDS)
    }
    assert(results.count(_.isSuccess) == 1)
    results.filter(_.isFailure).map(_.failed.get).foreach { e =>
      assert(e.isInstanceOf[HyperspaceException])
      assert(e.getMessage.contains("cannot run together") || e.getMessage.contains("already exists"),
        e.getMessage)
    }
    assert(states(name) == Seq(States.CREATING, States.ACTIVE))
    assert(versionDirs(name) == Seq("v__=0"))
    assert(readIndexData(name).count() == 200)
  }

  test("a cancel that overtakes a running operation makes its commit fail and discards its work") {
    val name = "overtaken"
    hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id")))
    val inOp = new CountDownLatch(1)
    val proceed = new CountDownLatch(1)
    val slowDelete = new DeleteAction(spark, logOf(name), name) {
      override protected def op(begin: LogEntry): LogEntry = {
        inOp.countDown()
        proceed.await(30, TimeUnit.SECONDS)
        begin
      }
    }
    implicit val ec: ExecutionContext = ExecutionContext.global
    val running = Future(slowDelete.run())
    assert(inOp.await(30, TimeUnit.SECONDS))
    hs.cancel(name, force = true) // the delete runs in this very process: only a forced cancel overtakes it
    proceed.countDown()
    val e = intercept[HyperspaceConflictException](Await.result(running, 30.seconds))
    assert(e.getMessage.contains("was overtaken by CANCEL"), e.getMessage)
    assert(logOf(name).latestStable.get.state == States.ACTIVE)
    assert(states(name).takeRight(2) == Seq(States.DELETING, States.ACTIVE))
  }

  test("a delete racing a running refresh waits for it, then deletes the refreshed index") {
    val dir = writeSource("race-refresh", rows = 400, files = 4)
    val name = "refresh-vs-delete"
    hs.createIndex(spark.read.parquet(dir), IndexConfig(name, Seq("id"), Seq("name"), lineage = Some(true)))
    spark.range(1000, 1100).selectExpr("id", "CONCAT('name-', id % 17) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount", "DATE'2024-02-01' AS day").coalesce(1).write.mode("append").parquet(dir)
    val inOp = new CountDownLatch(1)
    val proceed = new CountDownLatch(1)
    val slowRefresh = new RefreshAction(spark, logOf(name), name, "incremental") {
      override protected def op(begin: LogEntry): LogEntry = {
        inOp.countDown()
        proceed.await(30, TimeUnit.SECONDS)
        super.op(begin)
      }
    }
    implicit val ec: ExecutionContext = ExecutionContext.global
    val refreshing = Future(slowRefresh.run())
    assert(inOp.await(30, TimeUnit.SECONDS))
    val deleting = Future(withWaitTimeout(60000)(hs.deleteIndex(name)))
    Thread.sleep(300)
    assert(!deleting.isCompleted, "the delete must wait for the refresh (Table 1: compatible)")
    // An optimize is compatible too; a create of the same name is not and fails at once.
    val create = intercept[HyperspaceException](
      hs.createIndex(spark.read.parquet(dir), IndexConfig(name, Seq("id"))))
    assert(create.getMessage.contains("already exists") || create.getMessage.contains("cannot run together"))
    proceed.countDown()
    Await.result(refreshing, 60.seconds)
    Await.result(deleting, 60.seconds)
    assert(states(name).takeRight(4) == Seq(States.REFRESHING, States.ACTIVE, States.DELETING, States.DELETED))
    val deleted = logOf(name).latestStable.get
    assert(deleted.source.files.size == 5, "the delete kept the refreshed content, restorable")
    hs.restoreIndex(name)
    assert(readIndexData(name).count() == 500)
  }
}
