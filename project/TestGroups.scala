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

  // Wall seconds per suite (a suite's JUnit report) in a `.ci/run` on 2 cores, 2026-11-28, Spark 4.2,
  // on a machine running ~2.5x slower than usual: only the ratios matter. Suites under 8 s are left out.
  // The five Indexed DataFrame and Z-order suites cut on 2026-11-29 were scaled by their own drop in
  // that day's run. (That run's figures for every suite balanced the Spark 4.0/4.1 subsets worse:
  // a report's time leaves out a suite's beforeAll, where several write their data.)
  private val measuredSeconds: Map[String, Double] = Map(
    "io.hyperspace.sources.DeltaDataSkippingSuite" -> 439, // 2026-12-04 cuts: scaled by its CPU drop
    "io.hyperspace.indexed.IndexedJoinSelectionSuite" -> 140, // after its sweeps ran one setting per case
    "io.hyperspace.rules.DifferentialSuite" -> 271, // likewise its broadcast joins; 40 filters (2026-12-04)
    "io.hyperspace.index.split.SplitIndexSuite" -> 307, // 2026-12-04 cuts: scaled by its CPU drop
    "io.hyperspace.sources.DeltaSourceSuite" -> 209, // 2026-12-04: VACUUM in a few tasks
    "io.hyperspace.maintenance.RefreshSuite" -> 110, // one layout per mode and change in CI
    "io.hyperspace.indexed.IndexedDataFrameSuite" -> 142,
    "io.hyperspace.indexed.IndexedCompactRowsSuite" -> 90,
    "io.hyperspace.index.zorder.ZOrderCoveringIndexSuite" -> 79, // 40 generated filters (2026-12-04)
    "io.hyperspace.actions.CrashSafetySuite" -> 116,
    "io.hyperspace.execution.DriverIndexReadSuite" -> 89,
    "io.hyperspace.execution.DriverReadDifferentialSuite" -> 88,
    "io.hyperspace.sources.SpecialCharacterPathSuite" -> 85,
    "io.hyperspace.rules.LongDecimalSumSuite" -> 83,
    "io.hyperspace.rules.WriteCommandSuite" -> 79,
    "io.hyperspace.index.split.SplitJoinPruningSuite" -> 79,
    "io.hyperspace.index.split.SplitStaleSourceSuite" -> 40,
    "io.hyperspace.indexed.IndexedCompressionSuite" -> 36,
    "io.hyperspace.dataskipping.DataSkippingEndToEndDifferentialSuite" -> 67,
    "io.hyperspace.index.covering.NestedColumnSuite" -> 62,
    "io.hyperspace.rules.FileMetadataSuite" -> 58,
    "io.hyperspace.dataskipping.DataSkippingRuleSuite" -> 56,
    "io.hyperspace.maintenance.HybridScanSuite" -> 55,
    "io.hyperspace.explain.WhyNotAgreementSuite" -> 52,
    "io.hyperspace.dataskipping.SketchExpressionSuite" -> 46,
    // 36 s measured 2026-12-03 beside IndexBucketOrderSuite's 26 s: scaled to this run by that ratio.
    "io.hyperspace.execution.IndexMergeJoinDifferentialSuite" -> 46,
    "io.hyperspace.sources.BasePathSuite" -> 45,
    "io.hyperspace.actions.ConcurrencySuite" -> 43,
    "io.hyperspace.index.covering.CoveringFileRangesSuite" -> 41,
    "io.hyperspace.actions.SafetyLifecycleSuite" -> 40,
    "io.hyperspace.rules.FilterAndJoinRuleSuite" -> 40,
    "io.hyperspace.advisor.IndexAdvisorKindsSuite" -> 39,
    "io.hyperspace.advisor.IndexAdvisorSuite" -> 36,
    "io.hyperspace.rules.OnePartitionAggregateSuite" -> 34,
    "io.hyperspace.execution.IndexBucketOrderSuite" -> 33,
    "io.hyperspace.actions.IndexLifetimesSuite" -> 33,
    "io.hyperspace.actions.IndexLifecycleSuite" -> 30,
    "io.hyperspace.indexed.IndexedSpillSuite" -> 29,
    "io.hyperspace.rules.BroadcastProbeIndexSuite" -> 29,
    "io.hyperspace.advisor.IndexAdvisorSplitSuite" -> 28,
    "io.hyperspace.rules.BroadcastJoinSuite" -> 23,
    "io.hyperspace.index.dataskipping.DataSkippingDifferentialSuite" -> 22,
    "io.hyperspace.indexed.IndexedKeptBroadcastSuite" -> 22,
    "io.hyperspace.index.dataskipping.MinMaxSketchSuite" -> 22,
    "io.hyperspace.dataskipping.DataSkippingMaintenanceSuite" -> 21,
    "io.hyperspace.indexed.PackedBatchSuite" -> 21,
    "io.hyperspace.sql.HyperspaceSqlSuite" -> 19,
    "io.hyperspace.sql.SparkSqlCorpusSuite" -> 52, // measured 2026-12-03 on a machine at load ~7
    "io.hyperspace.rules.PlanningWithoutIndexesSuite" -> 19,
    "io.hyperspace.index.dataskipping.HashSketchSuite" -> 19,
    "io.hyperspace.expressions.SharedCodePredicateSuite" -> 18,
    "io.hyperspace.maintenance.HybridScanFilterPushdownSuite" -> 17,
    "io.hyperspace.index.IndexKeyEncodingSuite" -> 16,
    "io.hyperspace.actions.StateTransitionSuite" -> 14,
    "io.hyperspace.indexed.IndexedLookupSuite" -> 13,
    // 52 s measured 2026-12-04 on moto beside IndexLifecycleSuite's 141 s (load ~15): scaled by that ratio.
    "io.hyperspace.log.S3LogStoreSuite" -> 11,
    "io.hyperspace.maintenance.OptimizeSuite" -> 12,
    "io.hyperspace.sources.GlobAndBasePathSuite" -> 12,
    "io.hyperspace.index.dataskipping.NullAndPartitionSketchSuite" -> 10,
    "io.hyperspace.index.DriverParquetReaderSuite" -> 10,
    "io.hyperspace.index.dataskipping.FilterTranslatorSuite" -> 10,
    "io.hyperspace.index.toy.IndexKindSpiSuite" -> 9,
    "io.hyperspace.advisor.QueryRecorderSuite" -> 9,
    "io.hyperspace.index.dataskipping.StringSketchSuite" -> 8,
    "io.hyperspace.indexed.IndexedSqlSuite" -> 8,
    // Spark 4.1 only (no Iceberg runtime for 4.2), from the 4.1 line subset of the same CI run.
    "io.hyperspace.sources.IcebergDeletesSuite" -> 163,
    "io.hyperspace.sources.IcebergSourceSuite" -> 105, // its merge-on-read test left to IcebergDeletesSuite
    "io.hyperspace.sources.IcebergDataSkippingSuite" -> 53
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
