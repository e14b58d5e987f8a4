package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.First
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.DataType

import io.hyperspace.shims.FileRelation

/**
 * The value of a hive partition column (`.../col=value/file`) for each file: constant within a
 * file, so any predicate that depends on the row only through that column is evaluated on it
 * exactly. Skipping by partition values lets a query skip files before Spark lists partitions
 * the index already knows; the index adds one per partition column of a partitioned source.
 *
 * Only partition columns are accepted: on any other column one value would not describe a file.
 */
case class PartitionSketch(expr: String) extends Sketch {
  override def kind: String = PartitionSketch.Kind
  override def columnNames: Seq[String] = Seq("value")
  override def unsupportedType(dataType: DataType): Option[String] = SketchTypes.requireHashable(dataType)

  override def unsupportedSource(value: Expression, source: LogicalPlan): Option[String] = {
    val partitionColumns = source.collect {
      case FileRelation(r, fs) =>
        r.output.filter(a => fs.partitionSchema.fieldNames.contains(a.name))
    }.flatten
    value match {
      case a: Attribute if partitionColumns.exists(_.semanticEquals(a)) => None
      case _ =>
        Some("it summarizes hive partition columns only; the source's partition columns are " +
          (if (partitionColumns.isEmpty) "none" else partitionColumns.map(_.name).mkString(", ")))
    }
  }

  override def aggregates(value: Expression): Seq[Expression] = Seq(First(value, ignoreNulls = false))

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] =
    input.substitute(predicate, input.column(0)).map(p => Coalesce(Seq(p, Literal.FalseLiteral)))
}

object PartitionSketch {
  /** The kind name in the index log. */
  val Kind = "Partition"
}
