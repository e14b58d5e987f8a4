package io.hyperspace.advisor

import scala.util.control.NonFatal

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.hyperspace.SparkInternals

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
   * `text` parsed as a query and analyzed in `spark`, never run: a command (DROP, INSERT, SET, a
   * Hyperspace statement, ...) is refused, since a workload is read to recommend and a statement
   * that takes workload texts (SHOW HYPERSPACE RECOMMENDATIONS) must stay read-only. A query that
   * does not resolve (an unknown table or column) is refused with a message naming it, before
   * anything is planned.
   */
  def sql(spark: SparkSession, text: String, weight: Double = 1.0): WorkloadQuery = {
    if (text == null || text.trim.isEmpty) throw new HyperspaceException("Workload query: the SQL text is empty.")
    val label = text.trim
    val parser = spark.sessionState.sqlParser
    val plan =
      try parser.parseQuery(label.stripSuffix(";"))
      catch {
        case e: ParseException =>
          val isStatement = scala.util.Try(parser.parsePlan(label)).isSuccess
          if (isStatement) {
            throw new HyperspaceException(
              s"Workload query '$label' is not a query: a workload holds queries only " +
                "(SELECT, WITH, VALUES, TABLE, FROM ...), which are analyzed and never run.", e)
          }
          throw new HyperspaceException(s"Workload query '$label' cannot be parsed: ${e.getMessage}", e)
      }
    val df =
      try SparkInternals.ofRows(spark, plan)
      catch {
        case NonFatal(e) =>
          throw new HyperspaceException(s"Workload query '$label' cannot be analyzed: ${e.getMessage}", e)
      }
    WorkloadQuery(label, df, weight)
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
