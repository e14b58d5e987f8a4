package io.hyperspace.log

import java.io.File
import java.nio.file.Files
import java.util.concurrent.TimeUnit

import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

class LogStoreSuite extends AnyFunSuite with BeforeAndAfterAll with PutIfAbsentRacing {

  private val dir = Files.createTempDirectory("logstore").toFile
  override def afterAll(): Unit = FileUtils.deleteQuietly(dir)

  private def stores: Seq[(String, LogStore)] = Seq(
    "local (hard link)" -> new LocalLogStore,
    "hadoop (rename without overwrite)" -> new HadoopLogStore(rawLocal))

  /** Hadoop's local filesystem without client-side checksums (HDFS keeps none on the client). */
  private def rawLocal: Configuration = {
    val conf = new Configuration()
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    conf.set("fs.AbstractFileSystem.file.impl", "org.apache.hadoop.fs.local.RawLocalFs")
    conf.setBoolean("fs.file.impl.disable.cache", true)
    conf
  }

  for ((kind, store) <- stores) {
    test(s"$kind: put-if-absent writes once and never overwrites") {
      val path = new Path(new File(dir, s"single-${kind.hashCode}/0").getAbsolutePath)
      assert(store.read(path).isEmpty)
      assert(store.putIfAbsent(path, "first"))
      assert(!store.putIfAbsent(path, "second"))
      assert(store.read(path).contains("first"))
      // (Hadoop's local filesystem adds a .crc checksum beside each file.)
      assert(new File(path.toUri.getPath).getParentFile.list().toSeq.filterNot(_.endsWith(".crc")) == Seq("0"),
        "no temporary file may stay")
    }

    test(s"$kind: replace swaps the content atomically") {
      val path = new Path(new File(dir, s"replace-${kind.hashCode}/latestStable").toURI)
      store.replace(path, "1")
      store.replace(path, "22")
      assert(store.read(path).contains("22"))
    }

  }

  // The Hadoop store's atomicity is the filesystem's (HDFS's NameNode rename); Hadoop's local
  // filesystems only check-then-rename, so the race is run against the store used for local disk.
  {
    val (kind, store) = stores.head
    test(s"$kind: 16 threads racing for the same entry: exactly one wins, 100 rounds") {
      raceThreads(store, threads = 16, rounds = 100, 30.seconds) { round =>
        new Path(new File(dir, s"threads-${kind.hashCode}/$round/0").toURI)
      }
    }
  }

  test("schemes without an atomic put-if-absent are refused, naming the scheme and what to use") {
    def refusal(path: String) = intercept[io.hyperspace.HyperspaceException] {
      LogStore.forPath(new Path(path), new Configuration())
    }.getMessage
    // s3:// and s3n:// are not S3A (EMRFS, Databricks' own, or nothing): the log goes through S3A.
    val s3 = refusal("s3://bucket/indexes")
    assert(s3.contains("cannot keep an index log on 's3' paths") && s3.contains("s3a://bucket/indexes"), s3)
    val gs = refusal("gs://bucket/indexes")
    assert(gs.contains("cannot keep an index log on 'gs' paths") && gs.contains("not supported yet"), gs)
    val wasb = refusal("wasb://c@account.blob.core.windows.net/indexes")
    assert(wasb.contains("cannot keep an index log on 'wasb' paths") && wasb.contains("s3a (Spark 4.1+)"), wasb)
    // s3a:// is a store of its own (S3LogStoreSuite runs it against an S3 server).
    assert(LogStore.forPath(new Path("s3a://bucket/indexes"), new Configuration()).isInstanceOf[S3LogStore])
  }

  test("3 JVM processes racing for the same entries: exactly one wins each of 100 rounds") {
    val raceDir = new File(dir, "processes")
    raceDir.mkdirs()
    val startFile = new File(raceDir, "go")
    val classpath = sys.env.getOrElse("HYPERSPACE_TEST_CLASSPATH", System.getProperty("java.class.path"))
    val java = new File(System.getProperty("java.home"), "bin/java").getAbsolutePath
    val names = Seq("p1", "p2", "p3")
    val processes = names.map { name =>
      new ProcessBuilder(java, "-cp", classpath, "io.hyperspace.testing.LogStoreRacer",
        raceDir.getAbsolutePath, "100", name, startFile.getAbsolutePath)
        .redirectErrorStream(true)
        .redirectOutput(new File(raceDir, s"$name.out"))
        .start()
    }
    try {
      Thread.sleep(1500) // let every JVM reach the start line
      startFile.createNewFile()
      processes.foreach(p => assert(p.waitFor(120, TimeUnit.SECONDS), "a racer did not finish"))
      processes.zip(names).foreach { case (p, n) =>
        assert(p.exitValue() == 0, FileUtils.readFileToString(new File(raceDir, s"$n.out"), "UTF-8"))
      }
    } finally processes.foreach(_.destroyForcibly())

    val wins = names.map { n =>
      n -> Files.readAllLines(new File(raceDir, s"won-by-$n").toPath).asScala.filter(_.nonEmpty).map(_.toInt).toSet
    }.toMap
    for (round <- 0 until 100) {
      val winners = names.filter(n => wins(n).contains(round))
      assert(winners.size == 1, s"round $round: winners $winners")
      val content = new String(Files.readAllBytes(new File(raceDir, s"round-$round/0").toPath))
      assert(content == s"${winners.head} round $round")
    }
  }
}
