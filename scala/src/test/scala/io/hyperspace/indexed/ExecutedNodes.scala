package io.hyperspace.indexed

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}

/** The nodes of a DataFrame's executed plan, for suites that check which operators ran. */
private[indexed] trait ExecutedNodes {

  /** Every node of the plan that ran, through adaptive execution and its query stages. */
  protected def executedNodes(df: DataFrame): Seq[SparkPlan] = {
    def flatten(p: SparkPlan): Seq[SparkPlan] = p match {
      case a: AdaptiveSparkPlanExec => flatten(a.executedPlan)
      case q: QueryStageExec => flatten(q.plan)
      case other => other +: other.children.flatMap(flatten)
    }
    flatten(df.queryExecution.executedPlan)
  }
}
