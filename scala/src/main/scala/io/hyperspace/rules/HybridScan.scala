package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, And, In, Literal, Not}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project, Union}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.index.covering.{CoveringIndex, IndexColumn, IndexScan}
import io.hyperspace.sources.{ByLineage, FileSource}

/**
 * Reads an index in place of a source scan, making up for the source's changes since the index
 * data was built (hybrid scan): rows of deleted source files are filtered out through the lineage
 * column; appended files are read from the source and unioned in. Where the plan above relies on
 * the index's bucketing (joins, aggregations), the appended rows are shuffled into the index's
 * buckets and merged bucket by bucket ([[BucketUnion]]), so the index side is never shuffled;
 * for filters a plain union is cheapest. A query reading only some directories of the index's
 * source sees only their rows of the index ([[IndexCandidate.scope]]).
 */
object HybridScan {

  /**
   * A plan reading `candidate` in place of `source`, with the source's attributes for the
   * index's columns, followed by the flat columns of the nested fields `fields` (see
   * [[IndexScan.replace]]). `keepBuckets`: whether the result must stay hash-partitioned like
   * the index; `bySplits` (without `keepBuckets`): whether the index's files are read with file
   * splits, not by bucket ([[IndexScan.scanFor]]).
   */
  def replace(
      spark: SparkSession,
      candidate: IndexCandidate,
      source: LogicalRelation,
      keepBuckets: Boolean,
      fields: Seq[IndexColumn] = Nil,
      bySplits: Boolean = false): LogicalPlan = {
    require(!(keepBuckets && bySplits), "an index read with file splits has no buckets to keep")
    val entry = candidate.entry
    if (candidate.isExact) {
      return IndexScan.replace(spark, entry, source, fields.map(_.storedName), candidate.filters, bySplits)
    }

    val scan = IndexScan.scanFor(spark, entry, source, candidate.filters, bySplits)
    val columns = IndexScan.sourceColumns(scan, source) ++ IndexScan.fieldColumns(scan, fields.map(_.storedName))
    // A scope by lineage lists the ids kept, so it leaves the deleted files' rows out already.
    val deletedIds = candidate.changes.deleted.map(_.id)
    val dropDeleted = if (deletedIds.isEmpty || candidate.scope.exists(_.isInstanceOf[ByLineage])) None
    else {
      val lineage = scan.output.find(_.name == CoveringIndex.LineageColumn).getOrElse(
        throw new IllegalStateException(s"Index '${entry.name}' has no lineage column"))
      Some(Not(In(lineage, deletedIds.map(id => Literal(id)))))
    }
    val kept = (candidate.scope.map(_.condition(scan.output)) ++ dropDeleted).reduceOption(And)
      .map(Filter(_, scan)).getOrElse(scan)
    val indexSide = Project(columns, kept)
    if (candidate.changes.appended.isEmpty) return indexSide

    val fs = CandidateIndexes.sourceScan(source).get
    val appended = FileSource(source, fs).restrictedTo(candidate.changes.appended.map(_.path).toSet)
    // Appended files are flattened as the index data was: each nested field read out of its struct.
    val appendedFields = fields.map { f =>
      val struct = appended.output.find(_.name.equalsIgnoreCase(f.path.head)).get
      Alias(f.extractFrom(struct).getOrElse(
          throw new IllegalStateException(s"The source has no field ${f.name}")), f.storedName)()
    }
    val appendedSide = Project(
      columns.take(columns.size - fields.size).map(c => appended.output.find(_.name.equalsIgnoreCase(c.name)).get) ++
        appendedFields,
      appended)
    if (keepBuckets) {
      BucketUnion(Seq(indexSide, appendedSide), CoveringIndex.storedIndexedColumns(entry.index), entry.index.numBuckets)
    } else {
      Union(indexSide, appendedSide)
    }
  }
}
