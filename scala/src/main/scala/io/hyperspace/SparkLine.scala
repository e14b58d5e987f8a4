package io.hyperspace

/**
 * Hyperspace ships one jar per Spark line (4.0, 4.1, ...; docs/architecture.md, "Spark lines"),
 * each compiled against that line's internals. On another line a jar fails late and obscurely
 * (a `NoSuchMethodError` in the middle of a query), so the extension refuses it at session start.
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

  /**
   * Throws unless `runtimeVersion` (the running Spark's) is of the line `jarSparkVersion` (the
   * jar's Spark version) belongs to.
   */
  def requireSameLine(runtimeVersion: String, jarSparkVersion: String = BuildInfo.sparkVersion): Unit = {
    val (runtime, jar) = (of(runtimeVersion), of(jarSparkVersion))
    if (runtime != jar) {
      throw new HyperspaceException(
        s"This Hyperspace jar (${jarName(jar)}) was built for Spark $jarSparkVersion but runs on " +
          s"Spark $runtimeVersion: put ${jarName(runtime)} on the class path instead (hyperspace-py's " +
          "configure_spark_with_hyperspace and jar_path() pick the jar of the installed pyspark).")
    }
  }
}
