package io.hyperspace.execution

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

import io.hyperspace.indexed.{KeepIndexBroadcasts, ScanBroadcastIndexInFewTasks}
import io.hyperspace.rules.CompareDecimalsOnLongs

/**
 * Hyperspace's changes to a final physical plan, which need what only the final plan says:
 * where Spark placed Exchanges and Sorts, and which scans read by bucket. They run as the
 * pre-transition step of a columnar rule — the one hook of a session's extensions that sees the
 * physical plan after Spark's own preparation (also each adaptive stage's, as it is created) and
 * before whole-stage codegen.
 *
 * First the Sorts that index scans reading sorted buckets make redundant go
 * ([[RemoveSortsOfSortedIndexBuckets]]); then a plan that reads only a few small index files is
 * marked to be read in the driver when its rows are collected ([[ReadSmallIndexLookupsInDriver]]);
 * an Indexed DataFrame collected for a broadcast is read in few tasks ([[ScanBroadcastIndexInFewTasks]])
 * and its broadcast kept with it for later queries ([[KeepIndexBroadcasts]]);
 * filters over index scans compare decimals with literals as longs ([[CompareDecimalsOnLongs]]).
 */
object IndexPhysicalRules extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      KeepIndexBroadcasts(CompareDecimalsOnLongs(
          ScanBroadcastIndexInFewTasks(ReadSmallIndexLookupsInDriver(RemoveSortsOfSortedIndexBuckets(plan)))))
  }
}
