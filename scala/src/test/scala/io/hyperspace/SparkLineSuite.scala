package io.hyperspace

import org.apache.spark.sql.SparkSessionExtensions
import org.scalatest.funsuite.AnyFunSuite

/** The jar-per-Spark-line check, without a session (the extension runs it at session start). */
class SparkLineSuite extends AnyFunSuite {

  test("a Spark version's line is its major.minor") {
    assert(SparkLine.of("4.1.3") == "4.1")
    assert(SparkLine.of("4.2.0-preview1") == "4.2")
  }

  test("the jar was built for the running Spark's line, and is named for it") {
    assert(SparkLine.builtFor == SparkLine.of(org.apache.spark.SPARK_VERSION))
    assert(SparkLine.jarName(SparkLine.builtFor) ==
      s"hyperspace-spark${SparkLine.builtFor}_2.13-${BuildInfo.version}.jar")
    SparkLine.requireSameLine(org.apache.spark.SPARK_VERSION)
    new HyperspaceSparkSessionExtension().apply(new SparkSessionExtensions)
  }

  test("another patch of the same line is accepted") {
    SparkLine.requireSameLine(runtimeVersion = "4.1.9", jarSparkVersion = "4.1.3")
  }

  test("another line is refused, naming both versions and the jar to use") {
    val e = intercept[HyperspaceException] {
      SparkLine.requireSameLine(runtimeVersion = "4.2.0", jarSparkVersion = "4.0.4")
    }
    val v = BuildInfo.version
    assert(e.getMessage.contains(s"hyperspace-spark4.0_2.13-$v.jar) was built for Spark 4.0.4"), e.getMessage)
    assert(e.getMessage.contains(s"on Spark 4.2.0: put hyperspace-spark4.2_2.13-$v.jar on the class path"),
      e.getMessage)
  }
}
