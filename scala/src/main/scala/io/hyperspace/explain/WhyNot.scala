package io.hyperspace.explain

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, IsNotNull, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan}
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.types.StructType

import io.hyperspace.index.{IndexCatalog, IndexKinds, RewriteFamily}
import io.hyperspace.log.{LogEntry, States}
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.shims.{EquiJoin, FileRelation}
import io.hyperspace.rules.{BroadcastSides, CandidateIndexes, DataSkippingRule, FileListings, RewriteScope, StructFields}
import io.hyperspace.sources.{FileSource, SourceSubset}

/** `whyNot(df)`: for each index a query does not use, the reasons in words. */
object WhyNot extends PredicateHelper {

  /** One line per index (or only `indexName`): used, or why not. */
  def whyNot(df: DataFrame, indexName: Option[String]): String = {
    val spark = df.sparkSession
    val catalog = new IndexCatalog(spark)
    val summaries = catalog.summaries().filter(s => indexName.forall(_.equalsIgnoreCase(s.name)))
    if (indexName.isDefined && summaries.isEmpty) {
      throw new io.hyperspace.HyperspaceIndexNotFoundException(s"Index '${indexName.get}' does not exist.")
    }
    val used = Plans.indexesIn(Plans.physical(df, withIndexes = true)).map(_.name).toSet
    val active = CandidateIndexes.active(spark).map(e => e.name -> e).toMap
    val plan = Plans.optimizedWithout(df)
    val scope = RewriteScope.of(plan, active.values.toSeq)
    val lines = summaries.sortBy(_.name).map { s =>
      val reasons =
        if (used.contains(s.name)) Seq("used by this query")
        else if (s.state != States.ACTIVE) Seq(s"the index is ${s.state}")
        else active.get(s.name).map { e =>
          CandidateIndexes.missingData(spark, e).map(m => Seq(s"its data cannot be read: $m"))
            .orElse(scopeReason(e, scope))
            .getOrElse(reasonsFor(spark, e, plan))
        }.getOrElse(Seq(Option(s.stateReason).getOrElse("the index is not enabled"))) // e.g. an unknown kind
      s"${s.name}: ${reasons.mkString("; ")}"
    }
    if (lines.isEmpty) "No indexes exist." else lines.mkString("\n")
  }

  /** Why no index of `entry`'s kind may rewrite the query at all, if so (the rule's own decision). */
  private def scopeReason(entry: LogEntry, scope: RewriteScope): Option[Seq[String]] = {
    val allowed = IndexKinds.of(entry).rewrites match {
      case RewriteFamily.FileSkipping => scope.skippingAllowed
      case RewriteFamily.CoveringScan => scope.coveringAllowed
      case RewriteFamily.NoRewrite => true // its kind says why, whatever the scope
    }
    if (allowed) None else scope.reason.map(Seq(_))
  }

  /** Why `entry` cannot serve any file scan of `plan`. */
  private[explain] def reasonsFor(spark: SparkSession, entry: LogEntry, plan: LogicalPlan): Seq[String] = {
    val kind = IndexKinds.of(entry)
    if (kind.rewrites == RewriteFamily.NoRewrite) return Seq(kind.noRewriteReason)
    val resolver = spark.sessionState.conf.resolver
    // Scans of the index's data: its directories, some inside them or around them (basePath),
    // or those its glob patterns match.
    val relations = plan.collect {
      case r: LogicalRelation
          if CandidateIndexes.sourceScan(r).exists(fs => SourceSubset.overlaps(entry, FileSource(r, fs))) => r
    }
    if (relations.isEmpty) {
      val throughTableFormat = plan.collect {
        case FileRelation(r, fs)
            if !FileListings.isPlain(fs.location) &&
              SourceSubset.overlaps(entry, FileSource(r, fs)) => fs.location.getClass.getSimpleName
      }
      return throughTableFormat.headOption match {
        case Some(listing) => Seq(s"the query reads the data through a table format's file list ($listing), " +
            "whose rows an index built from the files does not give")
        case None => Seq("the query does not read the data the index was built from")
      }
    }
    if (kind.rewrites == RewriteFamily.FileSkipping) return skippingReasons(entry, relations, plan)
    relations.flatMap { r =>
      val source = FileSource(r, CandidateIndexes.sourceScan(r).get)
      val now = source.listedFiles.toSet
      val servable = CandidateIndexes.serve(spark, entry, source, now)
      if (!CandidateIndexes.sameReader(entry, source)) {
        Seq(s"the query reads the data as ${source.format} with options ${source.readOptions}; " +
          s"the index was built from ${entry.source.format} with options ${entry.source.options}")
      } else if (servable.isLeft) {
        Seq(servable.left.toOption.get)
      } else {
        // Struct fields are named by their dotted paths (`nested.leaf.id`), as index columns are.
        // Spark infers `isnotnull(s)` from a filter on a field of struct `s`; the field is what is read.
        val expressions = plan.collect {
          case Filter(cond, _) => splitConjunctivePredicates(cond).filterNot {
              case IsNotNull(a: Attribute) => a.dataType.isInstanceOf[StructType]
              case _ => false
            }
          case n if !n.isInstanceOf[LogicalRelation] => n.expressions
        }.flatten
        val missing = StructFields.uncovered(entry, StructFields.readsOf(expressions, r.outputSet), resolver)
        val leadingColumn = CoveringIndex.columnsOf(entry.index)._1.head
        val leading = leadingColumn.name
        val filtersLeading = plan.exists {
          case Filter(cond, child) if child.collectLeaves().contains(r) =>
            StructFields.reads(StructFields.readsOf(
                splitConjunctivePredicates(cond).filterNot(_.isInstanceOf[IsNotNull]), r.outputSet), leadingColumn,
              resolver)
          case _ => false
        }
        val joins = plan.collect { case j: Join if j.collectLeaves().contains(r) => j }
        val joinReasons = joins.map {
          case j @ EquiJoin(_, lk, rk, _, _, _, _) =>
            val keys = (lk ++ rk).flatMap(_.references).filter(a => r.outputSet.contains(a)).map(_.name).distinct
            val indexed = entry.index.indexedColumns
            if (keys.size == indexed.size && indexed.forall(c => keys.exists(resolver(_, c)))) {
              // The join rule's own decision, made again on the same plan.
              BroadcastSides.of(j, spark.sessionState.conf)
                .map(b => b.describe(indexOnBroadcastSide = b.plan(j).collectLeaves().contains(r)))
            } else
              Some(s"the join keys (${keys.mkString(", ")}) are not the indexed columns (${indexed.mkString(", ")})")
          case _ => Some("the join is not an equi-join")
        }
        val reasons =
          (if (missing.nonEmpty) Seq(s"column(s) ${missing.mkString(", ")} not covered by the index") else Nil) ++
            (if (!filtersLeading && joins.isEmpty)
               Seq(s"no filter on the leading indexed column '$leading' and no join")
             else Nil) ++
            (if (!filtersLeading && joins.nonEmpty && missing.isEmpty) joinReasons.flatten else Nil)
        if (reasons.isEmpty) Seq("another index was ranked better (fewer bytes to read)") else reasons
      }
    }.distinct
  }

  /** Why a data skipping index prunes none of `relations` (the scans of its source's paths). */
  private def skippingReasons(
      entry: LogEntry,
      relations: Seq[LogicalRelation],
      plan: LogicalPlan): Seq[String] =
    relations.flatMap { r =>
      val source = FileSource(r, CandidateIndexes.sourceScan(r).get)
      if (!DataSkippingRule.serves(entry, source, source.listedFiles)) {
        Seq("the query reads the data with another format, options or schema, or none of the files " +
          "the index summarized")
      } else {
        val filtered = plan.exists {
          case Filter(_, child) => child eq r
          case _ => false
        }
        if (!filtered) Seq("the query has no filter directly over the scan")
        else Seq(s"no sketch (${entry.index.indexedColumns.mkString(", ")}) can evaluate the query's filter")
      }
    }.distinct
}
