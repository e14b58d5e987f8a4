package io.hyperspace.indexed

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._
import org.apache.spark.storage.StorageLevel

import io.hyperspace._

/**
 * An Indexed DataFrame bigger than the executor's memory. The session's memory manager is
 * given 96 MB (about 58 MB of unified storage and execution memory), so a few tens of MB of
 * index do not fit, while the test JVM's real heap keeps the test itself safe.
 */
class IndexedSpillSuite extends SparkSessionSuite {

  override protected def sessionConfig: Map[String, String] = Map(
    "spark.testing.memory" -> (96L << 20).toString,
    "spark.testing.reservedMemory" -> "0",
    "spark.hyperspace.indexed.joinSelection" -> "index",
    // The sizes below are of rows as written, as UnsafeRows; compressed or compact, these rows
    // would (nearly) fit.
    "spark.hyperspace.indexed.compression" -> "none",
    "spark.hyperspace.indexed.rowFormat" -> "unsafe")

  /** ~110 bytes per row stored: 800K rows are ~90 MB of index, more than the 58 MB pool. */
  private def big(n: Int = 800000): DataFrame = spark.range(n).selectExpr(
    "id % 200000 AS k", "concat(repeat('p', 60), id) AS pad", "CAST(id AS INT) AS i")

  private def sorted(df: DataFrame): Seq[String] = df.collect().map(_.toString).toSeq.sorted

  private def assertLookups(idf: IndexedDataFrame, source: DataFrame): Unit =
    Seq(0L, 7L, 199999L, 123456L, 200000L).foreach { key =>
      assert(sorted(idf.getRows(key)) == sorted(source.filter(col("k") === key)), s"key $key")
    }

  test("MEMORY_ONLY: what does not fit is not cached, and queries recompute it from lineage") {
    val idf = big().createIndex("k", 16).cache()
    val stats = idf.memoryStats
    assert(stats("rows") == 800000L)
    assert(stats("usedBatchBytes") > (70L << 20), stats)
    assert(stats("cachedPartitions") < 16L, stats)
    assert(stats("blockManagerBytes") < (60L << 20), stats)
    assert(stats("blockManagerDiskBytes") == 0L, stats)
    assertLookups(idf, big())
    val probe = spark.range(0, 400000, 1000).selectExpr("id AS pk")
    val i = idf.toDF
    assert(sorted(i.join(probe, i("k") === probe("pk")).select("i")) ==
      sorted(big().join(probe, col("k") === col("pk")).select("i")))
    idf.unpersist(blocking = true)
  }

  test("MEMORY_AND_DISK: the partitions that do not fit spill to disk and are read from there") {
    val idf = big().createIndex("k", 16).persist(StorageLevel.MEMORY_AND_DISK)
    val stats = idf.memoryStats
    assert(stats("cachedPartitions") == 16L, stats)
    assert(stats("blockManagerBytes") < (60L << 20), stats)
    assert(stats("blockManagerDiskBytes") > (10L << 20), stats)
    assertLookups(idf, big())
    val extra = spark.range(10).selectExpr("id * 20000 AS k", "'new' AS pad", "-1 AS i")
    val v1 = idf.appendRows(extra)
    assertLookups(v1, big().union(extra))
    assertLookups(idf, big())
    v1.unpersist(blocking = true)
    idf.unpersist(blocking = true)
  }

  test("a partition bigger than the memory its task can get fails clearly, not with an OOM") {
    Seq(StorageLevel.MEMORY_ONLY, StorageLevel.MEMORY_AND_DISK).foreach { level =>
      val idf = big().createIndex("k", 1)
      val e = intercept[Exception](idf.persist(level))
      val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).toSeq
      assert(
        messages.exists(m =>
          m != null && m.contains("Indexed DataFrame on 'k': partition 0 needs more than") &&
            m.contains("more partitions")), messages.mkString("\n"))
      idf.unpersist(blocking = true)
    }
    // The same rows in enough partitions fit (spilling what the pool cannot hold).
    assert(big().createIndex("k", 16).persist(StorageLevel.MEMORY_AND_DISK).count() == 800000L)
  }

  test("compressed batches: the rows that did not fit do, and spilled to disk they read back alike") {
    spark.conf.set("spark.hyperspace.indexed.compression", "zstd")
    try {
      val idf = big().createIndex("k", 16).persist(StorageLevel.MEMORY_AND_DISK)
      val stats = idf.memoryStats
      assert(stats("usedBatchBytes") > (70L << 20), stats)
      assert(stats("cachedPartitions") == 16L && stats("blockManagerDiskBytes") == 0L, stats)
      assert(stats("blockManagerBytes") < (40L << 20), stats)
      assertLookups(idf, big())
      // On disk only: every query reads the compressed partitions back (Java serialization).
      val onDisk = big().createIndex("k", 16).persist(StorageLevel.DISK_ONLY)
      val diskStats = onDisk.memoryStats
      assert(diskStats("cachedPartitions") == 16L && diskStats("blockManagerDiskBytes") > 0L, diskStats)
      assert(diskStats("blockManagerDiskBytes") < stats("usedBatchBytes") / 2, diskStats)
      assertLookups(onDisk, big())
      val probe = spark.range(0, 400000, 1000).selectExpr("id AS pk")
      val i = onDisk.toDF
      assert(sorted(i.join(probe, i("k") === probe("pk")).select("i")) ==
        sorted(big().join(probe, col("k") === col("pk")).select("i")))
      val extra = spark.range(10).selectExpr("id * 20000 AS k", "'new' AS pad", "-1 AS i")
      val v1 = onDisk.appendRows(extra)
      assertLookups(v1, big().union(extra))
      assertLookups(onDisk, big())
      Seq(v1, onDisk, idf).foreach(_.unpersist(blocking = true))
    } finally spark.conf.set("spark.hyperspace.indexed.compression", "none")
  }

  test("a partition read back from disk reserves execution memory for itself, or fails clearly") {
    val idf = big(200000).createIndex("k", 2).persist(StorageLevel.DISK_ONLY)
    assert(idf.memoryStats("blockManagerDiskBytes") > (10L << 20))
    assertLookups(idf, big(200000))
    // A task whose execution memory is taken reads the partition back: the reservation fails
    // with the index named, not with the heap running out.
    val e = intercept[Exception](idf.data.rdd.mapPartitions { parts =>
      val hog = org.apache.spark.sql.hyperspace.TaskMemoryReservation.forCurrentTask().get
      while (hog.reserve(1L << 20)) {}
      try Iterator(parts.next().rowCount)
      finally hog.releaseAll()
    }.collect())
    val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).toSeq
    assert(messages.exists(m =>
        m != null && m.contains("Indexed DataFrame on 'k'") &&
          m.contains("read back from its serialized form needs")), messages.mkString("\n"))
    // Its reservation ends with its task: the next queries read it back again.
    assertLookups(idf, big(200000))
    idf.unpersist(blocking = true)
  }
}
