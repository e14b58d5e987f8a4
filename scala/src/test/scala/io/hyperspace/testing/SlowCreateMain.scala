package io.hyperspace.testing

import org.apache.spark.sql.SparkSession

import io.hyperspace.Hyperspace
import io.hyperspace.index.IndexConfig

/**
 * A JVM that creates an index slowly enough to be killed in the middle of its data write:
 * `SlowCreateMain <systemPath> <sourcePath> <indexName>` (one core, many buckets).
 */
object SlowCreateMain {
  def main(args: Array[String]): Unit = {
    val Array(systemPath, sourcePath, name) = args
    val spark = SparkSession.builder().master("local[1]").appName("slow-create")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "1")
      .config("spark.hyperspace.system.path", systemPath)
      .getOrCreate()
    Hyperspace(spark).createIndex(spark.read.parquet(sourcePath),
      IndexConfig(name, Seq("id"), Seq("name"), numBuckets = Some(2000)))
    spark.stop()
  }
}
