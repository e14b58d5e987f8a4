package io.hyperspace.rules

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.optimizer.BuildLeft
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec

import io.hyperspace.HyperspaceSuite
import io.hyperspace.execution.DriverIndexReadExec
import io.hyperspace.index.covering.IndexHadoopFsRelation

/** Running queries with Hyperspace on and off, and reading their physical plans. */
trait RuleTestSupport extends HyperspaceSuite {

  protected def withHyperspace[T](on: Boolean)(body: => T): T = {
    spark.conf.set("spark.hyperspace.apply.enabled", on.toString)
    try body
    finally spark.conf.set("spark.hyperspace.apply.enabled", "false")
  }

  /** The executed plan with adaptive stages unwrapped (after the query ran). */
  protected def executed(df: DataFrame): SparkPlan = {
    def unwrap(p: SparkPlan): SparkPlan = p transform {
      case a: AdaptiveSparkPlanExec => unwrap(a.finalPhysicalPlan)
      case q: QueryStageExec => unwrap(q.plan)
    }
    unwrap(df.queryExecution.executedPlan)
  }

  protected def indexScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.isInstanceOf[IndexHadoopFsRelation] => s
  }

  /** The plan's reads done in the driver when its rows are collected there. */
  protected def driverReads(plan: SparkPlan): Seq[DriverIndexReadExec] = plan.collect { case d: DriverIndexReadExec =>
    d
  }

  /**
   * Index files the executed plan read: by its index scans, or in the driver when its rows were
   * collected there ([[DriverIndexReadExec]]).
   */
  protected def indexFilesRead(plan: SparkPlan): Long =
    indexScans(plan).map(_.metrics("numFiles").value).sum + driverReads(plan).map(_.metrics("numFiles").value).sum

  protected def indexesUsed(plan: SparkPlan): Seq[String] =
    indexScans(plan).map(_.relation.asInstanceOf[IndexHadoopFsRelation].entry.name).distinct.sorted

  /** The index entries (name, log id) the executed plan reads: which version of each index. */
  protected def entriesUsed(plan: SparkPlan): Seq[(String, Long)] =
    indexScans(plan).map(_.relation.asInstanceOf[IndexHadoopFsRelation].entry).map(e => (e.name, e.id)).distinct

  /** Runs `body` with hybrid scan on and no limit on the appended or deleted share. */
  protected def withHybridScan[T](body: => T): T = {
    val keys = Map("enabled" -> "true", "maxDeletedRatio" -> "1.0", "maxAppendedRatio" -> "1.0")
    keys.foreach { case (k, v) => spark.conf.set(s"spark.hyperspace.index.hybridscan.$k", v) }
    try body
    finally keys.keys.foreach(k => spark.conf.unset(s"spark.hyperspace.index.hybridscan.$k"))
  }

  protected def shuffles(plan: SparkPlan): Int = plan.collect { case s: ShuffleExchangeExec => s }.size

  /** Rows as a sorted multiset of strings: equal results compare equal whatever the order. */
  protected def rowsOf(df: DataFrame): Seq[String] = sortedRows(df).map(_._1)

  private val TwelveDigits = new java.math.MathContext(12, java.math.RoundingMode.HALF_UP)

  private def rowString(r: Row): String = r.toSeq.map(valueString).mkString("|")

  private def valueString(v: Any): String = v match {
    case d: Double if d.isNaN => "NaN"
    // Sums and averages of doubles depend on the order rows arrive in, which an index changes:
    // compare them to 12 significant digits, far above that noise and far below a wrong row.
    // (BigDecimal, not "%.12g".format: the formatter was a tenth of a differential suite's driver
    // time.) The sign of a zero is kept, as the formatter kept it.
    case d: Double if d == 0.0 => if (1 / d < 0) "-0" else "0"
    case d: Double if !d.isInfinite => new java.math.BigDecimal(d).round(TwelveDigits).toString
    case a: Array[Byte] => a.mkString("[", ",", "]")
    case other => String.valueOf(other)
  }

  /** The rows of `df` in [[rowsOf]]'s order, each with its string. */
  private def sortedRows(df: DataFrame): Seq[(String, Row)] =
    df.collect().toSeq.map(r => rowString(r) -> r).sortBy(_._1)

  /**
   * Whether two results of [[sortedRows]] hold the same rows. Their strings are equal, or differ
   * only where a double's 12th digit rounded either way (a sum of doubles in another order):
   * such doubles must agree to a relative 1e-9; every other value exactly.
   */
  private def sameRows(a: Seq[(String, Row)], b: Seq[(String, Row)]): Boolean =
    a.size == b.size && a.zip(b).forall { case ((s, r), (t, q)) =>
      s == t ||
      (r.size == q.size && r.toSeq.zip(q.toSeq).forall {
        case (x: Double, y: Double) => valueString(x) == valueString(y) ||
          math.abs(x - y) <= 1e-9 * math.max(math.abs(x), math.abs(y))
        case (x, y) => valueString(x) == valueString(y)
      })
    }

  /**
   * A join of `left` and `right` on `on`, both sides indexed (`indexes`), at Spark's default
   * broadcast threshold: Spark broadcasts a side and the join rule leaves the join to it (`whyNot`
   * says so for the broadcast side's index); the streamed side may read its index, led by the
   * key, in key order. A merge hint asks for a sort-merge join, which reads both indexes. Results
   * equal Spark's either way.
   */
  protected def assertBroadcastLeftToSparkUnlessMergeHinted(
      left: => DataFrame, right: => DataFrame, on: String, indexes: Seq[String]): Unit = {
    val key = "spark.sql.autoBroadcastJoinThreshold"
    val previous = spark.conf.get(key)
    spark.conf.set(key, "10485760")
    try {
      val broadcast = sameResult(left.join(right, on))
      val joins = broadcast.collect { case j: BroadcastHashJoinExec => j }
      assert(joins.size == 1, broadcast.treeString)
      val build = if (joins.head.buildSide == BuildLeft) joins.head.left else joins.head.right
      assert(indexesUsed(build).isEmpty, broadcast.treeString)
      assert(indexesUsed(broadcast).forall(indexes.contains) && indexesUsed(broadcast).size <= 1, broadcast.treeString)
      val notRead = indexes.filterNot(indexesUsed(broadcast).contains)
      assert(notRead.nonEmpty && hs.whyNot(left.join(right, on), notRead.head).contains("Spark broadcasts"))
      val merged = sameResult(left.hint("merge").join(right, on))
      assert(indexesUsed(merged) == indexes, merged.treeString)
    } finally spark.conf.set(key, previous)
  }

  /** Runs `query` with Hyperspace off and on; asserts equal results; returns the plan with it on. */
  protected def sameResult(query: => DataFrame): SparkPlan = executed(ranAlike(query))

  /**
   * Runs `query` with Hyperspace off and on; asserts equal results; returns the DataFrame that ran
   * with it on (its query execution holds what the rules did, for a test that inspects it without
   * running the query a third time).
   */
  protected def ranAlike(query: => DataFrame): DataFrame = {
    val expected = withHyperspace(on = false)(sortedRows(query))
    withHyperspace(on = true) {
      val df = query
      val actual = sortedRows(df)
      if (!sameRows(actual, expected)) {
        val differ = actual.map(_._1).zipAll(expected.map(_._1), "(none)", "(none)").filter { case (x, y) => x != y }
        fail(s"results differ with Hyperspace on (${actual.size} rows against ${expected.size}; with, without): " +
          s"${differ.take(5).mkString(", ")}\n${df.queryExecution.optimizedPlan.treeString}")
      }
      df
    }
  }
}
