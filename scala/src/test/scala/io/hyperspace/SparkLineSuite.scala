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

  test("another patch of the same line is the same line") {
    SparkLine.requireSameLine(runtimeVersion = "4.1.9", jarSparkVersion = "4.1.3")
  }

  test("the jar runs on the patches of its line from the first to the last it is checked against") {
    assert(BuildInfo.sparkPatches.nonEmpty && BuildInfo.sparkPatches.forall(SparkLine.of(_) == SparkLine.builtFor))
    SparkLine.requireSupported(org.apache.spark.SPARK_VERSION)
    for (p <- Seq("4.1.0", "4.1.2", "4.1.4", "4.1.4-amzn-0")) {
      SparkLine.requireSupportedPatch(p, patches = Seq("4.1.0", "4.1.4"))
    }
  }

  test("a patch outside those is refused at session start, naming the supported patches") {
    for (p <- Seq("4.1.5", "4.1.10", "4.1.0")) {
      val e = intercept[HyperspaceException](SparkLine.requireSupportedPatch(p, patches = Seq("4.1.1", "4.1.4")))
      assert(e.getMessage.startsWith(s"Spark $p is not a patch this Hyperspace jar (hyperspace-spark4.1_2.13-"),
        e.getMessage)
      assert(e.getMessage.contains("runs on Spark 4.1.1 to 4.1.4 (checked against 4.1.1 and 4.1.4)"), e.getMessage)
    }
    val newest = BuildInfo.sparkPatches.last.split('.')
    val next = s"${newest(0)}.${newest(1)}.${newest(2).toInt + 1}"
    val e = intercept[HyperspaceException](SparkLine.requireSupported(next))
    assert(e.getMessage.contains(s"checked against ${BuildInfo.sparkPatches.mkString(" and ")}"), e.getMessage)
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
