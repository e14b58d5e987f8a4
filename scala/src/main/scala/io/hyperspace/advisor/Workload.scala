package io.hyperspace.advisor

import scala.util.control.NonFatal

import org.apache.spark.sql.{DataFrame, SparkSession}

import io.hyperspace.HyperspaceException

/**
 * One query of a workload: its DataFrame, a label the recommendations name it by (its SQL text,
 * or `query <n>`), and its weight (how often it runs, or how much it matters; relative).
 */
final case class WorkloadQuery(label: String, df: DataFrame, weight: Double = 1.0) {
  if (!(weight > 0) || weight.isInfinite) {
    throw new HyperspaceException(s"Workload query '$label': the weight must be a positive number; got $weight.")
  }
}

object WorkloadQuery {

  /**
   * `text` analyzed in `spark`; a query that does not resolve (an unknown table or column) is
   * refused with a message naming it, before anything is planned.
   */
  def sql(spark: SparkSession, text: String, weight: Double = 1.0): WorkloadQuery = {
    if (text == null || text.trim.isEmpty) throw new HyperspaceException("Workload query: the SQL text is empty.")
    val df =
      try spark.sql(text)
      catch {
        case NonFatal(e) =>
          throw new HyperspaceException(s"Workload query '${text.trim}' cannot be analyzed: ${e.getMessage}", e)
      }
    WorkloadQuery(text.trim, df, weight)
  }
}

/**
 * A workload built one query at a time: how the Python bindings pass DataFrames and SQL texts
 * without py4j collections.
 */
final class Workload(spark: SparkSession) {
  private val queries = Seq.newBuilder[WorkloadQuery]
  private var count = 0

  /** Adds a DataFrame; `label` null names it `query <n>`. */
  def add(df: DataFrame, label: String, weight: Double): Workload = {
    count += 1
    queries += WorkloadQuery(Option(label).getOrElse(s"query $count"), df, weight)
    this
  }

  /** Adds a SQL query, analyzed now. */
  def addSql(text: String, weight: Double): Workload = {
    count += 1
    queries += WorkloadQuery.sql(spark, text, weight)
    this
  }

  def result: Seq[WorkloadQuery] = queries.result()
}
