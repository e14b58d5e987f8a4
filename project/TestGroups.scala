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

  // Wall seconds per suite (a suite's JUnit report) in a `.ci/run` on 2 cores, 2026-11-29, Spark 4.2
  // (the Iceberg suites from the 4.1 line subset of the same run); only the ratios matter. Suites
  // under 8 s are left out. The suites cut after that run (three Indexed DataFrame suites and the
  // Z-order one) carry their figure scaled by their own drop, measured alone.
  private val measuredSeconds: Map[String, Double] = Map(
    "io.hyperspace.index.split.SplitIndexSuite" -> 275,
    "io.hyperspace.sources.DeltaDataSkippingSuite" -> 200,
    "io.hyperspace.sources.DeltaSourceSuite" -> 154,
    "io.hyperspace.indexed.IndexedDataFrameSuite" -> 141,
    "io.hyperspace.rules.DifferentialSuite" -> 122,
    "io.hyperspace.index.zorder.ZOrderCoveringIndexSuite" -> 115,
    "io.hyperspace.indexed.IndexedCompactRowsSuite" -> 100,
    "io.hyperspace.maintenance.RefreshSuite" -> 88,
    "io.hyperspace.indexed.IndexedJoinSelectionSuite" -> 85,
    "io.hyperspace.index.split.SplitIndexFileLevelSuite" -> 84,
    "io.hyperspace.actions.CrashSafetySuite" -> 74,
    "io.hyperspace.execution.DriverReadDifferentialSuite" -> 63,
    "io.hyperspace.index.split.SplitJoinPruningSuite" -> 62,
    "io.hyperspace.sources.SpecialCharacterPathSuite" -> 57,
    "io.hyperspace.execution.DriverIndexReadSuite" -> 55,
    "io.hyperspace.rules.LongDecimalSumSuite" -> 54,
    "io.hyperspace.rules.WriteCommandSuite" -> 50,
    "io.hyperspace.maintenance.HybridScanSuite" -> 47,
    "io.hyperspace.index.covering.NestedColumnSuite" -> 46,
    "io.hyperspace.dataskipping.DataSkippingRuleSuite" -> 44,
    "io.hyperspace.dataskipping.DataSkippingEndToEndDifferentialSuite" -> 43,
    "io.hyperspace.rules.OnePartitionAggregateSuite" -> 39,
    "io.hyperspace.explain.WhyNotAgreementSuite" -> 35,
    "io.hyperspace.indexed.IndexedCompressionSuite" -> 35,
    "io.hyperspace.rules.FileMetadataSuite" -> 35,
    "io.hyperspace.dataskipping.SketchExpressionSuite" -> 34,
    "io.hyperspace.index.covering.CoveringFileRangesSuite" -> 34,
    "io.hyperspace.dataskipping.SketchJoinPruningSuite" -> 33,
    "io.hyperspace.rules.FilterAndJoinRuleSuite" -> 31,
    "io.hyperspace.actions.ConcurrencySuite" -> 31,
    "io.hyperspace.actions.SafetyLifecycleSuite" -> 28,
    "io.hyperspace.indexed.IndexedSpillSuite" -> 27,
    "io.hyperspace.sources.BasePathSuite" -> 26,
    "io.hyperspace.rules.BroadcastProbeIndexSuite" -> 22,
    "io.hyperspace.index.dataskipping.MinMaxSketchSuite" -> 22,
    "io.hyperspace.advisor.IndexAdvisorSuite" -> 21,
    "io.hyperspace.advisor.IndexAdvisorKindsSuite" -> 21,
    "io.hyperspace.rules.PlanningWithoutIndexesSuite" -> 21,
    "io.hyperspace.actions.IndexLifecycleSuite" -> 20,
    "io.hyperspace.sql.HyperspaceSqlSuite" -> 20,
    "io.hyperspace.indexed.IndexedLookupSuite" -> 19,
    "io.hyperspace.advisor.IndexAdvisorSplitSuite" -> 19,
    "io.hyperspace.execution.IndexBucketOrderSuite" -> 19,
    "io.hyperspace.indexed.IndexedKeptBroadcastSuite" -> 19,
    "io.hyperspace.actions.IndexLifetimesSuite" -> 18,
    "io.hyperspace.indexed.PackedBatchSuite" -> 16,
    "io.hyperspace.maintenance.HybridScanFilterPushdownSuite" -> 15,
    "io.hyperspace.index.dataskipping.DataSkippingDifferentialSuite" -> 14,
    "io.hyperspace.index.dataskipping.HashSketchSuite" -> 14,
    "io.hyperspace.maintenance.OptimizeSuite" -> 14,
    "io.hyperspace.dataskipping.DataSkippingMaintenanceSuite" -> 13,
    "io.hyperspace.sources.GlobAndBasePathSuite" -> 13,
    "io.hyperspace.index.IndexKeyEncodingSuite" -> 12,
    "io.hyperspace.rules.BroadcastJoinSuite" -> 12,
    "io.hyperspace.index.dataskipping.FilterTranslatorSuite" -> 12,
    "io.hyperspace.expressions.SharedCodePredicateSuite" -> 11,
    "io.hyperspace.index.dataskipping.StringSketchSuite" -> 9,
    "io.hyperspace.actions.StateTransitionSuite" -> 9,
    "io.hyperspace.index.DriverParquetReaderSuite" -> 9,
    // Spark 4.1 only (no Iceberg runtime for 4.2), from the 4.1 line subset of the same CI run.
    "io.hyperspace.sources.IcebergSourceSuite" -> 195,
    "io.hyperspace.sources.IcebergDeletesSuite" -> 144,
    "io.hyperspace.sources.IcebergDataSkippingSuite" -> 40
  )

  private val UnlistedSeconds = 3.0

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
