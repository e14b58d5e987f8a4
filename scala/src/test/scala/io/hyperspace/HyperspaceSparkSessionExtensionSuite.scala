package io.hyperspace

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

import io.hyperspace.execution.HyperspaceStrategy
import io.hyperspace.rules.ApplyHyperspace

class HyperspaceSparkSessionExtensionSuite extends SparkSessionSuite {

  /** The rules of every optimizer batch (`batches` is protected in Scala, public in bytecode). */
  private def optimizerRules: Seq[Rule[LogicalPlan]] = {
    val optimizer = spark.sessionState.optimizer
    val batches = optimizer.getClass.getMethod("batches").invoke(optimizer)
      .asInstanceOf[Seq[AnyRef]]
    batches.flatMap { batch =>
      batch.getClass.getMethod("rules").invoke(batch).asInstanceOf[Seq[Rule[LogicalPlan]]]
    }
  }

  test("the extension registers the ApplyHyperspace optimizer rule") {
    val rules = optimizerRules.collect { case r: ApplyHyperspace => r }
    assert(rules.nonEmpty, s"ApplyHyperspace not among ${optimizerRules.map(_.ruleName)}")
    assert(rules.forall(_.spark eq spark), "the rule must be bound to its own session")
  }

  test("the extension registers the Hyperspace planner strategy") {
    assert(spark.sessionState.planner.extraPlanningStrategies.contains(HyperspaceStrategy))
  }

  test("the extension registers hyperspace_bucket_id") {
    assert(spark.catalog.functionExists("hyperspace_bucket_id"))
    assert(Hyperspace.isExtensionInstalled(spark))
  }

  test("enable and disable are per session") {
    import io.hyperspace._
    val other = spark.newSession()
    spark.disableHyperspace()
    other.disableHyperspace()
    assert(!spark.isHyperspaceEnabled())

    spark.enableHyperspace()
    assert(spark.isHyperspaceEnabled())
    assert(!other.isHyperspaceEnabled(), "enabling one session must not enable another")
    assert(spark.conf.get("spark.hyperspace.apply.enabled") == "true")

    other.enableHyperspace()
    spark.disableHyperspace()
    assert(!spark.isHyperspaceEnabled())
    assert(other.isHyperspaceEnabled())
  }

  test("the facade mirrors the switches and reports versions") {
    val hs = Hyperspace(spark)
    hs.enable()
    assert(hs.isEnabled)
    hs.disable()
    assert(!hs.isEnabled)
    assert(hs.version == BuildInfo.version)
    assert(hs.sparkVersion == org.apache.spark.SPARK_VERSION,
      "the jar must be built against the Spark it runs on")
  }

  test("queries return the same rows with Hyperspace on and off") {
    import io.hyperspace._
    val df = spark.range(0, 1000).selectExpr("id", "id % 7 AS k")
      .where("k = 3").groupBy("k").count()
    spark.disableHyperspace()
    val off = df.collect().toSeq
    spark.enableHyperspace()
    val on = df.collect().toSeq
    spark.disableHyperspace()
    assert(on == off)
    assert(on.head.getLong(1) == 143L)
  }

  test("a malformed apply.enabled value leaves queries working (rewriting off)") {
    spark.conf.set("spark.hyperspace.apply.enabled", "maybe")
    try {
      assert(spark.range(10).where("id > 4").count() == 5)
      assert(intercept[HyperspaceException](Hyperspace.isEnabled(spark)).getMessage ==
        "Invalid value 'maybe' for spark.hyperspace.apply.enabled: expected a boolean (true or false).")
    } finally spark.conf.set("spark.hyperspace.apply.enabled", "false")
  }
}

/** A session built without the extension: enabling must say how to install it. */
class WithoutExtensionSuite extends SparkSessionSuite {
  override protected def withExtension: Boolean = false

  test("enableHyperspace without the extension fails with instructions") {
    import io.hyperspace._
    val e = intercept[HyperspaceExtensionNotInstalledException](spark.enableHyperspace())
    assert(e.getMessage.contains("spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension"))
    assert(!spark.isHyperspaceEnabled())
    assert(!spark.conf.getOption("spark.hyperspace.apply.enabled").contains("true"))
  }
}
