package io.hyperspace.log

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.util.VersionInfo

import io.hyperspace.{HyperspaceConflictException, HyperspaceException}
import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport
import io.hyperspace.testing.{HeaderDroppingProxy, S3Server}

/**
 * The index log on `s3a://`, against a real S3 server on 127.0.0.1 (started here: testing/S3Server,
 * moto in `make test`, SeaweedFS in `make test-s3` and `make test-full`) through the line's
 * hadoop-aws: the put-if-absent (S3's conditional write), its probe and its refusals, and the index
 * lifecycle with both the sources and the system path on S3, queries compared with Hyperspace off.
 * The races (exactly one winner) run on SeaweedFS only: moto does not serialise conditional writes
 * ([[raceTest]]). On a line whose Hadoop has no conditional create (Spark 4.0: Hadoop 3.4.1) the
 * suite checks the refusal instead.
 */
class S3LogStoreSuite extends RuleTestSupport with PutIfAbsentRacing {

  private lazy val server = S3Server.start()
  private val lake = "s3a://lake"
  /** A bucket whose S3A client has conditional creates switched off (per-bucket setting). */
  private val offBucket = "nocond"
  /** A bucket reached through a relay that drops `If-None-Match`: a store ignoring conditional writes. */
  private val ignoringBucket = "ignoring"
  private lazy val proxy = new HeaderDroppingProxy(server.port)

  /** Whether this line's Hadoop (3.4.2+, Spark 4.1+) has S3A's conditional create. */
  private val conditional: Boolean = {
    val parts = VersionInfo.getVersion.split("[.-]").take(3).map(_.toInt)
    (parts(0), parts(1), parts(2)) match { case (a, b, c) => a > 3 || (a == 3 && (b > 4 || (b == 4 && c >= 2))) }
  }

  override protected def sessionConfig: Map[String, String] =
    (server.hadoopSettings + (s"fs.s3a.bucket.$offBucket.create.conditional.enabled" -> "false") +
      (s"fs.s3a.bucket.$ignoringBucket.endpoint" -> s"http://127.0.0.1:${proxy.port}"))
      .map { case (k, v) => s"spark.hadoop.$k" -> v }

  override protected def beforeAll(): Unit = {
    server.createBucket("lake")
    server.createBucket(offBucket)
    server.createBucket(ignoringBucket)
    super.beforeAll()
    spark.conf.set("spark.hyperspace.system.path", s"$lake/indexes")
  }

  override protected def afterAll(): Unit =
    try super.afterAll()
    finally { proxy.close(); server.close() }

  /**
   * A test whose claim is that racing writers get exactly one winner: on a server that does not
   * serialise conditional writes (moto) two racers can both win whatever Hyperspace does, so there it
   * is cancelled with the reason, not run (SeaweedFS runs it: make test-s3, make test-full).
   */
  private def raceTest(name: String)(body: => Unit): Unit = test(name) {
    assume(S3Server.serializesConditionalWrites(S3Server.kind), S3Server.RacesNeed)
    body
  }

  private def hadoopConf: Configuration = spark.sessionState.newHadoopConf()
  private def fs(path: String): FileSystem = new Path(path).getFileSystem(hadoopConf)
  private def text(path: String): Option[String] = LogStore.readText(fs(path), new Path(path))

  test("hadoop-aws on the test class path is the line's Hadoop, and S3A has the conditional create from 3.4.2") {
    val props = new java.util.Properties()
    val in = classOf[S3LogStore].getClassLoader.getResourceAsStream(
      "META-INF/maven/org.apache.hadoop/hadoop-aws/pom.properties")
    assert(in != null, "hadoop-aws is not on the test class path")
    try props.load(in)
    finally in.close()
    assert(props.getProperty("version") == VersionInfo.getVersion)
    assert(fs(lake).getClass.getName == "org.apache.hadoop.fs.s3a.S3AFileSystem")
    assert(fs(lake).hasPathCapability(new Path(lake), S3LogStore.ConditionalCreate) == conditional)
  }

  if (conditional) {
    test("put-if-absent on S3: written once, never overwritten; replace swaps the object") {
      val store = LogStore.forPath(new Path(s"$lake/store"), hadoopConf)
      assert(store.isInstanceOf[S3LogStore])
      val path = new Path(s"$lake/store/single/0")
      assert(store.read(path).isEmpty)
      assert(store.putIfAbsent(path, "first"))
      assert(!store.putIfAbsent(path, "second"))
      assert(store.read(path).contains("first"))
      val pointer = new Path(s"$lake/store/single/latestStable")
      store.replace(pointer, "1")
      store.replace(pointer, "22")
      assert(store.read(pointer).contains("22"))
    }

    test("a 412 is read back: a retried write meeting its own object won, another writer's lost") {
      val f = fs(lake)
      val path = new Path(s"$lake/store/readback/0")
      // The same writer token twice: what a retry after a lost reply sends.
      assert(S3LogStore.conditionalPut(f, path, "mine".getBytes(UTF_8), "token-a"))
      assert(S3LogStore.conditionalPut(f, path, "mine".getBytes(UTF_8), "token-a"),
        "a retried attempt that finds its own write must not read as a lost race")
      assert(!S3LogStore.conditionalPut(f, path, "mine".getBytes(UTF_8), "token-b"),
        "the same bytes from another writer lose")
      assert(text(path.toString).contains("mine"))
    }

    raceTest("8 threads racing for one entry, 6 rounds: exactly one wins each, its object stays") {
      val store = LogStore.forPath(new Path(s"$lake/store"), hadoopConf)
      raceThreads(store, threads = 8, rounds = 6, 60.seconds)(round => new Path(s"$lake/store/threads/$round/0"))
    }

    raceTest("2 JVM processes racing for the same entries on S3: exactly one wins each of 30 rounds") {
      val local = Files.createTempDirectory("s3-racers").toFile
      try {
        // The racers read their S3A settings from a core-site.xml first on their class path.
        val confDir = new File(local, "conf")
        confDir.mkdirs()
        val conf = new Configuration(false)
        server.hadoopSettings.foreach { case (k, v) => conf.set(k, v) }
        val out = new java.io.FileOutputStream(new File(confDir, "core-site.xml"))
        try conf.writeXml(out)
        finally out.close()
        val dir = s"$lake/racers"
        val startFile = new File(local, "go")
        val classpath = confDir.getPath + File.pathSeparator +
          sys.env.getOrElse("HYPERSPACE_TEST_CLASSPATH", System.getProperty("java.class.path"))
        val javaBin = new File(System.getProperty("java.home"), "bin/java").getAbsolutePath
        val names = Seq("p1", "p2")
        val processes = names.map { name =>
          new ProcessBuilder(javaBin, "-XX:TieredStopAtLevel=1", "-cp", classpath,
            "io.hyperspace.testing.LogStoreRacer",
            dir, "30", name, startFile.getAbsolutePath, local.getAbsolutePath)
            .redirectErrorStream(true).redirectOutput(new File(local, s"$name.out")).start()
        }
        try {
          Thread.sleep(1500)
          startFile.createNewFile()
          processes.foreach(p => assert(p.waitFor(120, TimeUnit.SECONDS), "a racer did not finish"))
          processes.zip(names).foreach { case (p, n) =>
            assert(p.exitValue() == 0, FileUtils.readFileToString(new File(local, s"$n.out"), UTF_8))
          }
        } finally processes.foreach(_.destroyForcibly())
        val wins = names.map { n =>
          n -> Files.readAllLines(new File(local, s"won-by-$n").toPath).asScala.filter(_.nonEmpty).map(_.toInt).toSet
        }.toMap
        for (round <- 0 until 30) {
          val winners = names.filter(n => wins(n).contains(round))
          assert(winners.size == 1, s"round $round: winners $winners")
          assert(text(s"$dir/round-$round/0").contains(s"${winners.head} round $round"))
        }
      } finally FileUtils.deleteQuietly(local)
    }

    test("the probe writes under _hyperspace_probe/ once per system path and leaves no object there") {
      val root = s"$lake/probed"
      val store = LogStore.forPath(new Path(root), hadoopConf)
      assert(store.putIfAbsent(new Path(s"$root/_hyperspace_names/x"), "x"))
      assert(store.putIfAbsent(new Path(s"$root/_hyperspace_names/y"), "y"))
      val probeDir = new Path(s"$root/${S3LogStore.ProbeDirName}")
      val left = if (fs(root).exists(probeDir)) fs(root).listStatus(probeDir).toSeq.filter(_.isFile) else Nil
      assert(left.isEmpty, s"probe objects left: ${left.map(_.getPath)}")
    }

    test("create, query, append + refresh, query again, delete and vacuum: sources and indexes on S3") {
      val source = s"$lake/sources/orders"
      def write(from: Int, to: Int, mode: String): Unit =
        spark.range(from, to, 1, 2).selectExpr("id", "CAST(id % 37 AS INT) AS customer", "id * 1.5 AS amount")
          .write.mode(mode).parquet(source)
      write(0, 400, "overwrite")
      hs.createIndex(spark.read.parquet(source),
        IndexConfig("orders_by_customer", Seq("customer"), Seq("id", "amount")))
      val log = new IndexLogManager(new Path(s"$lake/indexes/orders_by_customer"), hadoopConf)
      assert(log.entries.map(_.state) == Seq(States.CREATING, States.ACTIVE))
      assert(text(s"$lake/indexes/_hyperspace_names/orders_by_customer").contains("orders_by_customer"))

      def check(expectedRows: Long): Unit = {
        val byCustomer = spark.read.parquet(source).where("customer = 7").select("id", "amount")
        val off = withHyperspace(on = false)(byCustomer.collect().toSet)
        val (on, plan) = withHyperspace(on = true) {
          val df = spark.read.parquet(source).where("customer = 7").select("id", "amount")
          (df.collect().toSet, executed(df))
        }
        assert(on == off && on.nonEmpty)
        assert(indexesUsed(plan) == Seq("orders_by_customer"), plan.toString)
        val range = spark.read.parquet(source).where("id BETWEEN 10 AND 20")
        assert(withHyperspace(on = true)(range.collect().toSet) == withHyperspace(on = false)(range.collect().toSet))
        assert(withHyperspace(on = true)(spark.read.parquet(source).count()) == expectedRows)
      }
      check(400)
      write(400, 500, "append")
      hs.refreshIndex("orders_by_customer", "incremental")
      assert(log.latestStable.exists(e => e.state == States.ACTIVE && e.source.files.size == 4))
      check(500)

      hs.deleteIndex("orders_by_customer")
      vacuumNow("orders_by_customer")
      assert(!fs(lake).exists(new Path(s"$lake/indexes/orders_by_customer/_hyperspace_log")))
      assert(hs.indexes.where("name = 'orders_by_customer'").count() == 0)
    }

    raceTest("4 threads creating the same index on S3: exactly one creates it, the others are refused") {
      val source = s"$lake/sources/race"
      spark.range(0, 100, 1, 2).selectExpr("id", "CAST(id % 7 AS INT) AS k").write.mode("overwrite").parquet(source)
      val pool = Executors.newFixedThreadPool(4)
      implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
      try {
        val start = new CountDownLatch(1)
        val racers = (0 until 4).map { _ =>
          Future {
            start.await()
            try { hs.createIndex(spark.read.parquet(source), IndexConfig("raced", Seq("k"), Seq("id"))); None }
            catch { case e: HyperspaceException => Some(e) }
          }
        }
        start.countDown()
        val results = Await.result(Future.sequence(racers), 300.seconds)
        assert(results.count(_.isEmpty) == 1, results.flatten.map(_.getMessage).mkString("\n"))
        results.flatten.foreach(e =>
          assert(e.isInstanceOf[HyperspaceConflictException] ||
              e.getMessage.contains("already exists"), e.getMessage))
      } finally {
        pool.shutdown()
        pool.awaitTermination(10, TimeUnit.SECONDS)
      }
      val log = new IndexLogManager(new Path(s"$lake/indexes/raced"), hadoopConf)
      assert(log.entries.map(_.state) == Seq(States.CREATING, States.ACTIVE))
    }

    test(
      "conditional creates switched off for a bucket: writes of the log are refused naming the switch, reads are not") {
      val root = s"s3a://$offBucket/indexes"
      val e = intercept[HyperspaceException] {
        LogStore.forPath(new Path(root), hadoopConf).putIfAbsent(new Path(s"$root/_hyperspace_names/x"), "x")
      }
      assert(e.getMessage.contains(S3LogStore.ConditionalCreateSwitch), e.getMessage)
      assert(!fs(root).exists(new Path(s"$root/_hyperspace_names/x")))
      assert(LogStore.forPath(new Path(root), hadoopConf).read(new Path(s"$root/_hyperspace_names/x")).isEmpty)
      val viaApi = intercept[HyperspaceException] {
        spark.conf.set("spark.hyperspace.system.path", root)
        try hs.createIndex(spark.read.parquet(s"$lake/sources/orders"), IndexConfig("refused", Seq("customer")))
        finally spark.conf.set("spark.hyperspace.system.path", s"$lake/indexes")
      }
      assert(viaApi.getMessage.contains(S3LogStore.ConditionalCreateSwitch), viaApi.getMessage)
    }

    test("a store that ignores If-None-Match is refused by the probe; nothing but the probe is written") {
      val root = s"s3a://$ignoringBucket/indexes"
      // The relay really makes the store overwrite on a conditional write (what the probe must catch).
      val f = fs(root)
      val raw = new Path(s"s3a://$ignoringBucket/raw/0")
      assert(S3LogStore.conditionalPut(f, raw, "first".getBytes(UTF_8)))
      assert(S3LogStore.conditionalPut(f, raw, "second".getBytes(UTF_8)))
      assert(text(raw.toString).contains("second"))
      val e = intercept[HyperspaceException] {
        LogStore.forPath(new Path(root), hadoopConf).putIfAbsent(new Path(s"$root/_hyperspace_names/x"), "x")
      }
      assert(e.getMessage.contains("does not honour conditional writes") &&
          e.getMessage.contains("replaced the first"), e.getMessage)
      assert(!f.exists(new Path(s"$root/_hyperspace_names/x")))
      val probeDir = new Path(s"$root/${S3LogStore.ProbeDirName}")
      assert(!f.exists(probeDir) || f.listStatus(probeDir).forall(!_.isFile))
    }
  } else {
    test(s"Hadoop ${VersionInfo.getVersion} has no conditional create: a create on S3 is refused naming Spark 4.1+") {
      val source = s"$lake/sources/old"
      spark.range(0, 10).selectExpr("id").write.mode("overwrite").parquet(source)
      val e = intercept[HyperspaceException] {
        hs.createIndex(spark.read.parquet(source), IndexConfig("refused", Seq("id")))
      }
      assert(e.getMessage.contains("Run Spark 4.1 or later"), e.getMessage)
      assert(!fs(lake).exists(new Path(s"$lake/indexes/refused/_hyperspace_log")))
      assert(hs.indexes.count() == 0)
    }
  }
}
