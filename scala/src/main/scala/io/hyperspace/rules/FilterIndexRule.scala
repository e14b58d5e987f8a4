package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, IsNotNull, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

import io.hyperspace.index.covering.{CoveringIndex, IndexColumn, IndexFileIndex}
import io.hyperspace.index.RewriteFamily
import io.hyperspace.index.dataskipping.SkippedFilesIndex
import io.hyperspace.index.zorder.{ZOrderCoveringIndex, ZOrderFileIndex}
import io.hyperspace.log.LogEntry

/**
 * Filter (+ Project) over a file scan → the same over a covering index, when the index's leading
 * indexed column is referenced by the filter and the index covers every column the query needs.
 * The index is a bucketed relation, so Spark prunes buckets for `=` / `IN` on a single indexed
 * column, and its sorted files let Parquet row-group statistics skip data for ranges.
 *
 * A Z-order covering index serves a filter on any of its indexed columns: it reads only the
 * files whose recorded ranges can match. Among usable indexes the one reading the fewest bytes
 * for this filter wins, each file counted with Spark's `spark.sql.files.openCostInBytes`: a
 * covering index's bucket pruning for equalities against a Z-order index's range pruning
 * ([[IndexRanking.bestBy]]).
 *
 * When a data skipping index already pruned the scan's files, the covering index replaces the
 * scan only if it reads fewer bytes: its data files (those of the buckets an equality filter
 * selects, when one does) plus hybrid scan's appended files, against the files left to read.
 */
object FilterIndexRule extends IndexRewrite with PredicateHelper {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan =
    plan transformDown {
      // The columns the chain needs come from ScanChain, as for the join and aggregate rules.
      // Struct fields the chain reads (`nested.leaf.id`) must be index columns themselves.
      case chain @ ScanChain(relation, _) if filterOf(chain).isDefined =>
        val reads = StructFields.readsOf(chain, relation)
        bestIndex(spark, indexes, relation, reads, filterOf(chain).get, log)
          .map { case (c, covered) =>
            StructFields.replaceScan(spark, chain, relation, c, covered, keepBuckets = false)
          }
          .getOrElse(chain)
    }

  /** The condition of a Filter directly over the scan, under an optional Project. */
  private def filterOf(chain: LogicalPlan): Option[Expression] = chain match {
    case Project(_, Filter(condition, _: LogicalRelation)) => Some(condition)
    case Filter(condition, _: LogicalRelation) => Some(condition)
    case _ => None
  }

  private def bestIndex(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      relation: LogicalRelation,
      reads: StructFields.Reads,
      condition: Expression,
      log: DecisionLog): Option[(IndexCandidate, Map[StructFields.FieldRead, IndexColumn])] = {
    val resolver = spark.sessionState.conf.resolver
    // The IS NOT NULL filters Spark infers for joins are no reason to read an index.
    val filtered = StructFields.readsOf(
      splitConjunctivePredicates(condition).filterNot(_.isInstanceOf[IsNotNull]), relation)
    def filtersOn(column: IndexColumn): Boolean =
      if (column.isNested) filtered.fields.exists(StructFields.isColumn(column, _, resolver))
      else filtered.whole.exists(a => resolver(a.name, column.path.head))
    // A scan data skipping already pruned keeps its pruning unless the index reads fewer bytes.
    val prunedBytes = relation.relation match {
      case fs: HadoopFsRelation => fs.location match {
          case d: SkippedFilesIndex => Some(d.stats.bytesRead)
          case _ => None
        }
      case _ => None
    }
    val candidates = CandidateIndexes.forRelation(spark, indexes, relation, reads.whole, log,
      Set(RewriteFamily.CoveringScan, RewriteFamily.FilterScan))
    val conjuncts = splitConjunctivePredicates(condition)
    val usable = candidates.flatMap { found =>
      // A Z-order index reads the files its ranges cannot rule out for this filter; a covering
      // index reads its sorted files as a lookup (IndexScan.scanFor).
      val zorder = ZOrderCoveringIndex.isZOrder(found.entry)
      val c = found.copy(filters = conjuncts)
      val indexed = CoveringIndex.columnsOf(c.entry.index)._1
      val coverage = StructFields.coverage(c.entry, reads.fields, resolver)
      if (coverage.isEmpty)
        log.reject(c.entry, Reason.ColumnsNotCovered(StructFields.uncovered(c.entry, reads, resolver)))
      // A hash-bucketed index is sorted within buckets by its leading column only; a Z-order
      // index clusters every indexed column alike.
      val served = if (zorder) indexed.exists(filtersOn) else filtersOn(indexed.head)
      if (!served) {
        log.reject(c.entry,
          if (zorder) Reason.NoFilterOnZOrderColumns(indexed.map(_.name))
          else Reason.NoFilterOnLeadingColumn(indexed.head.name))
      }
      val fewerBytes = prunedBytes.forall { pruned =>
        val read = bytesRead(c, conjuncts)
        if (read >= pruned) log.reject(c.entry, Reason.SkippingReadsLess(read, pruned))
        read < pruned
      }
      if (served && fewerBytes) coverage.map(c -> _) else None
    }
    // Ranked as Spark sizes its own scan tasks: each file opened costs `openCostInBytes`, so many
    // small files do not win over a few larger ones by a margin of bytes.
    val openCost = spark.sessionState.conf.filesOpenCostInBytes
    val best = IndexRanking.bestBy(usable.map(_._1),
      c => {
        val (files, bytes) = filesAndBytesRead(c, conjuncts)
        bytes + files * openCost
      })
    best.foreach(b =>
      usable.map(_._1).filterNot(_ eq b).foreach(c =>
        log.reject(c.entry, Reason.RankedLower(b.name, "fewer bytes to read"))))
    best.flatMap(b => usable.find(_._1 eq b))
  }

  /**
   * Bytes a filter query with conjuncts `conjuncts` reads through `c`, counting what each kind
   * prunes before reading: the buckets an equality selects and the files whose logged ranges can
   * match (as IndexFileIndex does it), or the files whose ranges can match (a Z-order index); plus
   * hybrid scan's appended files.
   */
  private def bytesRead(c: IndexCandidate, conjuncts: Seq[Expression]): Long = filesAndBytesRead(c, conjuncts)._2

  /** The files and bytes of [[bytesRead]]. */
  private def filesAndBytesRead(c: IndexCandidate, conjuncts: Seq[Expression]): (Long, Long) = {
    val indexFiles = if (ZOrderCoveringIndex.isZOrder(c.entry)) ZOrderFileIndex.filesToRead(c.entry, conjuncts)
    else IndexFileIndex.filesToRead(c.entry, conjuncts)
    (indexFiles.size.toLong + c.changes.appended.size, indexFiles.map(_.size).sum + c.changes.appendedBytes)
  }
}
