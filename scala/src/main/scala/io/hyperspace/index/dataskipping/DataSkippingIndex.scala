package io.hyperspace.index.dataskipping

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, AggregateFunction, Count}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.functions.{broadcast, coalesce, col, lit, raise_error}
import org.apache.spark.sql.hyperspace.{DataSkippingInternals, SparkInternals}
import org.apache.spark.sql.types.LongType

import io.hyperspace.HyperspaceException
import io.hyperspace.sources.SourcePaths

/**
 * The data skipping index kind's core: resolving sketches, building the sketch table and
 * translating filters. (The actions, the log entry and the optimizer rule call these.)
 *
 * The sketch table has one row per non-empty source file: [[FileIdColumn]] (the log's
 * `SourceFile.id`), [[RowCountColumn]] and each sketch's columns (`s<ordinal>_<name>`).
 * A source file with no row in the table (an empty file, or one added after the index was built)
 * is always read: callers skip exactly the files [[skippedFileIds]] returns, never "every file
 * not kept".
 */
object DataSkippingIndex {
  /** The kind name in the index log. */
  val Kind = "DataSkippingIndex"
  /** The version of this kind's sketch table layout. */
  val KindVersion = 1
  /** The sketch table's source file id column (the log's `SourceFile.id`). */
  val FileIdColumn = "_data_file_id"
  /** The sketch table's column with each file's number of rows. */
  val RowCountColumn = "_num_rows"
  /** The `IndexDefinition.properties` key holding the sketches' JSON ([[SketchSerde.toJson]]). */
  val SketchesProperty = "sketches"

  /** The index definition properties recording `sketches`. */
  def properties(sketches: Seq[Sketch]): Map[String, String] = Map(SketchesProperty -> SketchSerde.toJson(sketches))

  /** The sketches recorded in index definition properties by [[properties]]. */
  def sketchesOf(properties: Map[String, String]): Seq[Sketch] =
    SketchSerde.fromJson(properties.getOrElse(SketchesProperty,
        throw new HyperspaceException(s"A data skipping index definition has no '$SketchesProperty' property.")))

  /** [[ResolvedSketch.resolveAll]]: `sketches` resolved against `source` (a file scan plan). */
  def resolveSketches(spark: SparkSession, indexName: String, sketches: Seq[Sketch], source: LogicalPlan)
      : Seq[ResolvedSketch] = ResolvedSketch.resolveAll(spark, indexName, sketches, source)

  /**
   * The sketch table of `source` (a DataFrame that is a file scan, e.g. `FileSource.relation`),
   * for `sketches` resolved against `source.queryExecution.analyzed`: one row per source file
   * with at least one row. `fileIds` maps each file's path as the listing spells it (the log's
   * `SourceFile.path`) to its id; a row from a file missing in it (the source changed during the
   * build) fails the build rather than being recorded under no id.
   */
  def buildSketchTable(source: DataFrame, sketches: Seq[ResolvedSketch], fileIds: Map[String, Long]): DataFrame = {
    val spark = source.sparkSession
    import spark.implicits._
    val plan = source.queryExecution.analyzed
    val filePath = ResolvedSketch.resolveExpression(spark, plan, "_metadata.file_path", "the sketch table build")
    val values = sketches.map(s => Alias(s.value, s"__hs_v${s.ordinal}")())
    val rows = SparkInternals.ofRows(spark, Project(Alias(filePath, "__hs_file_path")() +: values, plan))
    // Rows name their file as `_metadata.file_path` does: percent-encoded, unlike the listing.
    val ids = fileIds.toSeq.map { case (path, id) => (SourcePaths.asMetadataPath(path), id) }
      .toDF("__hs_file_path", "__hs_file_id")
    val fileId = coalesce(col("__hs_file_id"),
      raise_error(lit("A source file changed while the data skipping index was being built; retry.")).cast(LongType))
    val withIds = rows.join(broadcast(ids), Seq("__hs_file_path"), "left").withColumn(FileIdColumn, fileId)
    val projected = withIds.queryExecution.analyzed.output
    val aggregates = Alias(aggregate(Count(Seq(Literal(1)))), RowCountColumn)() +: sketches.flatMap { s =>
      val value = projected.find(_.name == s"__hs_v${s.ordinal}").get
      val aggs = s.sketch.aggregates(value)
      if (aggs.size != s.sketch.columnNames.size) {
        throw new HyperspaceException(
          s"Sketch ${s.sketch.describe} returned ${aggs.size} aggregates for ${s.sketch.columnNames.size} columns.")
      }
      aggs.zip(s.tableColumns).map { case (a, name) => Alias(aggregate(a), name)() }
    }
    withIds.groupBy(col(FileIdColumn))
      .agg(DataSkippingInternals.column(aggregates.head), aggregates.tail.map(DataSkippingInternals.column): _*)
  }

  // Wraps bare aggregate functions (a sketch may return Min(x) or f(Min(x), Max(x))).
  private def aggregate(e: Expression): Expression = e match {
    case ae: AggregateExpression => ae
    case af: AggregateFunction => af.toAggregateExpression()
    case other => other.withNewChildren(other.children.map(aggregate))
  }

  /**
   * The condition over the sketch table (`sketchTable`: its output attributes) for a query
   * `filter` over the relation the sketches were resolved against; None when no sketch can tell
   * anything. A file may be skipped only where the condition is FALSE (see [[skippedFileIds]]);
   * it is NULL, never an error, where evaluating it fails.
   */
  def translate(filter: Expression, sketches: Seq[ResolvedSketch], sketchTable: Seq[Attribute]): Option[Expression] = {
    def attribute(name: String): Attribute = sketchTable.find(_.name == name).getOrElse {
      throw new HyperspaceException(
        s"The sketch table has no column $name (it has ${sketchTable.map(_.name).mkString(", ")}).")
    }
    val rowCount = attribute(RowCountColumn)
    // Each file's partition values, so that sketches can compare their expression with a
    // partition column (`b = a`) file by file.
    val partitionValues = AttributeMap(sketches.collect {
      case s @ ResolvedSketch(_: PartitionSketch, _, a: Attribute) => a -> attribute(s.tableColumns.head)
    })
    val bound = sketches.map { s =>
      FilterTranslator.Bound(s.sketch,
        new SketchInput(s.value, s.tableColumns.map(attribute), rowCount, partitionValues))
    }
    // A sketch evaluates parts of the filter on its own values (a value list on each value), and
    // those parts may fail where the query would not reach them (`c != 0 AND 10 / c > 1` on the
    // value 0): a file whose condition fails is kept (NULL), the query never fails.
    FilterTranslator.translate(filter, bound).map(TryEval)
  }

  /**
   * The ids of the files `condition` (from [[translate]] over `sketchTable`'s attributes) rules
   * out: those whose row makes it FALSE. Files without a row are never among them.
   */
  def skippedFileIds(sketchTable: DataFrame, condition: Expression): Set[Long] = {
    val skip = Not(Coalesce(Seq(condition, Literal.TrueLiteral)))
    sketchTable.filter(DataSkippingInternals.column(skip)).select(col(FileIdColumn))
      .collect().map(_.getLong(0)).toSet
  }
}
