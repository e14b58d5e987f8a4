package io.hyperspace.testing

import org.apache.spark.sql.SparkSession

import io.hyperspace.Hyperspace

/**
 * A JVM that refreshes an index slowly enough to be killed in the middle of its data write:
 * `SlowRefreshMain <systemPath> <indexName>` (one core, one shuffle partition per bucket).
 */
object SlowRefreshMain {
  def main(args: Array[String]): Unit = {
    val Array(systemPath, name) = args
    val spark = SparkSession.builder().master("local[1]").appName("slow-refresh")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "1")
      .config("spark.hyperspace.system.path", systemPath)
      .getOrCreate()
    Hyperspace(spark).refreshIndex(name, "full")
    spark.stop()
  }
}
