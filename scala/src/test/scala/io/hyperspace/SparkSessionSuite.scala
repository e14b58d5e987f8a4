package io.hyperspace

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.spark.sql.SparkSession
import org.scalatest.{Args, BeforeAndAfterAll, Status}
import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.testing.SuiteTimes

/**
 * One local SparkSession per suite, built the way a user builds one (the extension named in
 * `spark.sql.extensions`), with a private warehouse and temp directory removed afterwards.
 */
trait SparkSessionSuite extends AnyFunSuite with BeforeAndAfterAll {

  /** Whether the suite's session is built with the Hyperspace extension. */
  protected def withExtension: Boolean = true

  /** Whether the session also has Delta Lake's extension and catalog (Delta tables by name). */
  protected def withDelta: Boolean = false

  /**
   * Whether the session also has Iceberg's extension and a Hadoop catalog `ice` whose warehouse is
   * under the suite's temp directory (only on Spark lines with an Iceberg runtime; build.sbt).
   */
  protected def withIceberg: Boolean = false

  /** Further settings of the suite's session (e.g. a small memory to test what does not fit). */
  protected def sessionConfig: Map[String, String] = Map.empty

  protected lazy val tempDir: File = Files.createTempDirectory("hyperspace-test").toFile

  @transient protected lazy val spark: SparkSession = {
    val builder = SparkSession.builder()
      .master("local[2]")
      .appName(getClass.getSimpleName)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.sql.warehouse.dir", new File(tempDir, "warehouse").getAbsolutePath)
      .config("spark.driver.host", "127.0.0.1")
    val extensions = (if (withDelta) Seq("io.delta.sql.DeltaSparkSessionExtension") else Nil) ++
      (if (withIceberg) Seq("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions") else Nil) ++
      (if (withExtension) Seq(HyperspaceSparkSessionExtension.className) else Nil)
    if (extensions.nonEmpty) builder.config("spark.sql.extensions", extensions.mkString(","))
    sessionConfig.foreach { case (k, v) => builder.config(k, v) }
    if (withDelta) {
      builder.config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        // Delta rebuilds a snapshot's state in 50 tasks by default, sized for big logs: on the few
        // commits of a test table that is most of every read's and command's time.
        .config("spark.databricks.delta.snapshotPartitions", "2")
    }
    if (withIceberg) {
      builder.config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.ice.type", "hadoop")
        .config("spark.sql.catalog.ice.warehouse", new File(tempDir, "iceberg").getAbsolutePath)
        // Iceberg reads tables by path through this catalog (a Hive catalog unless configured).
        .config("spark.sql.catalog.default_iceberg", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.default_iceberg.type", "hadoop")
        .config("spark.sql.catalog.default_iceberg.warehouse", new File(tempDir, "iceberg-paths").getAbsolutePath)
    }
    builder.getOrCreate()
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark // start it before the first test
  }

  /** The whole suite, its `beforeAll` and `afterAll` included, timed (testing/SuiteTimes). */
  override def run(testName: Option[String], args: Args): Status = {
    val clock = SuiteTimes.start()
    val status = super.run(testName, args)
    status.whenCompleted(outcome => clock.stop(getClass.getName, outcome.getOrElse(false)))
    status
  }

  override protected def afterAll(): Unit = {
    try {
      spark.stop()
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
      FileUtils.deleteQuietly(tempDir)
    } finally super.afterAll()
  }

  /**
   * The Spark jobs started while `body` ran. Events still queued from before are delivered first
   * and those of `body` after it, so neither is missed nor miscounted.
   */
  protected def jobsDuring(body: => Any): Int = {
    val jobs = new java.util.concurrent.atomic.AtomicInteger
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onJobStart(e: org.apache.spark.scheduler.SparkListenerJobStart): Unit = jobs.incrementAndGet()
    }
    org.apache.spark.sql.hyperspace.SparkInternals.waitForListenerEvents(spark)
    spark.sparkContext.addSparkListener(listener)
    try {
      body
      org.apache.spark.sql.hyperspace.SparkInternals.waitForListenerEvents(spark)
      jobs.get
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  /**
   * The broadcasts made while `body` ran (ids are given in sequence: one made before and one
   * after bound them). A job broadcasts its tasks' code, so this also counts jobs' stages.
   */
  protected def broadcastsDuring(body: => Any): Long = {
    val before = spark.sparkContext.broadcast(0).id
    body
    spark.sparkContext.broadcast(0).id - before - 1
  }

  /** Runs `body` with the session settings `pairs`, then puts back what each key had before. */
  protected def withConf[T](pairs: (String, String)*)(body: => T): T = {
    val before = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body
    finally before.foreach {
        case (k, Some(v)) => spark.conf.set(k, v)
        case (k, None) => spark.conf.unset(k)
      }
  }

  /** A fresh directory under the suite's temp directory. */
  protected def newDir(name: String): File = {
    val dir = new File(tempDir, s"$name-${System.nanoTime()}")
    dir.mkdirs()
    dir
  }
}
