package io.hyperspace.actions

import java.io.File
import java.lang.management.ManagementFactory
import java.util.concurrent.TimeUnit

import scala.jdk.CollectionConverters._

import org.apache.commons.io.FileUtils

import io.hyperspace.{HyperspaceConflictException, HyperspaceSuite}
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.States

class CrashSafetySuite extends HyperspaceSuite {

  private def startSlowCreate(source: String, name: String, out: File): Process =
    startChild("io.hyperspace.testing.SlowCreateMain", Seq(systemPath.getAbsolutePath, source, name), out)

  /** Waits until `child` is writing data files under `temporary`, then kills it with SIGKILL. */
  private def killDuringWrite(child: Process, temporary: File, out: File): Unit = {
    try {
      val deadline = System.currentTimeMillis() + 120000
      def writing: Boolean = temporary.exists() &&
        FileUtils.listFiles(temporary, Array("parquet"), true).size() >= 3
      while (!writing && child.isAlive && System.currentTimeMillis() < deadline) Thread.sleep(20)
      assert(child.isAlive && writing,
        s"the child never reached its data write:\n${FileUtils.readFileToString(out, "UTF-8").takeRight(4000)}")
      child.destroyForcibly() // SIGKILL: no shutdown hooks, no cleanup
      assert(child.waitFor(30, TimeUnit.SECONDS))
    } finally child.destroyForcibly()
  }

  private def startChild(mainClass: String, args: Seq[String], out: File): Process = {
    val java = new File(System.getProperty("java.home"), "bin/java").getAbsolutePath
    val classpath = sys.env.getOrElse("HYPERSPACE_TEST_CLASSPATH", System.getProperty("java.class.path"))
    // The module options Spark needs on Java 17, as this JVM got them.
    val jvmOptions = ManagementFactory.getRuntimeMXBean.getInputArguments.asScala
      .filter(a =>
        a.startsWith("--add-") || a.startsWith("-XX:+IgnoreUnrecognized") ||
          a.startsWith("-Djdk.reflect") || a.startsWith("-Dio.netty"))
    val command = Seq(java, "-Xmx1g") ++ jvmOptions ++ Seq("-cp", classpath, mainClass) ++ args
    new ProcessBuilder(command: _*).redirectErrorStream(true).redirectOutput(out).start()
  }

  test("kill -9 during a create's data write: no index for readers; cancel, create and vacuum recover") {
    val name = "crashy"
    val source = writeSource("crash-source", rows = 20000, files = 4)
    val out = new File(tempDir, "slow-create.out")
    killDuringWrite(startSlowCreate(source, name, out), new File(indexDir(name), "v__=0/_temporary"), out)

    // Readers see no index: nothing stable, and the list shows the stuck state.
    assert(logOf(name).latestStable.isEmpty)
    assert(states(name) == Seq(States.CREATING))
    assert(hs.indexes.where(s"name = '$name'").select("state").collect().map(_.getString(0)).toSeq == Seq("CREATING"))

    // The next operation says what happened and what to do.
    val again = intercept[HyperspaceConflictException](
      hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id"), Seq("name"))))
    assert(again.getMessage.contains("no longer running") && again.getMessage.contains(s"cancel('$name')"),
      again.getMessage)

    hs.cancel(name)
    assert(states(name) == Seq(States.CREATING, States.DOESNOTEXIST))
    assert(!new File(indexDir(name), "v__=0").exists(), "cancel removes what the killed create wrote")
    assert(hs.indexes.where(s"name = '$name'").count() == 0)

    hs.createIndex(spark.read.parquet(source), IndexConfig(name, Seq("id"), Seq("name")))
    assert(logOf(name).latestStable.get.state == States.ACTIVE)
    assert(readIndexData(name).count() == 20000)

    // Whatever else a crash leaves (here, a stray data directory) is reclaimed by vacuum.
    new File(indexDir(name), "v__=0/_temporary/0").mkdirs()
    hs.vacuumIndex(name)
    assert(versionDirs(name) == Seq("v__=1"))
    assert(readIndexData(name).count() == 20000)
  }

  test("kill -9 during a refresh's data write: the previous version stays readable and queryable") {
    val name = "crashy-refresh"
    val source = writeSource("crash-refresh-source", rows = 20000, files = 4)
    hs.createIndex(spark.read.parquet(source),
      IndexConfig(name, Seq("id"), Seq("name"), numBuckets = Some(300), lineage = Some(true)))
    spark.range(50000, 50100).selectExpr("id", "CONCAT('name-', id % 17) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount", "DATE'2024-03-01' AS day")
      .coalesce(1).write.mode("append").parquet(source)
    val out = new File(tempDir, "slow-refresh.out")
    killDuringWrite(
      startChild("io.hyperspace.testing.SlowRefreshMain", Seq(systemPath.getAbsolutePath, name), out),
      new File(indexDir(name), "v__=1/_temporary"), out)

    assert(states(name) == Seq(States.CREATING, States.ACTIVE, States.REFRESHING))
    val stable = logOf(name).latestStable.get
    assert(stable.state == States.ACTIVE && stable.content.dataVersion == 0)
    assert(readIndexData(name).count() == 20000, "the previous version is intact")
    // Queries keep using the previous version (with hybrid scan making up for the append).
    spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
    try {
      def query = spark.read.parquet(source).where("id IN (5, 50050)").select("id", "name")
      spark.conf.set("spark.hyperspace.apply.enabled", "true")
      val df = query
      assert(df.collect().map(_.getLong(0)).sorted.toSeq == Seq(5L, 50050L))
      assert(df.queryExecution.optimizedPlan.toString.contains(s"Name: $name"), df.queryExecution.optimizedPlan)
    } finally {
      spark.conf.set("spark.hyperspace.apply.enabled", "false")
      spark.conf.unset("spark.hyperspace.index.hybridscan.enabled")
    }

    hs.cancel(name)
    assert(!new File(indexDir(name), "v__=1").exists(), "cancel removes what the killed refresh wrote")
    assert(hs.refreshIndex(name, "incremental").changed)
    assert(readIndexData(name).count() == 20100)
  }
}
