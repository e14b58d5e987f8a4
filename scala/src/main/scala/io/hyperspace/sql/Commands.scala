package io.hyperspace.sql

import org.apache.spark.sql.{AnalysisException, DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types._

import io.hyperspace.{BuildInfo, Hyperspace, HyperspaceException}
import io.hyperspace.actions.MaintenanceResult
import io.hyperspace.index.{IndexCatalog, IndexConfig, IndexKindConfig}
import io.hyperspace.index.dataskipping.RelationSkippingStats
import io.hyperspace.indexed.{IndexedDataFrame, IndexedTables}
import io.hyperspace.sources.FileSource

/**
 * A Hyperspace SQL statement. Each one calls the [[Hyperspace]] facade of the session it runs
 * in, so SQL, Scala and Python share one implementation, one set of checks and one set of error
 * messages. Statements run eagerly, as Spark's own commands do, and their rows are the result.
 */
sealed abstract class HyperspaceCommand(schema: StructType) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = DataTypeUtils.toAttributes(schema)

  protected def hyperspace(spark: SparkSession): Hyperspace = Hyperspace(spark)

  // Spark copies a node through its constructor and skips no-argument ones (it takes them for
  // Kryo's), so a command without arguments could not be copied, e.g. canonicalized, as the
  // cache manager does with every plan once the session has cached data.
  override def makeCopy(newArgs: Array[AnyRef]): LogicalPlan =
    if (newArgs.isEmpty) getClass.getConstructor().newInstance() else super.makeCopy(newArgs)
}

object HyperspaceCommand {
  val noColumns: StructType = new StructType()

  val maintenanceSchema: StructType = StructType(Seq(
      StructField("indexName", StringType, nullable = false),
      StructField("operation", StringType, nullable = false),
      StructField("mode", StringType, nullable = false),
      StructField("changed", BooleanType, nullable = false),
      StructField("logVersion", LongType, nullable = false),
      StructField("appendedFiles", IntegerType, nullable = false),
      StructField("deletedFiles", IntegerType, nullable = false),
      StructField("mergedFiles", IntegerType, nullable = false),
      StructField("message", StringType, nullable = false)))

  def maintenanceRow(r: MaintenanceResult): Seq[Row] = Seq(Row(r.indexName, r.operation, r.mode, r.changed,
      r.logVersion, r.appendedFiles, r.deletedFiles, r.mergedFiles, r.message))

  def textSchema(column: String): StructType = StructType(Seq(StructField(column, StringType, nullable = false)))

  /**
   * The DataFrame a statement's `ON <table>` names: a catalog table, a temporary view, or a file
   * scan such as parquet.`/data/events`. A view's definition stands for the view, so that a view
   * over `spark.read.parquet(...)` (how a Spark Connect client passes a DataFrame) is the same
   * source as the DataFrame; whether that is a plain scan of files is for [[FileSource]] to say.
   */
  def sourceDataFrame(spark: SparkSession, table: String): DataFrame =
    SparkInternals.ofRows(spark, withoutViews(spark.table(table).queryExecution.analyzed))

  private def withoutViews(plan: LogicalPlan): LogicalPlan = plan match {
    case SubqueryAlias(_, view: View) => withoutViews(view.child)
    case view: View => withoutViews(view.child)
    case other => other
  }

  def query(spark: SparkSession, plan: LogicalPlan): DataFrame = SparkInternals.ofRows(spark, plan)

  private def schemaOf(columns: Seq[StructField]): StructType = StructType(columns)
  val listSchema: StructType = schemaOf(IndexCatalog.listColumns)
  val describeSchema: StructType = schemaOf(IndexCatalog.allColumns)
  val summarySchema: StructType = schemaOf(IndexCatalog.readableColumns)

  val indexedTableSchema: StructType = StructType(Seq(
      StructField("name", StringType, nullable = false),
      StructField("keyColumn", StringType, nullable = false),
      StructField("version", IntegerType, nullable = false),
      StructField("partitions", IntegerType, nullable = false),
      StructField("rows", LongType, nullable = false),
      StructField("cachedPartitions", LongType, nullable = false)))

  def indexedTableRow(name: String, idf: IndexedDataFrame): Row = {
    val stats = idf.memoryStats
    Row(name, idf.keyColumn, idf.version, idf.numPartitions, stats("rows"), stats("cachedPartitions"))
  }
}

import HyperspaceCommand._

/** `CREATE HYPERSPACE INDEX name ON source ...`: [[Hyperspace.createIndex]]. */
case class CreateIndexCommand(source: String, config: IndexKindConfig) extends HyperspaceCommand(noColumns) {
  override def run(spark: SparkSession): Seq[Row] = {
    val df = try sourceDataFrame(spark, source)
    catch {
      case e: AnalysisException =>
        throw new HyperspaceException(s"Cannot create index '${config.name}': cannot read its source $source: " +
            e.getMessage, e)
    }
    hyperspace(spark).createIndex(df, config)
    Nil
  }
}

/** `REFRESH HYPERSPACE INDEX name [FULL | INCREMENTAL | QUICK]`: [[Hyperspace.refreshIndex]]. */
case class RefreshIndexCommand(name: String, mode: Option[String]) extends HyperspaceCommand(maintenanceSchema) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    maintenanceRow(mode.fold(hs.refreshIndex(name))(hs.refreshIndex(name, _)))
  }
}

/** `OPTIMIZE HYPERSPACE INDEX name [QUICK | FULL]`: [[Hyperspace.optimizeIndex]]. */
case class OptimizeIndexCommand(name: String, mode: Option[String]) extends HyperspaceCommand(maintenanceSchema) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    maintenanceRow(mode.fold(hs.optimizeIndex(name))(hs.optimizeIndex(name, _)))
  }
}

/** `VACUUM HYPERSPACE INDEX name [RETAIN n HOURS]`: [[Hyperspace.vacuumIndex]]. */
case class VacuumIndexCommand(name: String, retainHours: Option[Double]) extends HyperspaceCommand(maintenanceSchema) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    maintenanceRow(retainHours.fold(hs.vacuumIndex(name))(hs.vacuumIndex(name, _)))
  }
}

/** `DROP HYPERSPACE INDEX name`: the soft delete [[Hyperspace.deleteIndex]]. */
case class DropIndexCommand(name: String) extends HyperspaceCommand(noColumns) {
  override def run(spark: SparkSession): Seq[Row] = { hyperspace(spark).deleteIndex(name); Nil }
}

/** `RESTORE HYPERSPACE INDEX name`: [[Hyperspace.restoreIndex]]. */
case class RestoreIndexCommand(name: String) extends HyperspaceCommand(noColumns) {
  override def run(spark: SparkSession): Seq[Row] = { hyperspace(spark).restoreIndex(name); Nil }
}

/** `CANCEL HYPERSPACE INDEX name [FORCE]`: [[Hyperspace.cancel]]. */
case class CancelIndexCommand(name: String, force: Boolean) extends HyperspaceCommand(noColumns) {
  override def run(spark: SparkSession): Seq[Row] = { hyperspace(spark).cancel(name, force); Nil }
}

/**
 * `SHOW HYPERSPACE INDEXES [ON source]`: the rows of [[Hyperspace.indexes]], with `ON` those of
 * the indexes built over that source (the same catalog table, or the same root paths).
 */
case class ShowIndexesCommand(source: Option[String]) extends HyperspaceCommand(listSchema) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    val all = hs.indexes.collect().toSeq
    source.fold(all) { table =>
      val src = FileSource.of(sourceDataFrame(spark, table), s"(any, as SHOW HYPERSPACE INDEXES ON $table)")
      val roots = src.fsRelation.location.rootPaths.map(_.toString).toSet
      all.filter { row =>
        val described = hs.index(row.getAs[String]("name")).collect().head
        val table = Option(described.getAs[String]("sourceTable"))
        (table.isDefined && table == src.table) ||
        (table.isEmpty && src.table.isEmpty &&
          described.getSeq[String](described.fieldIndex("sourceRootPaths")).toSet == roots)
      }
    }
  }
}

/** `SHOW HYPERSPACE INDEX SUMMARY`: the rows of [[Hyperspace.listIndexes]], in words. */
case class ShowIndexSummaryCommand() extends HyperspaceCommand(summarySchema) {
  override def run(spark: SparkSession): Seq[Row] = hyperspace(spark).listIndexes.collect().toSeq
}

/** `DESCRIBE HYPERSPACE INDEX name`: the row of [[Hyperspace.index]]. */
case class DescribeIndexCommand(name: String) extends HyperspaceCommand(describeSchema) {
  override def run(spark: SparkSession): Seq[Row] = hyperspace(spark).index(name).collect().toSeq
}

/** `SHOW HYPERSPACE INDEX KINDS`: [[Hyperspace.indexKinds]]. */
case class ShowIndexKindsCommand() extends HyperspaceCommand(textSchema("kind")) {
  override def run(spark: SparkSession): Seq[Row] = hyperspace(spark).indexKinds.map(Row(_))
}

/**
 * `SHOW HYPERSPACE STATUS`: the jar's version, the Spark version it was built for, the session's
 * system path and whether rewriting is on — what a client without a JVM (Spark Connect) needs.
 */
case class ShowStatusCommand() extends HyperspaceCommand(StructType(Seq(
        StructField("version", StringType, nullable = false),
        StructField("sparkVersion", StringType, nullable = false),
        StructField("systemPath", StringType, nullable = false),
        StructField("enabled", BooleanType, nullable = false)))) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    Seq(Row(BuildInfo.version, BuildInfo.sparkVersion, hs.systemPath, hs.isEnabled))
  }
}

/**
 * `SHOW HYPERSPACE SKIPPING STATS [FOR query]`: per relation a data skipping index pruned, the
 * counts of [[Hyperspace.skippingStats]] (or, without a query, [[Hyperspace.lastQuerySkippingStats]]),
 * with the per-index detail as JSON in `detail` (`RelationSkippingStats.toJson` of that relation).
 */
case class ShowSkippingStatsCommand(query: Option[LogicalPlan]) extends HyperspaceCommand(StructType(Seq(
        StructField("relation", StringType, nullable = false),
        StructField("filter", StringType, nullable = false),
        StructField("filesTotal", IntegerType, nullable = false),
        StructField("bytesTotal", LongType, nullable = false),
        StructField("filesSkipped", IntegerType, nullable = false),
        StructField("bytesSkipped", LongType, nullable = false),
        StructField("filesRead", IntegerType, nullable = false),
        StructField("bytesRead", LongType, nullable = false),
        StructField("detail", StringType, nullable = false)))) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    val stats = query.fold(hs.lastQuerySkippingStats)(q => hs.skippingStats(HyperspaceCommand.query(spark, q)))
    stats.map { s =>
      Row(s.relation, s.filter, s.filesTotal, s.bytesTotal, s.filesSkipped, s.bytesSkipped, s.filesRead,
        s.bytesRead, RelationSkippingStats.toJson(Seq(s)))
    }
  }
}

/** `EXPLAIN HYPERSPACE [VERBOSE] query`: [[Hyperspace.explain]], one row in column `plan`. */
case class ExplainHyperspaceCommand(query: LogicalPlan, verbose: Boolean)
  extends HyperspaceCommand(textSchema("plan")) {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(hyperspace(spark).explain(HyperspaceCommand.query(spark, query), verbose)))
}

/** `EXPLAIN HYPERSPACE WHY NOT [INDEX name] query`: [[Hyperspace.whyNot]], one row in column `report`. */
case class WhyNotCommand(query: LogicalPlan, indexName: Option[String])
  extends HyperspaceCommand(textSchema("report")) {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(hyperspace(spark).whyNot(HyperspaceCommand.query(spark, query), indexName.orNull)))
}

/** `EXPLAIN HYPERSPACE WHAT IF INDEX ... query`: [[Hyperspace.whatIf]], one row in column `report`. */
case class WhatIfCommand(query: LogicalPlan, configs: Seq[IndexConfig])
  extends HyperspaceCommand(textSchema("report")) {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(hyperspace(spark).whatIf(HyperspaceCommand.query(spark, query), configs: _*)))
}

/**
 * `CACHE INDEXED TABLE name ON (key) [PARTITIONS n] [AS query]`: an Indexed DataFrame over the
 * query (or over the table or view `name` itself), cached and named `name` ([[IndexedTables]]).
 */
case class CacheIndexedTableCommand(name: String, key: String, partitions: Option[Int],
    query: Option[LogicalPlan]) extends HyperspaceCommand(indexedTableSchema) {
  override def run(spark: SparkSession): Seq[Row] = {
    val source = query.fold(spark.table(name))(HyperspaceCommand.query(spark, _))
    Seq(indexedTableRow(name, IndexedTables.cache(spark, name, key, partitions, source)))
  }
}

/** `INSERT INTO INDEXED TABLE name query`: the query's rows appended ([[IndexedTables.append]]). */
case class InsertIntoIndexedTableCommand(name: String, query: LogicalPlan)
  extends HyperspaceCommand(indexedTableSchema) {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(indexedTableRow(name, IndexedTables.append(spark, name, HyperspaceCommand.query(spark, query))))
}

/** `UNCACHE INDEXED TABLE [IF EXISTS] name`. */
case class UncacheIndexedTableCommand(name: String, ifExists: Boolean) extends HyperspaceCommand(noColumns) {
  override def run(spark: SparkSession): Seq[Row] = {
    IndexedTables.uncache(spark, name, ifExists)
    Nil
  }
}

/**
 * `LOOKUP INDEXED TABLE name KEYS (value, ...)`: the rows of the indexed table `name` whose key is
 * one of the values ([[IndexedDataFrame.lookup]]). A command's rows are computed when the
 * statement runs and travel as a local result, so a Spark Connect client gets them without a
 * query planned over the index, and without a job when the driver holds the keys' partitions
 * (local mode). `keys` is the one-row select list of the values.
 */
case class LookupIndexedTableCommand(name: String, keys: LogicalPlan) extends LeafRunnableCommand {
  // The table's columns, from the session the statement is analysed in.
  override lazy val output: Seq[Attribute] =
    DataTypeUtils.toAttributes(IndexedTables.get(SparkSession.active, name, "look up in").schema)

  override def run(spark: SparkSession): Seq[Row] = {
    // The values are constants: analysed and evaluated here, with no query run for them.
    val values = HyperspaceCommand.query(spark, keys).queryExecution.analyzed match {
      case Project(list, _) => list.map(_.transformUp { case a: Alias => a.child }).map { e =>
          if (!e.foldable) {
            throw new HyperspaceException(s"Cannot look up ${e.sql} in indexed table '$name': " +
              "KEYS takes constant values.")
          }
          Literal.create(e.eval(), e.dataType)
        }
      case other => throw new IllegalStateException(s"unexpected plan ${other.nodeName}")
    }
    val toScala = CatalystTypeConverters.createToScalaConverter(schema)
    IndexedTables.get(spark, name, "look up in").lookupLiterals(values).map(r => toScala(r).asInstanceOf[Row])
  }
}

/** `SHOW INDEXED TABLES`: the session's indexed tables. */
case class ShowIndexedTablesCommand() extends HyperspaceCommand(indexedTableSchema) {
  override def run(spark: SparkSession): Seq[Row] =
    IndexedTables.list(spark).map { case (name, idf) => indexedTableRow(name, idf) }
}

/**
 * `SHOW HYPERSPACE RECOMMENDATIONS [BUDGET n] [LIMIT k] [WITH REJECTED] FOR 'query' [WEIGHT w], ...`:
 * [[Hyperspace.recommend]], one row per recommended index in rank order; `sourceSql` is the
 * `ON` part of the `CREATE HYPERSPACE INDEX` statement that builds it, `evidence` the queries
 * it serves as JSON. `WITH REJECTED` adds, after them, one row per candidate not recommended:
 * no rank, build bytes or benefit, and its `reason` and `detail` (one advisor run answers both,
 * which is how a Spark Connect client gets the rejected list).
 */
object RecommendCommand {
  val schema: StructType = StructType(Seq(
      StructField("rank", IntegerType, nullable = true),
      StructField("name", StringType, nullable = false),
      StructField("source", StringType, nullable = false),
      StructField("sourceSql", StringType, nullable = true),
      StructField("indexedColumns", ArrayType(StringType, containsNull = false), nullable = false),
      StructField("includedColumns", ArrayType(StringType, containsNull = false), nullable = false),
      StructField("estimatedSizeBytes", LongType, nullable = false),
      StructField("estimatedBuildBytes", LongType, nullable = true),
      StructField("benefit", LongType, nullable = true),
      StructField("evidence", StringType, nullable = false),
      StructField("kind", StringType, nullable = false),
      StructField("config", StringType, nullable = false),
      StructField("reason", StringType, nullable = true),
      StructField("detail", StringType, nullable = true)))

  def rows(recommendations: io.hyperspace.advisor.Recommendations, withRejected: Boolean): Seq[Row] = {
    val recommended = recommendations.indexes.map { r =>
      Row(r.rank, r.config.name, r.source, r.sourceSql.orNull, r.indexedColumns, r.includedColumns,
        r.estimatedSizeBytes, r.estimatedBuildBytes, r.benefit, io.hyperspace.advisor.QueryEvidence.toJson(r.queries),
        r.config.kindName, r.configJson, null, null)
    }
    val rejected = if (!withRejected) Nil
    else recommendations.rejected.map { c =>
      val (indexed, included) = io.hyperspace.advisor.RecommendedIndex.columnsOf(c.config)
      Row(null, c.name, c.source, null, indexed, included, c.estimatedSizeBytes, null, null, "[]",
        c.config.kindName, io.hyperspace.advisor.RecommendedIndex.configJson(c.config), c.reason, c.detail)
    }
    recommended ++ rejected
  }
}

case class RecommendCommand(
    queries: Seq[(String, Double)],
    budgetBytes: Option[Long],
    maxIndexes: Option[Int],
    withRejected: Boolean)
  extends HyperspaceCommand(RecommendCommand.schema) {
  override def run(spark: SparkSession): Seq[Row] = {
    val hs = hyperspace(spark)
    val workload = queries.map { case (q, w) => io.hyperspace.advisor.WorkloadQuery.sql(spark, q, w) }
    RecommendCommand.rows(hs.recommend(workload, budgetBytes, maxIndexes), withRejected)
  }
}

/** `SHOW HYPERSPACE RECOMMENDATIONS ... FOR RECORDED QUERIES`: the rows of [[RecommendCommand]]. */
case class RecommendRecordedCommand(budgetBytes: Option[Long], maxIndexes: Option[Int], withRejected: Boolean)
  extends HyperspaceCommand(RecommendCommand.schema) {
  override def run(spark: SparkSession): Seq[Row] =
    RecommendCommand.rows(hyperspace(spark).recommendRecorded(budgetBytes, maxIndexes), withRejected)
}

/** `SHOW HYPERSPACE RECORDED QUERIES`: one row per recorded query, least recently run first. */
case class ShowRecordedQueriesCommand()
  extends HyperspaceCommand(StructType(Seq(
        StructField("query", StringType, nullable = false),
        StructField("frequency", LongType, nullable = false)))) {
  override def run(spark: SparkSession): Seq[Row] =
    hyperspace(spark).recordedQueries.map(q => Row(q.label, q.frequency))
}

/** `CLEAR HYPERSPACE RECORDED QUERIES`: forgets them; one row, how many distinct queries there were. */
case class ClearRecordedQueriesCommand()
  extends HyperspaceCommand(StructType(Seq(StructField("cleared", IntegerType, nullable = false)))) {
  override def run(spark: SparkSession): Seq[Row] = Seq(Row(hyperspace(spark).clearRecordedQueries()))
}
