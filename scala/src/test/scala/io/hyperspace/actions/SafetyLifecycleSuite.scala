package io.hyperspace.actions

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.security.MessageDigest
import java.sql.{Connection, Driver, DriverManager, DriverPropertyInfo}
import java.util.Properties
import java.util.concurrent.{CyclicBarrier, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger
import java.util.logging.Logger

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.hyperspace.{HyperspaceConflictException, HyperspaceException, HyperspaceSuite}
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.{IndexLogManager, LogEntry, NameClaims, Owner, States}

/**
 * Issue 12, items 5 (names keep their spelling), 7 (create side), 8, 9, 10, 11, 13, 14 and 15:
 * nothing is written or deleted outside what an index owns, and every failure is a clear
 * HyperspaceException.
 */
class SafetyLifecycleSuite extends HyperspaceSuite {

  // Vacuum frees a deleted index at once here: these tests are about paths and names, not the
  // retention (VacuumRetentionSuite).
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.hyperspace.index.vacuum.retention", "0")
  }

  private lazy val source = writeSource("safety", rows = 200, files = 3)

  private def create(name: String, src: String = source): Unit =
    hs.createIndex(spark.read.parquet(src), IndexConfig(name, Seq("id"), Seq("name")))

  private def withSystemPath[T](path: String)(body: => T): T = {
    spark.conf.set("spark.hyperspace.system.path", path)
    try body
    finally spark.conf.set("spark.hyperspace.system.path", systemPath.getAbsolutePath)
  }

  /** Relative path -> MD5 of every file under `dir` (directories as entries too). */
  private def snapshot(dir: File): Map[String, String] =
    Files.walk(dir.toPath).iterator().asScala.map { p =>
      val rel = dir.toPath.relativize(p).toString
      rel ->
        (if (Files.isDirectory(p)) "<dir>"
         else MessageDigest.getInstance("MD5").digest(Files.readAllBytes(p)).map("%02x".format(_)).mkString)
    }.toMap

  private def rowOf(name: String) = hs.indexes.where(s"lower(name) = lower('$name')").collect()

  // ---------------------------------------------------------------------------------------
  // Item 5: an index keeps the name it was created with
  // ---------------------------------------------------------------------------------------

  test("item 5: delete/restore with another spelling do not rename the index") {
    create("index2")
    hs.deleteIndex("INDEX2")
    assert(rowOf("index2").map(_.getAs[String]("name")).toSeq == Seq("index2"))
    assert(logOf("index2").latestStable.get.name == "index2")
    hs.restoreIndex("Index2")
    assert(rowOf("index2").map(_.getAs[String]("name")).toSeq == Seq("index2"))
    assert(entries("index2").map(_.name).distinct == Seq("index2"))
  }

  // ---------------------------------------------------------------------------------------
  // Item 7: create never writes into a directory it does not own
  // ---------------------------------------------------------------------------------------

  test("item 7: create refuses an existing directory that is not a Hyperspace index, and leaves it alone") {
    val foreign = new File(systemPath, "lakeData")
    foreign.mkdirs()
    Files.write(new File(foreign, "part-0.parquet").toPath, "user data".getBytes(UTF_8))
    val before = snapshot(foreign)
    val e = intercept[HyperspaceException](create("lakeData"))
    assert(e.getMessage.contains(foreign.getAbsolutePath) && e.getMessage.contains("not a Hyperspace index"),
      e.getMessage)
    assert(snapshot(foreign) == before, "nothing was written into the foreign directory")

    // A name that differs only in case from the foreign directory is refused too.
    intercept[HyperspaceException](create("LAKEDATA"))
    assert(snapshot(foreign) == before)

    // A `_hyperspace_log` that is not a readable log of ours is not ours either.
    val fake = new File(systemPath, "fakeLog")
    new File(fake, "_hyperspace_log").mkdirs()
    Files.write(new File(fake, "_hyperspace_log/0").toPath, "{\"not\": \"ours\"}".getBytes(UTF_8))
    val fakeBefore = snapshot(fake)
    val e2 = intercept[HyperspaceException](create("fakeLog"))
    assert(e2.getMessage.contains(fake.getAbsolutePath), e2.getMessage)
    assert(snapshot(fake) == fakeBefore)

    // A plain file under the system path with the index's name.
    Files.write(new File(systemPath, "aFile").toPath, "x".getBytes(UTF_8))
    val e3 = intercept[HyperspaceException](create("aFile"))
    assert(e3.getMessage.contains("aFile"), e3.getMessage)
    assert(new String(Files.readAllBytes(new File(systemPath, "aFile").toPath), UTF_8) == "x")
  }

  // ---------------------------------------------------------------------------------------
  // Item 8: every path written or deleted comes from <system path>/<name>
  // ---------------------------------------------------------------------------------------

  test("item 8: operations on a copied index never touch the original's directory") {
    val src = writeSource("copy-src", rows = 300, files = 3)
    hs.createIndex(spark.read.parquet(src), IndexConfig("orig", Seq("id"), Seq("name"), lineage = Some(true)))
    val original = indexDir("orig")
    val otherSystem = newDir("other-system")
    FileUtils.copyDirectory(original, new File(otherSystem, "orig"))
    val before = snapshot(original)

    spark.range(1000, 1050).selectExpr("id", "CONCAT('name-', id % 17) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount", "DATE'2024-02-01' AS day").coalesce(1)
      .write.mode("append").parquet(src)

    withSystemPath(otherSystem.getAbsolutePath) {
      hs.refreshIndex("orig", "incremental")
      hs.optimizeIndex("orig", "full")
      hs.refreshIndex("orig", "full")
      // A crashed refresh in the copy, cancelled there.
      val log = logOf("orig")
      val latest = log.latest.get
      val stuck = latest.copy(id = latest.id + 1, state = States.REFRESHING, operation = Operations.REFRESH,
        content = latest.content.copy(dataVersion = 7), owner = Owner("elsewhere", 1, 0))
      assert(log.tryAppend(stuck))
      new File(otherSystem, "orig/v__=7").mkdirs()
      new File(original, "v__=7").mkdirs() // a same-named directory in the original must survive
      hs.cancel("orig")
      assert(!new File(otherSystem, "orig/v__=7").exists(), "cancel cleans up in the copy")
      hs.vacuumIndex("orig")
      // Queries in the copy read the copy's data.
      hs.enable()
      try {
        val q = spark.read.parquet(src).where("id = 1010").select("id", "name")
        assert(q.collect().toSeq.map(_.getLong(0)) == Seq(1010L))
      } finally hs.disable()
      assert(log.latestStable.get.content.root.startsWith(new Path(new File(otherSystem,
              "orig").toURI).toString.stripSuffix("/")))
      hs.deleteIndex("orig")
      hs.vacuumIndex("orig")
    }
    assert(new File(original, "v__=7").delete())
    assert(snapshot(original) == before, "the original index directory is byte-for-byte untouched")
    assert(logOf("orig").latestStable.get.state == States.ACTIVE)
  }

  test("item 8: an index directory moved to another system path is queried from where it now is") {
    val src = writeSource("move-src", rows = 200, files = 2)
    create("moved", src)
    val otherSystem = newDir("moved-system")
    assert(indexDir("moved").renameTo(new File(otherSystem, "moved")))
    withSystemPath(otherSystem.getAbsolutePath) {
      // Planners cache the index list per system path until an operation commits there.
      create("bump", writeSource("bump-src", rows = 10, files = 1))
      hs.enable()
      try {
        val q = spark.read.parquet(src).where("id = 17").select("id", "name")
        assert(hs.explain(q).contains("moved"), "the moved index is used")
        assert(q.collect().map(_.getLong(0)).toSeq == Seq(17L))
      } finally hs.disable()
      hs.refreshIndex("moved", "full") // nothing changed: a no-op, but must not fail
      hs.optimizeIndex("moved", "full")
    }
  }

  // ---------------------------------------------------------------------------------------
  // Item 9: names are validated in every operation
  // ---------------------------------------------------------------------------------------

  test("item 9: every operation validates the name; '../x' never reaches another system path") {
    val outside = newDir("victim-system")
    withSystemPath(outside.getAbsolutePath) { create("x") }
    val victim = new File(outside, "x")
    val before = snapshot(victim)
    val relative = s"../${systemPath.toPath.getParent.relativize(outside.toPath)}/x"
    val ops: Seq[(String, String => Any)] = Seq(
      "delete" -> hs.deleteIndex, "restore" -> hs.restoreIndex, "vacuum" -> ((n: String) => hs.vacuumIndex(n)),
      "refresh" -> ((n: String) => hs.refreshIndex(n, "full")),
      "optimize" -> ((n: String) => hs.optimizeIndex(n, "full")),
      "cancel" -> ((n: String) => hs.cancel(n)), "index" -> ((n: String) => hs.index(n)))
    for ((op, run) <- ops; bad <- Seq(relative, "a/b", "..", "", " ", null, "é" * 128)) {
      val e = intercept[HyperspaceException](run(bad))
      assert(e.getMessage.startsWith("Invalid index name"), s"$op('$bad'): ${e.getMessage}")
    }
    assert(snapshot(victim) == before)
    withSystemPath(outside.getAbsolutePath) {
      assert(logOf("x").latestStable.get.state == States.ACTIVE)
    }
  }

  test("item 9: name length is checked in UTF-8 bytes") {
    val e = intercept[HyperspaceException](create("é" * 128)) // 128 characters, 256 bytes
    assert(e.getMessage.contains("256 bytes"), e.getMessage)
    create("é" * 127) // 254 bytes
    assert(rowOf("é" * 127).length == 1)
  }

  // ---------------------------------------------------------------------------------------
  // Item 10: a log entry never makes the library open a non-file source
  // ---------------------------------------------------------------------------------------

  test("item 10: refresh refuses a log entry naming a non-file format, before any connection") {
    create("hijacked")
    val log = logOf("hijacked")
    val latest = log.latest.get
    val edited = latest.copy(id = latest.id + 1,
      source = latest.source.copy(format = "jdbc",
        options = Map("url" -> CountingDriver.Url, "dbtable" -> "t", "driver" -> classOf[CountingDriver].getName)))
    assert(log.tryAppend(edited))
    log.setLatestStable(edited.id)
    CountingDriver.register()
    val e = intercept[HyperspaceException](hs.refreshIndex("hijacked", "full"))
    assert(e.getMessage.contains("jdbc") && e.getMessage.contains("hijacked") &&
        e.getMessage.contains("not a file format"), e.getMessage)
    assert(CountingDriver.connects.get() == 0, "no JDBC connection was attempted")
    // indexes() lists the source's pending changes by loading it: no connection either.
    hs.indexes.collect()
    assert(CountingDriver.connects.get() == 0)

    // Options that would redirect the read are refused too.
    val again = log.latest.get
    val redirected = again.copy(id = again.id + 1,
      source = latest.source.copy(
        options = Map("path" -> "/etc")))
    assert(log.tryAppend(redirected))
    log.setLatestStable(redirected.id)
    val e2 = intercept[HyperspaceException](hs.refreshIndex("hijacked", "full"))
    assert(e2.getMessage.contains("path"), e2.getMessage)
  }

  // ---------------------------------------------------------------------------------------
  // Item 11: names are case-insensitive, across threads and processes
  // ---------------------------------------------------------------------------------------

  test("item 11: threads creating 'X' and 'x' at once: exactly one wins") {
    implicit val ec: ExecutionContext =
      ExecutionContext.fromExecutor(java.util.concurrent.Executors.newFixedThreadPool(2))
    for (round <- 0 until 4) {
      val spellings = Seq(s"Race$round", s"race$round")
      val barrier = new CyclicBarrier(2)
      val results = spellings.map { n =>
        Future { barrier.await(30, TimeUnit.SECONDS); Try(create(n)) }
      }.map(Await.result(_, 120.seconds))
      assert(results.count(_.isSuccess) == 1, s"round $round: $results")
      results.filter(_.isFailure).foreach(f => assert(f.failed.get.isInstanceOf[HyperspaceException], f))
      assert(rowOf(s"race$round").length == 1)
      val dirs = systemPath.list().filter(_.equalsIgnoreCase(s"race$round"))
      assert(dirs.length == 1, s"one directory: ${dirs.toSeq}")
    }
  }

  test("item 11: two JVMs claiming differently-spelled names agree on one owner every round") {
    val dir = newDir("claims-race")
    val start = new File(dir, "start")
    val java = new File(System.getProperty("java.home"), "bin/java").getAbsolutePath
    val classpath = sys.env.getOrElse("HYPERSPACE_TEST_CLASSPATH", System.getProperty("java.class.path"))
    val rounds = 200
    val children = Seq("Upper", "lower").map { who =>
      new ProcessBuilder(java, "-cp", classpath, "io.hyperspace.testing.NameClaimRacer",
        dir.getAbsolutePath, rounds.toString, who, start.getAbsolutePath)
        .redirectErrorStream(true).redirectOutput(new File(dir, s"$who.out")).start()
    }
    Files.write(start.toPath, Array.emptyByteArray)
    children.foreach(c =>
      assert(c.waitFor(120, TimeUnit.SECONDS) && c.exitValue() == 0,
        FileUtils.readFileToString(new File(dir, "Upper.out"), UTF_8)))
    val seen = Seq("Upper", "lower").map(who =>
      Files.readAllLines(Paths.get(dir.getAbsolutePath, s"got-by-$who")).asScala.toSeq)
    assert(seen(0).size == rounds && seen(0) == seen(1), "both processes see the same owner in every round")
    val conf = new Configuration()
    (0 until rounds).foreach { r =>
      assert(NameClaims.read(new Path(dir.getAbsolutePath), s"NAME$r", conf).contains(seen(0)(r)))
    }
  }

  test("item 11: a crash between claim and create, and a vacuumed index, leave the name usable") {
    // The claim exists (a process died right after taking it) but no index was created.
    NameClaims.claim(new Path(systemPath.getAbsolutePath), "Orphan", spark.sessionState.newHadoopConf())
    create("orphan")
    assert(rowOf("orphan").map(_.getAs[String]("name")).toSeq == Seq("orphan"))
    hs.deleteIndex("orphan")
    hs.vacuumIndex("ORPHAN")
    assert(rowOf("orphan").isEmpty)
    create("ORPHAN")
    assert(rowOf("orphan").map(_.getAs[String]("name")).toSeq == Seq("ORPHAN"))
  }

  // ---------------------------------------------------------------------------------------
  // Item 13: damaged logs
  // ---------------------------------------------------------------------------------------

  test("item 13: stray names in _hyperspace_log neither hide the index nor make create spin") {
    create("stray")
    val logDir = new File(indexDir("stray"), "_hyperspace_log")
    val copy = Files.readAllBytes(new File(logDir, "1").toPath)
    Files.write(new File(logDir, "0099").toPath, copy)
    Files.write(new File(logDir, "\u0669\u0669").toPath, copy) // Arabic-Indic "99"
    new File(logDir, "7").mkdirs()
    assert(rowOf("stray").map(_.getAs[String]("state")).toSeq == Seq("ACTIVE"))
    implicit val ec: ExecutionContext = ExecutionContext.global
    val again = Future(Try(create("stray")))
    val result = Await.result(again, 90.seconds)
    assert(result.isFailure && result.failed.get.getMessage.contains("already exists"), result)
    // Operations go on: the next entry is written after the directory squatting id 7.
    hs.deleteIndex("stray")
    assert(logOf("stray").latestStable.get.state == States.DELETED)
    assert(logOf("stray").latestStable.get.id == 9)
    hs.restoreIndex("stray")
    assert(rowOf("stray").map(_.getAs[String]("state")).toSeq == Seq("ACTIVE"))
  }

  test("item 13: a damaged newest entry lists the index as CORRUPT; delete and vacuum still work") {
    create("damaged")
    val log = logOf("damaged")
    val latest = log.latest.get
    Files.write(new File(indexDir("damaged"), s"_hyperspace_log/${latest.id + 1}").toPath,
      "{ truncated".getBytes(UTF_8))
    val row = rowOf("damaged")
    assert(row.length == 1)
    assert(row.head.getAs[String]("state") == "CORRUPT")
    assert(row.head.getAs[String]("stateReason").contains(s"_hyperspace_log/${latest.id + 1}"),
      row.head.getAs[String]("stateReason"))
    assert(hs.index("damaged").collect().head.getAs[String]("state") == "CORRUPT")
    val e = intercept[HyperspaceException](hs.refreshIndex("damaged", "full"))
    assert(e.getMessage.contains("damaged") && e.getMessage.contains("CORRUPT"), e.getMessage)
    hs.deleteIndex("damaged")
    assert(logOf("damaged").latestStable.get.state == States.DELETED)
    hs.vacuumIndex("damaged")
    assert(rowOf("damaged").isEmpty)
  }

  test("issue 54 item 5: a CORRUPT index whose only stable entry is damaged is deleted, vacuumed and re-created") {
    val src = writeSource("only-stable", rows = 60, files = 2)
    create("onlyStable", src)
    val log = logOf("onlyStable")
    assert(log.entries.map(_.state) == Seq(States.CREATING, States.ACTIVE))
    Files.write(new File(indexDir("onlyStable"), s"_hyperspace_log/${log.latest.get.id}").toPath,
      "{ cut short".getBytes(UTF_8))
    assert(rowOf("onlyStable").head.getAs[String]("state") == "CORRUPT")
    hs.deleteIndex("onlyStable")
    assert(rowOf("onlyStable").head.getAs[String]("state") == "DELETED")
    // Nothing stable is known to restore: the error says so instead of reviving an empty index.
    val e = intercept[HyperspaceException](hs.restoreIndex("onlyStable"))
    assert(e.getMessage.contains("onlyStable") && e.getMessage.contains("CORRUPT"), e.getMessage)
    hs.vacuumIndex("onlyStable")
    assert(rowOf("onlyStable").isEmpty)
    assert(!indexDir("onlyStable").exists())
    create("onlyStable", src)
    assert(rowOf("onlyStable").head.getAs[String]("state") == "ACTIVE")
    hs.deleteIndex("onlyStable")
    hs.vacuumIndex("onlyStable")
  }

  test("issue 54 item 5: an index directory whose log was lost, its data left, frees its name in one call") {
    val src = writeSource("lost-log", rows = 60, files = 2)
    create("lostLog", src)
    FileUtils.deleteDirectory(new File(indexDir("lostLog"), IndexLogManager.LogDirName))
    assert(versionDirs("lostLog") == Seq("v__=0"))
    assert(rowOf("lostLog").isEmpty)
    // Either call frees the name: a create builds the next version beside the data left ...
    create("lostLog", src)
    assert(versionDirs("lostLog") == Seq("v__=0", "v__=1"))
    assert(rowOf("lostLog").head.getAs[String]("state") == "ACTIVE")
    assert(readIndexData("lostLog").count() == 60)
    // ... and vacuum removes data no log names (older than the retention, here 0), then the directory.
    FileUtils.deleteDirectory(new File(indexDir("lostLog"), IndexLogManager.LogDirName))
    val result = hs.vacuumIndex("lostLog")
    assert(result.message.contains("v__=0, v__=1") && result.message.contains("name is free"), result.message)
    assert(!indexDir("lostLog").exists())
    create("lostLog", src)
    assert(versionDirs("lostLog") == Seq("v__=0"))
    hs.deleteIndex("lostLog")
    hs.vacuumIndex("lostLog")
    assert(!indexDir("lostLog").exists())
  }

  test("item 13: a damaged old entry does not block refresh") {
    val src = writeSource("old-damage", rows = 100, files = 2)
    create("oldDamage", src)
    Files.write(new File(indexDir("oldDamage"), "_hyperspace_log/0").toPath, "garbage".getBytes(UTF_8))
    spark.range(500, 520).selectExpr("id", "CONCAT('name-', id % 17) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount", "DATE'2024-02-01' AS day").coalesce(1)
      .write.mode("append").parquet(src)
    hs.refreshIndex("oldDamage", "full")
    assert(logOf("oldDamage").latestStable.get.source.files.size == 3)
    assert(rowOf("oldDamage").head.getAs[String]("state") == "ACTIVE")
  }

  test("item 13: the lost-race retry loop has a deadline") {
    create("squatted")
    val log = logOf("squatted")
    // Every id an operation could take is held by something that is not an entry file.
    val logDir = new File(indexDir("squatted"), "_hyperspace_log")
    spark.conf.set("spark.hyperspace.concurrency.waitTimeout", "2s")
    try {
      // Simulate a log store that always loses the race: an Action whose appends always fail.
      val action = new DeleteAction(spark,
        new IndexLogManager(log.indexPath, spark.sessionState.newHadoopConf()) {
          override def tryAppend(e: LogEntry): Boolean = false
        }, "squatted")
      val e =
        Await.result(Future(intercept[HyperspaceConflictException](action.run()))(ExecutionContext.global), 60.seconds)
      assert(e.getMessage.contains("squatted"), e.getMessage)
    } finally spark.conf.unset("spark.hyperspace.concurrency.waitTimeout")
    assert(logDir.list().count(_.forall(_.isDigit)) == 2)
  }

  // ---------------------------------------------------------------------------------------
  // Item 14: cancel refuses while the owner lives
  // ---------------------------------------------------------------------------------------

  test("item 14: cancel refuses while the owning process is alive on this host, unless forced") {
    create("busy")
    val log = logOf("busy")
    val latest = log.latest.get
    val held = latest.copy(id = latest.id + 1, state = States.REFRESHING, operation = Operations.REFRESH,
      owner = Owner.current)
    assert(log.tryAppend(held))
    val e = intercept[HyperspaceConflictException](hs.cancel("busy"))
    assert(e.getMessage.contains("still running") && e.getMessage.contains(s"${Owner.current.pid}") &&
        e.getMessage.contains("force"), e.getMessage)
    assert(log.latest.get.state == States.REFRESHING)
    hs.cancel("busy", force = true)
    assert(log.latestStable.get.state == States.ACTIVE)

    // A process id reused by another process (different start time) does not count as the owner.
    val reused = log.latest.get
    val stale = reused.copy(id = reused.id + 1, state = States.DELETING, operation = Operations.DELETE,
      owner = Owner.current.copy(startedAt = Owner.current.startedAt - 3600000))
    assert(log.tryAppend(stale))
    hs.cancel("busy")
    assert(log.latestStable.get.state == States.ACTIVE)
  }

  // ---------------------------------------------------------------------------------------
  // Item 15: every failure is a HyperspaceException naming what failed
  // ---------------------------------------------------------------------------------------

  test("item 15: bad system paths fail with a HyperspaceException naming the path") {
    val file = new File(newDir("sysfile"), "not-a-dir")
    Files.write(file.toPath, "x".getBytes(UTF_8))
    withSystemPath(file.getAbsolutePath) {
      val e = intercept[HyperspaceException](create("one"))
      assert(e.getMessage.contains(file.getAbsolutePath), e.getMessage)
    }
    withSystemPath("/proc/hyperspace-readonly") {
      val e = intercept[HyperspaceException](create("two"))
      assert(e.getMessage.contains("/proc/hyperspace-readonly"), e.getMessage)
    }
    withSystemPath("nosuchscheme://host/indexes") {
      val e = intercept[HyperspaceException](create("three"))
      assert(e.getMessage.contains("nosuchscheme"), e.getMessage)
      intercept[HyperspaceException](hs.indexes.collect())
    }
  }

  test("item 15: a build that fails leaves only the rolled-back entry and no data") {
    val src = writeSource("broken", rows = 100, files = 2)
    Files.write(new File(src, "part-99999-broken.parquet").toPath, "not parquet at all".getBytes(UTF_8))
    val e = intercept[HyperspaceException](create("broken", src))
    assert(e.getMessage.contains("broken"), e.getMessage)
    assert(states("broken") == Seq(States.CREATING, States.DOESNOTEXIST))
    assert(versionDirs("broken").isEmpty, "no data is left behind")
    assert(rowOf("broken").isEmpty)
    // The name is free: fix the source and create again.
    new File(src, "part-99999-broken.parquet").delete()
    create("broken", src)
    assert(rowOf("broken").head.getAs[String]("state") == "ACTIVE")
  }
}

/** A JDBC driver that only counts connection attempts (item 10). */
class CountingDriver extends Driver {
  override def connect(url: String, info: Properties): Connection = {
    if (acceptsURL(url)) CountingDriver.connects.incrementAndGet()
    null
  }
  override def acceptsURL(url: String): Boolean = url != null && url.startsWith(CountingDriver.Url)
  override def getPropertyInfo(url: String, info: Properties): Array[DriverPropertyInfo] = Array.empty
  override def getMajorVersion: Int = 1
  override def getMinorVersion: Int = 0
  override def jdbcCompliant(): Boolean = false
  override def getParentLogger: Logger = Logger.getGlobal
}

object CountingDriver {
  val Url = "jdbc:hyperspace-counting:db"
  val connects = new AtomicInteger()
  private lazy val registered: Unit = DriverManager.registerDriver(new CountingDriver)
  def register(): Unit = registered
}
