package io.hyperspace.index.dataskipping

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.optimizer.{BooleanSimplification, ConstantFolding, NullPropagation, ReorderAssociativeOperator, ReplaceExpressions, SimplifyCasts}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.DataType

import io.hyperspace.HyperspaceException

/**
 * A sketch of an index with its expression resolved against a source plan.
 *
 * @param ordinal the sketch's position in the index; its sketch table columns are
 *                `s<ordinal>_<column name>`
 * @param value   the sketch's expression bound to the source plan's attributes
 */
final case class ResolvedSketch(sketch: Sketch, ordinal: Int, value: Expression) {

  /** The sketch's column names in the sketch table. */
  def tableColumns: Seq[String] = sketch.columnNames.map(c => s"s${ordinal}_$c")

  /** The type of the sketch's expression. */
  def dataType: DataType = value.dataType
}

object ResolvedSketch {

  /**
   * `sketches` (in index order) resolved against `source`: each expression parsed as SQL and
   * analyzed over the source's columns (by the session's case sensitivity), then checked to be
   * deterministic, free of aggregates, windows and subqueries, to reference a source column (a
   * constant, `current_date()` or a zero-argument function has one value for every file), and of
   * a type the sketch accepts; then [[normalize]]d. Errors name the index, the sketch and the
   * expression.
   */
  def resolveAll(spark: SparkSession, indexName: String, sketches: Seq[Sketch], source: LogicalPlan)
      : Seq[ResolvedSketch] = {
    val resolved = sketches.zipWithIndex.map { case (sketch, i) =>
      val analyzed = resolveExpression(spark, source, sketch.expr, s"sketch ${sketch.describe} of index '$indexName'")
      if (analyzed.references.isEmpty) {
        throw new HyperspaceException(
          s"Sketch ${sketch.describe} of index '$indexName' cannot summarize '${sketch.expr}': it " +
            "references no source column, so it has the same value in every file and cannot tell " +
            "files apart. Summarize an expression over the source's columns.")
      }
      val value = normalize(analyzed)
      sketch.unsupportedType(value.dataType).orElse(sketch.unsupportedSource(value, source)).foreach { why =>
        throw new HyperspaceException(
          s"Sketch ${sketch.describe} of index '$indexName' cannot summarize '${sketch.expr}' " +
            s"(type ${value.dataType.simpleString}): $why.")
      }
      checkColumnNames(sketch, indexName)
      ResolvedSketch(sketch, i, value)
    }
    resolved.groupBy(r => (r.sketch.kind, r.sketch.params, r.value.canonicalized)).values
      .find(_.size > 1).foreach { dups =>
        throw new HyperspaceException(
          s"Index '$indexName' has the same sketch twice: ${dups.map(_.sketch.describe).mkString(" and ")}.")
      }
    resolved
  }

  // The optimizer's expression rewrites that change how a per-row expression is spelled, not
  // what it computes.
  private val normalization: Seq[Rule[LogicalPlan]] = Seq(ReplaceExpressions, ReorderAssociativeOperator,
    ConstantFolding, SimplifyCasts, NullPropagation, BooleanSimplification)

  /**
   * `value` spelled as query filters reach the data skipping rule: after the optimizer folded
   * constants and dropped redundant casts. The analyzer spells `id + 1` over a bigint `id` as
   * `id + CAST(1 AS BIGINT)`, a query's optimized filter as `id + 1L`; a sketch is matched with
   * a filter by semantic equality, so both must be folded alike. Evaluates the same everywhere.
   */
  private[dataskipping] def normalize(value: Expression): Expression = {
    val plan: LogicalPlan = Project(Seq(Alias(value, "__hs_value")()), LocalRelation(value.references.toSeq))
    def step(p: LogicalPlan): LogicalPlan = normalization.foldLeft(p)((q, rule) => rule(q))
    try {
      // A fixpoint, as in the optimizer's batch; one expression gets there in a few rounds.
      var (current, next, rounds) = (plan, step(plan), 1)
      while (!next.fastEquals(current) && rounds < 10) {
        current = next
        next = step(current)
        rounds += 1
      }
      next match {
        case Project(Seq(Alias(child, _)), _) => child
        case _ => value
      }
    } catch {
      // Folding that fails (an ANSI overflow in a constant part) leaves the expression as written.
      case NonFatal(_) => value
    }
  }

  private val ColumnName = "[A-Za-z][A-Za-z0-9_]*".r

  private def checkColumnNames(sketch: Sketch, indexName: String): Unit = {
    val names = sketch.columnNames
    if (names.isEmpty || names.distinct.size != names.size ||
      !names.forall(n => ColumnName.pattern.matcher(n).matches())) {
      throw new HyperspaceException(
        s"Sketch ${sketch.describe} of index '$indexName' has invalid column names " +
          s"${names.mkString("[", ", ", "]")}: they must be distinct identifiers (letters, digits, _).")
    }
  }

  /**
   * The SQL expression `sql` analyzed over `plan`'s output. `what` names it in errors.
   */
  def resolveExpression(spark: SparkSession, plan: LogicalPlan, sql: String, what: String): Expression = {
    val parsed = try spark.sessionState.sqlParser.parseExpression(sql)
    catch {
      case e: Exception =>
        throw new HyperspaceException(s"The expression '$sql' of $what is not valid SQL: ${firstLine(e)}", e)
    }
    val analyzed = try {
      SparkInternals.ofRows(spark, Project(Seq(Alias(parsed, "__hs_value")()), plan)).queryExecution.analyzed
    } catch {
      case e: Exception =>
        throw new HyperspaceException(
          s"The expression '$sql' of $what cannot be resolved against the source (columns: " +
            s"${plan.output.map(_.name).mkString(", ")}): ${firstLine(e)}", e)
    }
    val value = analyzed match {
      case Project(Seq(Alias(child, _)), _) => child
      case _ =>
        throw new HyperspaceException(
          s"The expression '$sql' of $what must be a per-row expression (no aggregates, windows or generators).")
    }
    if (!value.deterministic) {
      throw new HyperspaceException(
        s"The expression '$sql' of $what is not deterministic; a sketch must summarize the same values every time.")
    }
    if (SubqueryExpression.hasSubquery(value)) {
      throw new HyperspaceException(s"The expression '$sql' of $what must not contain subqueries.")
    }
    value
  }

  private def firstLine(e: Throwable): String =
    Option(e.getMessage).map(_.linesIterator.take(1).mkString).getOrElse(e.getClass.getSimpleName)
}
