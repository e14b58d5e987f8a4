package io.hyperspace.sources

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.sources.DataSourceRegister

import io.hyperspace.HyperspaceException
import io.hyperspace.log.{Source, SourceFile}

/** A DataFrame that is a plain scan of files: what an index can be built over. */
case class FileSource(relation: LogicalRelation, fsRelation: HadoopFsRelation) {

  /** The catalog table the scan reads, when it came from `spark.table(...)`. */
  def table: Option[String] = relation.catalogTable.map(_.identifier.unquotedString)

  /** The data source short name (`parquet`, `csv`, ...). */
  def format: String = fsRelation.fileFormat match {
    case r: DataSourceRegister => r.shortName()
    case other => other.getClass.getName
  }

  /** The read options that shape the data (`header` for CSV, ...), without the paths. */
  def readOptions: Map[String, String] =
    fsRelation.options.filter { case (k, _) => !Set("path", "paths").contains(k.toLowerCase) }

  /**
   * The files the scan reads as this DataFrame sees them (its listing, not refreshed), with
   * size and modification time, sorted by path: what a query over it will read.
   */
  def listedFiles: Seq[(String, Long, Long)] =
    fsRelation.location.listFiles(Nil, Nil)
      .flatMap(_.files.map(f => f.fileStatus))
      .map(s => (s.getPath.toString, s.getLen, s.getModificationTime))
      .sortBy(_._1)

  /** Every file the scan's paths hold now (the listing refreshed first), as [[listedFiles]]. */
  def currentFiles: Seq[(String, Long, Long)] = {
    fsRelation.location.refresh()
    listedFiles
  }

  /** The log's description of this source, files numbered 0, 1, ... in path order. */
  def describe(): Source = Source(
    format = format,
    rootPaths = fsRelation.location.rootPaths.map(_.toString),
    options = readOptions,
    schema = fsRelation.dataSchema.json,
    partitionSchema = fsRelation.partitionSchema.json,
    table = table,
    files = currentFiles.zipWithIndex.map { case ((path, size, mtime), id) =>
      SourceFile(path, size, mtime, id.toLong)
    })
}

object FileSource {

  private val supported =
    "Supported: spark.read.<format>(paths) for file formats (parquet, csv, json, orc, ...), " +
      "with or without hive-partitioned directories, and spark.table(name) for file-based " +
      "catalog tables, with no further transformation (choose the index's columns in its " +
      "IndexConfig instead of with select/filter)."

  /** The file scan `df` is, or an error saying what is supported. */
  def of(df: DataFrame, indexName: String): FileSource = {
    if (df.isStreaming) {
      throw new HyperspaceException(
        s"Cannot create index '$indexName' over a streaming DataFrame. $supported")
    }
    unwrap(df.queryExecution.analyzed) match {
      case Some(source) => source
      case None =>
        throw new HyperspaceException(
          s"Cannot create index '$indexName': the DataFrame is not a plain scan of files " +
            s"(its plan is ${describePlan(df.queryExecution.analyzed)}). $supported")
    }
  }

  private def unwrap(plan: LogicalPlan): Option[FileSource] = plan match {
    case SubqueryAlias(_, child) => unwrap(child)
    case l: LogicalRelation =>
      l.relation match {
        case fs: HadoopFsRelation => Some(FileSource(l, fs))
        case _ => None
      }
    case _ => None
  }

  private def describePlan(plan: LogicalPlan): String =
    plan.collectLeaves().headOption.map(leaf => s"${plan.nodeName} over ${leaf.nodeName}")
      .getOrElse(plan.nodeName)
}
