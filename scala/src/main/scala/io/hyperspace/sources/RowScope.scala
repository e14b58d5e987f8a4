package io.hyperspace.sources

import org.apache.spark.sql.catalyst.expressions.{And, Attribute, EqualNullSafe, Expression, In, IsNull, Literal, Or}
import org.apache.spark.sql.types.StructField

/**
 * Which rows of an index a query reading only some of the index's source files may see: the rows
 * of exactly those files, picked out by a filter over the index's own columns.
 */
sealed trait RowScope {

  /** The filter over `columns` (the index scan's output) that keeps exactly the scoped rows. */
  def condition(columns: Seq[Attribute]): Expression

  /** How the rows are picked (for plans and messages). */
  def describe: String

  protected def column(columns: Seq[Attribute], name: String): Attribute =
    columns.find(_.name.equalsIgnoreCase(name)).getOrElse(
      throw new IllegalStateException(s"The index scan has no column '$name' to scope its rows by"))
}

/** Rows whose lineage column (source file id) is one of `ids`. */
case class ByLineage(lineageColumn: String, ids: Seq[Long]) extends RowScope {
  override def condition(columns: Seq[Attribute]): Expression =
    In(column(columns, lineageColumn), ids.map(Literal(_)))
  override def describe: String = s"the rows of ${ids.size} source file(s), by lineage"
}

/**
 * Rows whose partition columns hold one of `values` (Catalyst values, in `columns`' order; a null
 * is the default partition, matched null-safely).
 */
case class ByPartitionValues(columns: Seq[StructField], values: Seq[Seq[Any]]) extends RowScope {
  override def condition(output: Seq[Attribute]): Expression = {
    val attrs = columns.map(f => column(output, f.name))
    def lit(v: Any, f: StructField) = Literal(v, f.dataType)
    if (attrs.size == 1) {
      val (nulls, nonNull) = values.map(_.head).distinct.partition(_ == null)
      val in: Option[Expression] =
        if (nonNull.isEmpty) None else Some(In(attrs.head, nonNull.map(lit(_, columns.head))))
      val isNull: Option[Expression] = if (nulls.isEmpty) None else Some(IsNull(attrs.head))
      (in ++ isNull).reduce((a, b) => Or(a, b))
    } else {
      values.distinct.map { tuple =>
        attrs.zip(columns).zip(tuple).map { case ((a, f), v) => EqualNullSafe(a, lit(v, f)): Expression }
          .reduce((a, b) => And(a, b))
      }.reduce((a, b) => Or(a, b))
    }
  }
  override def describe: String =
    s"the rows of ${values.distinct.size} partition(s) of ${columns.map(_.name).mkString(", ")}"
}
