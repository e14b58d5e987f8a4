package io

import org.apache.spark.sql.SparkSession

/**
 * `import io.hyperspace._` adds the session switches of the original Hyperspace:
 * {{{
 *   spark.enableHyperspace()
 *   spark.isHyperspaceEnabled()
 *   spark.disableHyperspace()
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
}
