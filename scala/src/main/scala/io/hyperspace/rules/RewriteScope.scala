package io.hyperspace.rules

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, FileSourceMetadataAttribute, InputFileBlockLength, InputFileBlockStart, InputFileName}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, V2CreateTableAsSelectPlan, V2WriteCommand}
import org.apache.spark.sql.execution.command.DataWritingCommand
import org.apache.spark.sql.execution.datasources.{InsertIntoHadoopFsRelationCommand, LogicalRelation}

import io.hyperspace.index.RewriteFamily
import io.hyperspace.log.LogEntry

/**
 * How much of a plan Hyperspace may rewrite, decided once per plan before any rule runs, with
 * the reason when not everything (so whyNot can say it):
 *
 *  - [[RewriteScope.All]]: every rewrite.
 *  - [[RewriteScope.SkippingOnly]]: the plan reads file metadata. A covering index scan would
 *    report its own files' names, sizes, blocks and row positions; data skipping only drops
 *    files from the source's own listing, so the values stay the source's.
 *  - [[RewriteScope.NoRewrite]]: the plan writes data an index was built from (or a target
 *    Hyperspace cannot tell): its query must read exactly what it would read without
 *    Hyperspace.
 */
sealed trait RewriteScope {
  /** Whether covering indexes may replace source scans. */
  def coveringAllowed: Boolean
  /** Whether data skipping indexes may prune source file lists. */
  def skippingAllowed: Boolean
  /** Why some rewrites are not made; None when all are allowed. */
  def reason: Option[Reason]

  /** Whether indexes whose kind offers `family` may rewrite here (a kind offering none is not limited). */
  def allows(family: RewriteFamily): Boolean = family match {
    // A seek reads row groups as splits of their own, so block start and length would differ.
    case RewriteFamily.CoveringScan | RewriteFamily.FilterScan | RewriteFamily.RowGroupSeek => coveringAllowed
    case RewriteFamily.FileSkipping => skippingAllowed
    case RewriteFamily.NoRewrite => true
  }
}

object RewriteScope {
  case object All extends RewriteScope {
    val coveringAllowed = true
    val skippingAllowed = true
    val reason: Option[Reason] = None
  }

  case class SkippingOnly(why: Reason) extends RewriteScope {
    val coveringAllowed = false
    val skippingAllowed = true
    def reason: Option[Reason] = Some(why)
  }

  case class NoRewrite(why: Reason) extends RewriteScope {
    val coveringAllowed = false
    val skippingAllowed = false
    def reason: Option[Reason] = Some(why)
  }

  /** The scope of `plan`, given the ACTIVE `indexes` (whose sources a write may target). */
  def of(plan: LogicalPlan, indexes: Seq[LogEntry]): RewriteScope =
    WriteCommands.indexedTarget(plan, indexes).map(why => NoRewrite(Reason.WritesIndexedData(why))).getOrElse {
      val metadata = FileMetadataReads.in(plan)
      if (metadata.isEmpty) All else SkippingOnly(Reason.ReadsFileMetadata(metadata))
    }
}

/**
 * The file-metadata expressions a plan reads: `input_file_name()`, `input_file_block_start()`,
 * `input_file_block_length()` and the hidden `_metadata` column (file_path, file_name, file_size,
 * file_block_start, file_block_length, file_modification_time, row_index, ...), in the plan or
 * its subqueries. Their values come from the file a scan is reading.
 */
object FileMetadataReads {

  /** Names of the file-metadata expressions of `plan`, sorted; empty when it reads none. */
  def in(plan: LogicalPlan): Seq[String] = {
    val found = plan.collectWithSubqueries {
      case r: LogicalRelation if r.output.exists(isMetadataColumn) => Seq("_metadata")
      case node => node.expressions.flatMap(names)
    }
    found.flatten.distinct.sorted
  }

  private def names(e: Expression): Seq[String] = e.collect {
    case _: InputFileName => "input_file_name()"
    case _: InputFileBlockStart => "input_file_block_start()"
    case _: InputFileBlockLength => "input_file_block_length()"
    case a: Attribute if isMetadataColumn(a) => "_metadata"
  }

  private def isMetadataColumn(a: Attribute): Boolean = FileSourceMetadataAttribute.isValid(a.metadata)
}

/**
 * Write commands whose plan Hyperspace leaves alone. Spark optimizes a write's query as a child
 * of the command (`InsertIntoHadoopFsRelationCommand`, also under INSERT OVERWRITE DIRECTORY and
 * CREATE TABLE AS SELECT, and V2 writes), so the rule sees the command at the root. A write to
 * a path holding (or inside) an indexed source's files rewrites that source: its query reads
 * the source as it is. A write whose target Hyperspace cannot tell (V2 writes, other commands)
 * is treated as such a write. Writes elsewhere (an ETL job writing a new path) are rewritten.
 *
 * Table formats' own commands (Delta DELETE / UPDATE / MERGE / OPTIMIZE) plan their queries as
 * separate DataFrames; those read their file selection through the table format's file index,
 * which no index serves (see [[CandidateIndexes.sourceScan]]), and locate rows with file
 * metadata (see [[FileMetadataReads]]).
 */
object WriteCommands {

  /** Why `plan` must not be rewritten because it writes an indexed source; None otherwise. */
  def indexedTarget(plan: LogicalPlan, indexes: Seq[LogEntry]): Option[String] =
    plan.collectFirst {
      case w: InsertIntoHadoopFsRelationCommand => Some(w.outputPath)
      case _: DataWritingCommand | _: V2WriteCommand | _: V2CreateTableAsSelectPlan => None
    }.flatMap {
      case Some(output) =>
        indexes.find(_.source.rootPaths.exists(root => overlaps(new Path(root), output))).map { e =>
          s"the query writes to $output, which holds the data index '${e.name}' was built from"
        }
      case None =>
        Some(s"the query is a ${plan.nodeName} whose target Hyperspace cannot tell apart from an indexed source")
    }

  /** Whether one path is the other or lies under it (scheme and authority aside). */
  private def overlaps(a: Path, b: Path): Boolean = {
    def segments(p: Path) = p.toUri.getPath.split('/').filter(_.nonEmpty).toSeq
    val (x, y) = (segments(a), segments(b))
    x.startsWith(y) || y.startsWith(x)
  }
}
