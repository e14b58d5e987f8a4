import sbt._

/**
 * Splits the test suites between forked test JVMs that run side by side.
 *
 * One Spark suite keeps about one of CI's two cores busy (driver-side planning, small tasks, file
 * system waits): measured on `make test`, the test JVM used ~1000 CPU seconds in ~1000 s of wall
 * time. Two JVMs, each running its suites one after another, use the other core.
 *
 * The groups are balanced by each suite's measured wall time (longest first, each to the group with
 * the least so far); a suite not listed counts as `UnlistedSeconds`. The figures only balance the
 * groups: a stale one costs some wall time, never a test.
 */
object TestGroups {

  // Wall seconds per suite in a `make test` run on 2 cores (2026-11-24, Spark 4.2, load ~6).
  private val measuredSeconds: Map[String, Double] = Map(
    "io.hyperspace.rules.DifferentialSuite" -> 119,
    "io.hyperspace.sources.DeltaDataSkippingSuite" -> 100,
    "io.hyperspace.sources.DeltaSourceSuite" -> 97,
    "io.hyperspace.indexed.IndexedDataFrameSuite" -> 57,
    "io.hyperspace.maintenance.RefreshSuite" -> 54,
    "io.hyperspace.actions.CrashSafetySuite" -> 51,
    "io.hyperspace.maintenance.HybridScanSuite" -> 49,
    "io.hyperspace.sources.SpecialCharacterPathSuite" -> 37,
    "io.hyperspace.sources.WriteCommandSuite" -> 32,
    "io.hyperspace.index.covering.NestedColumnSuite" -> 27,
    "io.hyperspace.explain.WhyNotAgreementSuite" -> 25,
    "io.hyperspace.dataskipping.DataSkippingRuleSuite" -> 24,
    "io.hyperspace.actions.ConcurrencySuite" -> 20,
    "io.hyperspace.dataskipping.DataSkippingEndToEndDifferentialSuite" -> 19,
    "io.hyperspace.actions.IndexLifetimesSuite" -> 19,
    "io.hyperspace.rules.FileMetadataSuite" -> 19,
    "io.hyperspace.dataskipping.SketchExpressionSuite" -> 18,
    "io.hyperspace.rules.FilterAndJoinRuleSuite" -> 16,
    "io.hyperspace.sources.BasePathSuite" -> 15,
    "io.hyperspace.actions.IndexLifecycleSuite" -> 14,
    "io.hyperspace.sql.HyperspaceSqlSuite" -> 14,
    "io.hyperspace.actions.SafetyLifecycleSuite" -> 13,
    "io.hyperspace.rules.BroadcastJoinSuite" -> 12,
    // Spark 4.1 only (no Iceberg runtime for 4.2), scaled to the run above by DifferentialSuite.
    "io.hyperspace.sources.IcebergSourceSuite" -> 62,
    "io.hyperspace.sources.IcebergDeletesSuite" -> 25,
    "io.hyperspace.sources.IcebergDataSkippingSuite" -> 18
  )

  private val UnlistedSeconds = 5.0

  /** The suites in at most `jvms` groups, each run in a JVM forked with `options`. */
  def split(tests: Seq[TestDefinition], jvms: Int, options: ForkOptions): Seq[Tests.Group] = {
    def seconds(t: TestDefinition) = measuredSeconds.getOrElse(t.name, UnlistedSeconds)
    val groups = Array.fill(math.max(1, jvms))(Vector.empty[TestDefinition])
    val loads = Array.fill(groups.length)(0.0)
    tests.sortBy(t => (-seconds(t), t.name)).foreach { t =>
      val lightest = loads.indices.minBy(loads(_))
      groups(lightest) :+= t
      loads(lightest) += seconds(t)
    }
    groups.toSeq.zipWithIndex.collect {
      case (suites, i) if suites.nonEmpty =>
        Tests.Group(s"test-jvm-${i + 1}", suites, Tests.SubProcess(options))
    }
  }
}
