package io

import org.apache.spark.sql.{DataFrame, SparkSession}

import io.hyperspace.indexed.IndexedDataFrame

/**
 * `import io.hyperspace._` adds the session switches of the original Hyperspace:
 * {{{
 *   spark.enableHyperspace()
 *   spark.isHyperspaceEnabled()
 *   spark.disableHyperspace()
 * }}}
 * and the Indexed DataFrame of the paper "In-Memory Indexed Caching for Distributed Data
 * Processing":
 * {{{
 *   val idf = df.createIndex("id").cache()
 * }}}
 */
package object hyperspace {

  /** Per-session Hyperspace switches on a [[SparkSession]]. */
  implicit class HyperspaceSessionOps(val spark: SparkSession) extends AnyVal {

    /** Turns index-based query rewriting on for this session; returns the session. */
    def enableHyperspace(): SparkSession = {
      Hyperspace.enable(spark)
      spark
    }

    /** Turns index-based query rewriting off for this session; returns the session. */
    def disableHyperspace(): SparkSession = {
      Hyperspace.disable(spark)
      spark
    }

    /** Whether index-based query rewriting is on for this session. */
    def isHyperspaceEnabled(): Boolean = Hyperspace.isEnabled(spark)
  }

  /** Indexed DataFrame creation on a [[DataFrame]]. */
  implicit class IndexedDataFrameOps(val df: DataFrame) extends AnyVal {

    /**
     * An in-memory Indexed DataFrame over this DataFrame keyed on `keyColumn` (see
     * [[io.hyperspace.indexed.IndexedDataFrame]]); call `cache()` on it to build it.
     */
    def createIndex(keyColumn: String): IndexedDataFrame = IndexedDataFrame.create(df, keyColumn)

    /** [[createIndex]] with an explicit number of hash partitions. */
    def createIndex(keyColumn: String, numPartitions: Int): IndexedDataFrame =
      IndexedDataFrame.create(df, keyColumn, numPartitions)
  }
}
