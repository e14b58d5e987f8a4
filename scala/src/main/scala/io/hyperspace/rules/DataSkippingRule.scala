package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Expression, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.types.{DataType, StructType}

import io.hyperspace.index.dataskipping._
import io.hyperspace.log.{LogEntry, SourceFile}
import io.hyperspace.sources.FileSource

/**
 * A Filter over a file scan → the same Filter over the same scan with fewer files: the files
 * that data skipping indexes prove cannot hold a row the filter keeps are left out of the
 * relation's file list ([[DataSkippingFileIndex]]); the plan is otherwise unchanged.
 *
 * An index serves a relation read with the same format, read options and schema as its source,
 * sharing at least one file with it. Only files the index summarized, with the same path, size
 * and modification time, can be skipped: files appended since (or rewritten) are always read,
 * deleted ones are simply not listed any more. Several indexes on one relation each skip what
 * they can. An index that fails is ignored for the query (logged), never failing it.
 */
object DataSkippingRule extends IndexRewrite with PredicateHelper with Logging {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry]): LogicalPlan = {
    val skipping = indexes.filter(_.index.kind == DataSkippingIndex.Kind)
    if (skipping.isEmpty) plan
    else plan transformDown {
      case f @ Filter(condition, r: LogicalRelation) =>
        prune(spark, skipping, condition, r).map(pruned => f.copy(child = pruned)).getOrElse(f)
    }
  }

  /** Whether `entry` (a data skipping index) describes the data `source` reads. */
  def serves(entry: LogEntry, source: FileSource, listed: => Seq[(String, Long, Long)]): Boolean = {
    def schema(json: String) = DataType.fromJson(json).asInstanceOf[StructType]
    CandidateIndexes.sameReader(entry, source) &&
      DataType.equalsIgnoreNullability(schema(entry.source.schema), source.fsRelation.dataSchema) &&
      DataType.equalsIgnoreNullability(schema(entry.source.partitionSchema), source.fsRelation.partitionSchema) && {
        val indexed = CandidateIndexes.indexedFiles(entry)
        listed.exists(indexed.contains)
      }
  }

  /** The relation with the files `indexes` rule out for `condition` left out, if any index applies. */
  private def prune(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      condition: Expression,
      relation: LogicalRelation): Option[LogicalRelation] = {
    val fs = CandidateIndexes.sourceScan(relation) match {
      case Some(fs) if !fs.location.isInstanceOf[DataSkippingFileIndex] => fs
      case _ => return None
    }
    // Dropping conjuncts only weakens the filter, which keeps more files: always safe.
    val usable = splitConjunctivePredicates(condition)
      .filter(c => c.deterministic && !SubqueryExpression.hasSubquery(c))
    if (usable.isEmpty) return None
    val filter = usable.reduce(And)
    val source = FileSource(relation, fs)
    lazy val listed = source.listedFiles
    val applied = indexes.filter(e => serves(e, source, listed)).flatMap { entry =>
      try skippedBy(spark, entry, filter, relation) catch {
        case NonFatal(e) =>
          logWarning(s"Data skipping index '${entry.name}' is not used for this query: $e")
          None
      }
    }
    if (applied.isEmpty) return None

    val listedByKey = listed.map(f => f -> f).toMap
    def present(files: Iterable[SourceFile]) = files.iterator.map(_.key).filter(listedByKey.contains).toSet
    val perIndex = applied.map { case (entry, skippedFiles, sketches) =>
      val keys = present(skippedFiles)
      val sketchSkips = sketches.map { case (sketch, files) =>
        val ks = present(files)
        SketchSkips(sketch, ks.size, ks.iterator.map(_._2).sum)
      }
      (entry, keys, IndexSkips(entry.name, entry.id, keys.size, keys.iterator.map(_._2).sum, sketchSkips))
    }
    val skipped = perIndex.flatMap(_._2).toSet
    val stats = RelationSkippingStats(
      relation = source.table.getOrElse(fs.location.rootPaths.mkString(", ")),
      filter = filter.sql,
      filesTotal = listed.size, bytesTotal = listed.map(_._2).sum,
      filesSkipped = skipped.size, bytesSkipped = skipped.iterator.map(_._2).sum,
      indexes = perIndex.map(_._3))
    // So that lastQuerySkippingStats sees this query once it has run.
    DataSkippingStats.ensureListener(spark)
    val location = new DataSkippingFileIndex(fs.location, skipped.map(_._1), perIndex.map(_._1), stats)
    Some(relation.copy(relation = fs.copy(location = location)(fs.sparkSession)))
  }

  /**
   * What `entry` rules out for `filter` over `relation`: the files, and per sketch the files it
   * rules out alone (evaluated only when the sketch table is on the driver). None when no
   * sketch can tell anything about the filter.
   */
  private def skippedBy(
      spark: SparkSession,
      entry: LogEntry,
      filter: Expression,
      relation: LogicalRelation): Option[(LogEntry, Iterable[SourceFile], Seq[(String, Iterable[SourceFile])])] = {
    val sketches = DataSkippingIndexData.sketchesOf(entry.index)
    val resolved = DataSkippingIndex.resolveSketches(spark, entry.name, sketches, relation)
    val table = SketchTableEvaluator.load(spark, entry)
    DataSkippingIndex.translate(filter, resolved, table.attributes).map { condition =>
      val byId = entry.source.files.map(f => f.id -> f).toMap
      def files(ids: Set[Long]): Iterable[SourceFile] = ids.flatMap(byId.get)
      val perSketch =
        if (!table.onDriver) Nil
        else resolved.flatMap { r =>
          DataSkippingIndex.translate(filter, Seq(r), table.attributes)
            .map(c => r.sketch.describe -> files(table.skippedIds(c)))
        }
      (entry, files(table.skippedIds(condition)), perSketch)
    }
  }
}
