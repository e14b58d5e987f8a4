package io.hyperspace

/**
 * Hyperspace ships one jar per Spark line (4.0, 4.1, ...; docs/architecture.md, "Spark lines"),
 * each compiled against one patch of that line's internals and checked to link on the oldest and
 * the newest patch it supports (`spark.patches.<line>`, `make check-spark-patches`). On another line,
 * or a patch outside those, a jar would fail late and obscurely (a `NoSuchMethodError` in the
 * middle of a query), so the extension refuses it at session start.
 */
object SparkLine {

  /** The line of a Spark version: "4.1" of "4.1.3". */
  def of(sparkVersion: String): String = sparkVersion.split('.').take(2).mkString(".")

  /** The line this jar was built for. */
  def builtFor: String = of(BuildInfo.sparkVersion)

  /** The file name of the Hyperspace jar built for `line`. */
  def jarName(line: String): String = {
    val scalaBinary = BuildInfo.scalaVersion.split('.').take(2).mkString(".")
    s"hyperspace-spark${line}_$scalaBinary-${BuildInfo.version}.jar"
  }

  /** Throws unless this jar runs on `runtimeVersion` (the running Spark's): its line, a supported patch. */
  def requireSupported(runtimeVersion: String): Unit = {
    requireSameLine(runtimeVersion)
    requireSupportedPatch(runtimeVersion)
  }

  /**
   * Throws unless `runtimeVersion` (the running Spark's) is of the line `jarSparkVersion` (the
   * jar's Spark version) belongs to.
   */
  def requireSameLine(runtimeVersion: String, jarSparkVersion: String = BuildInfo.sparkVersion): Unit = {
    val (runtime, jar) = (of(runtimeVersion), of(jarSparkVersion))
    if (runtime != jar) {
      throw new HyperspaceException(
        s"This Hyperspace jar (${jarName(jar)}) was built for Spark $jarSparkVersion but runs on " +
          s"Spark $runtimeVersion: put ${jarName(runtime)} on the class path instead (hyperspace-spark's " +
          "configure_spark_with_hyperspace and jar_path() pick the jar of the installed pyspark).")
    }
  }

  /**
   * Throws unless `runtimeVersion`, of this jar's line, is a patch from the first to the last of
   * `patches` (those the jar is checked against). A vendor's suffix (`4.1.3-amzn-0`) is ignored.
   */
  def requireSupportedPatch(runtimeVersion: String, patches: Seq[String] = BuildInfo.sparkPatches): Unit = {
    val (oldest, newest) = (patches.head, patches.last)
    val patch = patchOf(runtimeVersion)
    if (patch < patchOf(oldest) || patch > patchOf(newest)) {
      throw new HyperspaceException(
        s"Spark $runtimeVersion is not a patch this Hyperspace jar (${jarName(of(oldest))}) supports: it runs " +
          s"on Spark $oldest to $newest (checked against ${patches.mkString(" and ")}). Use one of those " +
          s"patches (pip install 'pyspark>=$oldest,<=$newest'), or a Hyperspace release that supports $runtimeVersion.")
    }
  }

  /** The patch number of a version: 3 of "4.1.3" (and of "4.1.3-amzn-0"), 0 when it has none. */
  private def patchOf(version: String): Int =
    version.split('.').lift(2).map(_.takeWhile(_.isDigit)).filter(_.nonEmpty).map(_.toInt).getOrElse(0)
}
