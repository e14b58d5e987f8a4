package io.hyperspace

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.expressions.BucketId

/**
 * The entry point for managing indexes of one session, e.g. `val hs = Hyperspace(spark)`.
 *
 * Index operations arrive with the covering-index lifecycle; this facade already carries the
 * per-session switches and the facts a user checks first (versions, where indexes live).
 */
class Hyperspace(val spark: SparkSession) {

  /** The Hyperspace version of the loaded jar. */
  def version: String = BuildInfo.version

  /** The Spark version the jar was built against. */
  def sparkVersion: String = BuildInfo.sparkVersion

  /** The directory under which this session's indexes live (`spark.hyperspace.system.path`). */
  def systemPath: String = HyperspaceConf.systemPath(spark)

  /** Turns index-based query rewriting on for this session. */
  def enable(): Unit = Hyperspace.enable(spark)

  /** Turns index-based query rewriting off for this session. */
  def disable(): Unit = Hyperspace.disable(spark)

  /** Whether index-based query rewriting is on for this session. */
  def isEnabled: Boolean = Hyperspace.isEnabled(spark)
}

object Hyperspace {

  /** `Hyperspace(spark)`, as in the original library. */
  def apply(spark: SparkSession): Hyperspace = new Hyperspace(spark)

  /**
   * Turns query rewriting on for `spark` only (other sessions are unaffected). Fails with a
   * message saying how to install the extension when the session was built without it.
   */
  def enable(spark: SparkSession): Unit = {
    requireExtension(spark)
    spark.conf.set(HyperspaceConf.APPLY_ENABLED.key, "true")
  }

  /** Turns query rewriting off for `spark` only. */
  def disable(spark: SparkSession): Unit =
    spark.conf.set(HyperspaceConf.APPLY_ENABLED.key, "false")

  /** Whether `spark` has the extension installed and rewriting switched on. */
  def isEnabled(spark: SparkSession): Boolean =
    isExtensionInstalled(spark) && HyperspaceConf.applyEnabled(spark)

  /**
   * Whether `spark` was built with [[HyperspaceSparkSessionExtension]]. Checked through what the
   * extension registered in this very session, so a session created before the configuration
   * was set is reported correctly.
   */
  def isExtensionInstalled(spark: SparkSession): Boolean =
    spark.sessionState.functionRegistry.functionExists(FunctionIdentifier(BucketId.name))

  private def requireExtension(spark: SparkSession): Unit = {
    if (!isExtensionInstalled(spark)) {
      throw new HyperspaceExtensionNotInstalledException(
        "Hyperspace is not installed in this SparkSession: build the session with " +
          s"spark.sql.extensions=${HyperspaceSparkSessionExtension.className} " +
          "(e.g. SparkSession.builder().config(\"spark.sql.extensions\", " +
          s"\"${HyperspaceSparkSessionExtension.className}\")), or pass " +
          s"--conf spark.sql.extensions=${HyperspaceSparkSessionExtension.className} to " +
          "spark-submit. The setting only takes effect for sessions created after it is set.")
    }
  }
}
