package io.hyperspace.indexed

import java.util.concurrent.atomic.AtomicInteger

import org.apache.spark.scheduler.{SparkListener, SparkListenerJobStart, SparkListenerTaskStart}
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.storage.StorageLevel

import io.hyperspace._

/**
 * The eager lookup (`lookup(keys)`) and the collected `getRows` / `key = v` query: the same rows
 * as a filter on the source DataFrame, for present, absent and null keys, every key type, many
 * versions and divergent appends, with partitions read in place (the driver's block manager in
 * local mode) and by a job on just the keys' partitions.
 */
class IndexedLookupSuite extends SparkSessionSuite {

  private val ReadInPlace = "spark.hyperspace.indexed.lookup.readInPlace"

  private def withReadInPlace[T](enabled: Boolean)(body: => T): T = {
    val previous = spark.conf.getOption(ReadInPlace)
    spark.conf.set(ReadInPlace, enabled.toString)
    try body
    finally previous.fold(spark.conf.unset(ReadInPlace))(spark.conf.set(ReadInPlace, _))
  }

  private def source(n: Int = 3000): DataFrame = spark.range(n).selectExpr(
    "CASE WHEN id % 97 = 0 THEN NULL ELSE id % 500 END AS k",
    "concat('s', id) AS s",
    "CASE WHEN id % 5 = 0 THEN NULL ELSE CAST(id AS INT) END AS i")

  private def canonical(r: Row): String = r.toSeq.map {
    case b: Array[Byte] => b.mkString("[", ",", "]")
    case null => "null"
    case v => v.toString
  }.mkString("|")

  private def sorted(rows: Seq[Row]): Seq[String] = rows.map(canonical).sorted

  private def assertSame(actual: Seq[Row], expected: DataFrame, clue: String): Unit = {
    val (a, e) = (sorted(actual), sorted(expected.collect().toSeq))
    assert(a == e, s"$clue: ${a.size} rows vs ${e.size}; missing ${e.diff(a).take(3)}, extra ${a.diff(e).take(3)}")
  }

  /** Jobs and tasks started while `body` runs. */
  private def counting[T](body: => T): (T, Int, Int) = {
    val jobs = new AtomicInteger()
    val tasks = new AtomicInteger()
    val listener = new SparkListener {
      override def onJobStart(e: SparkListenerJobStart): Unit = jobs.incrementAndGet()
      override def onTaskStart(e: SparkListenerTaskStart): Unit = tasks.incrementAndGet()
    }
    SparkInternals.waitForListenerEvents(spark)
    spark.sparkContext.addSparkListener(listener)
    try {
      val out = body
      SparkInternals.waitForListenerEvents(spark)
      (out, jobs.get(), tasks.get())
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  private lazy val plain = source().cache()
  private lazy val idf = source().createIndex("k", 8).cache()

  for (inPlace <- Seq(true, false)) {
    test(s"lookup and collected getRows: present, absent, null and repeated keys (in place $inPlace)") {
      withReadInPlace(inPlace) {
        Seq(1L, 499L, 0L, 12345L, -3L).foreach { k =>
          assertSame(idf.lookup(Seq(k)), plain.filter(col("k") === k), s"lookup $k")
          assertSame(idf.getRows(k).collect().toSeq, plain.filter(col("k") === k), s"getRows $k")
        }
        assert(idf.lookup(Seq(null)).isEmpty && idf.getRows(null).collect().isEmpty)
        assert(idf.lookup(Nil).isEmpty)
        val keys = Seq[Any](3L, 4L, 4L, null, 777L, 5, 4.toShort)
        assertSame(idf.lookup(keys), plain.filter(col("k").isin(3L, 4L, 777L, 5L)), "IN list")
        // show() takes rows through executeTake.
        assert(idf.getRows(3L).take(2).length == 2)
        assertSame(idf.toDF.filter(col("k").isin(3L, 4L, 4L)).collect().toSeq,
          plain.filter(col("k").isin(3L, 4L)), "collected IN")
      }
    }
  }

  test("a lookup touches only its keys' partitions: none by job when read in place, one job else") {
    val keys = Seq(1L, 2L, 3L)
    val partitions = idf.data.keysByPartition(keys).size
    assert(partitions >= 2 && partitions < idf.numPartitions)
    val (inPlace, jobsInPlace, _) = counting(withReadInPlace(true)(idf.lookup(keys)))
    assert(jobsInPlace == 0)
    val (byJob, jobs, tasks) = counting(withReadInPlace(false)(idf.lookup(keys)))
    assert(jobs == 1 && tasks == partitions, s"$jobs jobs, $tasks tasks")
    assert(sorted(inPlace) == sorted(byJob))
    val (_, queryJobs, queryTasks) = counting(withReadInPlace(false)(idf.getRows(1L).collect()))
    assert(queryJobs == 1 && queryTasks == 1, s"$queryJobs jobs, $queryTasks tasks")
    val (_, queryJobsInPlace, _) = counting(withReadInPlace(true)(idf.getRows(1L).collect()))
    assert(queryJobsInPlace == 0)
  }

  test("a value compared by casting the key column still returns the filter's rows") {
    Seq(true, false).foreach { inPlace =>
      withReadInPlace(inPlace) {
        assertSame(idf.lookup(Seq(7.0, 8L)), plain.filter(col("k") === 7.0 || col("k") === 8L), "double")
        assertSame(idf.lookup(Seq(7.5)), plain.filter(col("k") === 7.5), "7.5")
      }
    }
    val e = intercept[HyperspaceException](idf.lookup(Seq("seven")))
    assert(e.getMessage.contains("'k'"), e.getMessage)
  }

  test("versions: every version after appends, divergent ones, uncached and serialized ones") {
    var versions = Seq(source(600).createIndex("k", 3).cache())
    var sources = Seq(source(600))
    (1 to 10).foreach { v =>
      val more = spark.range(v * 5).selectExpr(s"(id * 7) % 520 AS k", s"'v$v' AS s", s"CAST(id AS INT) AS i")
      // Every third version stays uncached: its lookups compute it from lineage.
      val next = versions.last.appendRows(more)
      versions = versions :+ (if (v % 3 == 0) next.unpersist() else next.cache())
      sources = sources :+ sources.last.union(more)
    }
    val divergent = versions(4).appendRows(spark.range(9).selectExpr("id * 7 AS k", "'d' AS s", "1 AS i")).cache()
    val keys = Seq(0L, 7L, 14L, 21L, 35L, 511L, 519L, 100000L)
    for (inPlace <- Seq(true, false)) withReadInPlace(inPlace) {
      versions.zip(sources).zipWithIndex.foreach { case ((idx, src), v) =>
        assertSame(idx.lookup(keys), src.filter(col("k").isin(keys: _*)), s"version $v, in place $inPlace")
      }
      assertSame(divergent.lookup(keys),
        sources(4).union(spark.range(9).selectExpr("id * 7 AS k", "'d' AS s", "1 AS i"))
          .filter(col("k").isin(keys: _*)), "divergent")
      assertSame(versions(4).lookup(keys), sources(4).filter(col("k").isin(keys: _*)), "parent of divergent")
    }
    val serialized = source(600).createIndex("k", 3).persist(StorageLevel.MEMORY_ONLY_SER)
    val (rows, jobs, _) = counting(serialized.lookup(keys))
    assertSame(rows, source(600).filter(col("k").isin(keys: _*)), "serialized")
    assert(jobs == 1, "a serialized partition is read by a task, not deserialized on the driver")
    (versions :+ divergent :+ serialized).foreach(_.unpersist(blocking = true))
  }

  test("every atomic key type, with -0.0/0.0 and NaN as one key") {
    val df = AtomicKeyTypes.frame(spark, 300)
    val base = df.cache()
    df.columns.filter(_.startsWith("b_")).foreach { c =>
      val indexed = df.createIndex(c, 3).cache()
      val samples = base.filter(col(c).isNotNull).select(c).distinct().limit(3).collect().map(_.get(0)).toSeq
      for (inPlace <- Seq(true, false)) withReadInPlace(inPlace) {
        assertSame(indexed.lookup(samples :+ null), base.filter(col(c).isin(samples: _*)), s"$c, in place $inPlace")
      }
      indexed.unpersist(blocking = true)
    }
    val floats = spark.createDataFrame(Seq((0.0, 1), (-0.0, 2), (Double.NaN, 3), (1.0, 4))).toDF("d", "n")
    val byD = floats.createIndex("d", 4).cache()
    for (inPlace <- Seq(true, false)) withReadInPlace(inPlace) {
      assert(byD.lookup(Seq(0.0, -0.0)).map(_.getInt(1)).sorted == Seq(1, 2))
      assert(byD.lookup(Seq(Double.NaN, java.lang.Double.longBitsToDouble(0x7ff8000000000001L)))
        .map(_.getInt(1)) == Seq(3))
      assert(byD.toDF.filter(col("d").isin(0.0, -0.0)).collect().map(_.getInt(1)).sorted.toSeq == Seq(1, 2))
    }
  }

  test("Java callers get the same rows") {
    val keys = new java.util.ArrayList[Any]()
    keys.add(java.lang.Long.valueOf(9L))
    keys.add(null)
    assert(sorted(idf.lookupAsJava(keys).toArray(Array.empty[Row]).toSeq) == sorted(idf.lookup(Seq(9L))))
  }
}
