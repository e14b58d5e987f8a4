package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.Resolver
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, ExprId, Expression, KnownFloatingPointNormalized, PredicateHelper}
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildSide, NormalizeNaNAndZero}
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.index.{IndexKinds, RewriteFamily}
import io.hyperspace.index.covering.{CoveringIndex, IndexColumn, IndexFileIndex, IndexScan}
import io.hyperspace.index.zorder.{ZOrderCoveringIndex, ZOrderFileIndex}
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.EquiJoin
import io.hyperspace.sources.{FileSource, SourceSubset, TableScans}

/**
 * Equi-join whose keys on a side are exactly an index's indexed columns (as a set), with the
 * side's other needed columns covered → that side reads the index, a relation bucketed on the
 * join keys. With both sides indexed on matching columns and equal bucket counts, the sort-merge
 * join needs no Exchange; with one side indexed, only the other side is shuffled.
 *
 * Choice of pair: both sides with equal bucket counts first (no shuffle at all), then the most
 * buckets (more parallelism), then fewest bytes read, then names.
 *
 * A join Spark will run as a broadcast hash join ([[BroadcastSides]]: a broadcast hint, or a side
 * within `spark.sql.autoBroadcastJoinThreshold` by Spark's own estimate) is left alone: streaming
 * the big side past a broadcast table beats sort-merging two bucketed index scans. The filter
 * rule may still read either side from an index that serves a filter on it. So is a join adaptive
 * execution is expected to broadcast once it has run ([[adaptiveBroadcast]]).
 */
object JoinIndexRule extends IndexRewrite with PredicateHelper {

  private val supportedJoinTypes: Set[JoinType] =
    Set(Inner, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti)

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan =
    plan transformUp {
      // Keys that are struct fields (`l.nested.id = r.nested.id`) are attributes only once Spark's
      // nested column aliasing read them out below the join, which it skips when a query reads
      // every field of the struct. Do it here, and keep it only if an index is then used.
      case project @ Project(_, join: Join) if hasFieldKeys(join) =>
        val aliased = NestedKeyAliasing(project)
        val rewritten = aliased.transformUp { case j: Join => rewriteJoin(spark, j, indexes, log) }
        if (indexScans(rewritten) > indexScans(project)) rewritten else project
      case join: Join => rewriteJoin(spark, join, indexes, log)
    }

  private def indexScans(plan: LogicalPlan): Int =
    plan.collect { case r: LogicalRelation if IndexScan.isIndexScan(r) => r }.size

  private def hasFieldKeys(join: Join): Boolean = join match {
    case EquiJoin(_, leftKeys, rightKeys, _, _, _, _) =>
      (leftKeys ++ rightKeys).exists(StructFields.FieldChain.unapply(_).isDefined)
    case _ => false
  }

  private def rewriteJoin(spark: SparkSession, plan: Join, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan = {
    // Why the indexes of a side's data are not used for this join, when the join itself rules them out.
    def rejectSides(why: Boolean => Reason): Unit = if (log.recording) {
      Seq(plan.left, plan.right).foreach {
        case side @ ScanChain(relation, _) =>
          val isLeft = side eq plan.left
          CandidateIndexes.sourceScan(relation).foreach { fs =>
            val source = FileSource(relation, fs)
            indexes.filter(e => IndexKinds.offers(e, RewriteFamily.CoveringScan) && SourceSubset.overlaps(e, source))
              .foreach(log.reject(_, why(isLeft)))
          }
        case _ =>
      }
    }
    plan match {
      case join @ EquiJoin(joinType, leftKeys, rightKeys, _, left, right, _) =>
        // Spark decides on the plan as it was given, where a table format's scans are its own V2
        // scans with the format's size estimates (Iceberg: rows times row size), not on the Parquet
        // file sizes of the file scans standing in for them while the rules look at the plan.
        lazy val broadcast =
          BroadcastSides.of(TableScans.restore(join).asInstanceOf[Join], spark.sessionState.conf)
        if (!supportedJoinTypes.contains(joinType)) {
          rejectSides(_ => Reason.JoinTypeNotSupported(joinType.sql))
          join
        } else if (!(leftKeys ++ rightKeys).forall(keyAttribute(_).isDefined)) {
          rejectSides(_ =>
            Reason.JoinKeysNotColumns((leftKeys ++ rightKeys).filter(keyAttribute(_).isEmpty).map(_.sql)))
          join
        } else if (broadcast.isDefined) {
          val b = broadcast.get
          rejectSides(isLeft => Reason.SparkBroadcasts(b, indexOnBroadcastSide = isLeft == (b.side == BuildLeft)))
          join
        } else {
          val lk = leftKeys.flatMap(keyAttribute)
          val rk = rightKeys.flatMap(keyAttribute)
          val (l, r) = (Side.of(left, lk), Side.of(right, rk))
          // A side that is no scan chain has no candidates; its keys still pair with the other's.
          val lPaths = l.map(_.keys).getOrElse(lk.map(k => Seq(k.name)))
          val rPaths = r.map(_.keys).getOrElse(rk.map(k => Seq(k.name)))
          val (lChoices, rChoices) =
            (l.toSeq.flatMap(_.candidates(spark, indexes, log)), r.toSeq.flatMap(_.candidates(spark, indexes, log)))
          val adaptive =
            if (lChoices.isEmpty && rChoices.isEmpty) None
            else adaptiveBroadcast(spark, join.asInstanceOf[Join], (l, lChoices), (r, rChoices))
          adaptive match {
            case Some(a) =>
              rejectSides(isLeft => Reason.AdaptiveBroadcasts(a, indexOnSmallSide = isLeft == (a.side == BuildLeft)))
              join
            case None =>
              choose(spark, lChoices, rChoices, lPaths, rPaths, log) match {
                case (None, None) => join
                case (lc, rc) =>
                  join.asInstanceOf[Join].copy(
                    left = lc.map(l.get.useIndex(spark, _)).getOrElse(left),
                    right = rc.map(r.get.useIndex(spark, _)).getOrElse(right))
              }
          }
        }
      case _ =>
        rejectSides(_ => Reason.NotEquiJoin)
        plan
    }
  }

  /**
   * Why a bucketed index join would be slower than Spark's own plan of `join`: adaptive execution
   * is expected to broadcast a side once it has run, which it does only for a side it shuffled,
   * and the index join shuffles neither (TPC-DS q1 stayed a sort-merge join over index reads
   * where Spark broadcast). A side is expected at Spark's estimate or, when its filter lets an
   * index read fewer files, at the bytes of those files: Spark's estimate of a filter before it
   * runs is the whole scan, and its measure once run is what the filter left.
   */
  private def adaptiveBroadcast(spark: SparkSession, join: Join, left: (Option[Side], Seq[Choice]),
      right: (Option[Side], Seq[Choice])): Option[AdaptiveBroadcast] = {
    // Spark's own estimates, on the plan it was given (as for the broadcast decided before running).
    val restored = TableScans.restore(join).asInstanceOf[Join]
    def expected(side: BuildSide): BigInt = {
      val (plan, (chain, choices)) = if (side == BuildLeft) (restored.left, left) else (restored.right, right)
      val filters = chain.toSeq.flatMap(_.chain.collect { case Filter(c, _) => splitConjunctivePredicates(c) }.flatten)
      val filtered = if (filters.isEmpty) Nil else choices.map(c => BigInt(filteredBytes(c._1, filters)))
      (plan.stats.sizeInBytes +: filtered).min
    }
    BroadcastSides.atRunTime(restored, expected, spark.sessionState.conf)
  }

  /** Bytes candidate `c` reads under `filters`: the index files whose buckets and ranges can match, and appended files. */
  private def filteredBytes(c: IndexCandidate, filters: Seq[Expression]): Long = {
    val files =
      if (ZOrderCoveringIndex.isZOrder(c.entry)) ZOrderFileIndex.filesToRead(c.entry, filters)
      else IndexFileIndex.filesToRead(c.entry, filters)
    files.map(_.size).sum + c.changes.appendedBytes
  }

  /**
   * The column a join key is. Floating-point keys arrive wrapped in Spark's NaN / -0.0
   * normalisation once the plan is fully optimized (as whatIf and whyNot see it).
   */
  private def keyAttribute(key: Expression): Option[Attribute] = key match {
    case a: AttributeReference => Some(a)
    case KnownFloatingPointNormalized(NormalizeNaNAndZero(a: AttributeReference)) => Some(a)
    case _ => None
  }

  /**
   * A join side that is a scan chain over `relation`, with its join keys as paths from the
   * relation's columns: a key is a column of the relation, or a struct field of one that the
   * chain's Project reads out under an alias (as Spark's nested column aliasing does for keys
   * such as `a.nested.id = b.nested.id`).
   */
  private case class Side(chain: LogicalPlan, relation: LogicalRelation, keys: Seq[Seq[String]]) {
    private lazy val reads = StructFields.readsOf(chain, relation)

    /** Indexes usable on the side whose indexed columns are exactly its join keys. */
    def candidates(spark: SparkSession, indexes: Seq[LogEntry], log: DecisionLog)
        : Seq[(IndexCandidate, Map[StructFields.FieldRead, IndexColumn])] = {
      val resolver = spark.sessionState.conf.resolver
      CandidateIndexes.forRelation(spark, indexes, relation, reads.whole, log).flatMap { c =>
        val indexed = CoveringIndex.columnsOf(c.entry.index)._1
        lazy val coverage = StructFields.coverage(c.entry, reads.fields, resolver)
        if (!keyedOn(indexed, keys, resolver)) {
          log.reject(c.entry, Reason.JoinKeysNotIndexed(keys.map(IndexColumn(_).name).distinct, indexed.map(_.name)))
          None
        } else {
          if (coverage.isEmpty) {
            log.reject(c.entry, Reason.ColumnsNotCovered(StructFields.uncovered(c.entry, reads, resolver)))
          }
          coverage.map(c -> _)
        }
      }
    }

    def useIndex(spark: SparkSession, chosen: (IndexCandidate, Map[StructFields.FieldRead, IndexColumn])): LogicalPlan =
      StructFields.replaceScan(spark, chain, relation, chosen._1, chosen._2, keepBuckets = true)
  }

  private object Side {
    def of(side: LogicalPlan, keys: Seq[Attribute]): Option[Side] = side match {
      case ScanChain(relation, _) =>
        val aliased: Map[ExprId, Seq[String]] = side match {
          case Project(list, _) => list.collect {
              case a @ Alias(StructFields.FieldChain(attr, fields), _) if relation.outputSet.contains(attr) =>
                a.exprId -> (attr.name +: fields)
            }.toMap
          case _ => Map.empty
        }
        val paths = keys.map { k =>
          if (relation.outputSet.contains(k)) Some(Seq(k.name)) else aliased.get(k.exprId)
        }
        if (paths.forall(_.isDefined)) Some(Side(side, relation, paths.flatten)) else None
      case _ => None
    }
  }

  private def samePath(a: Seq[String], b: Seq[String], resolver: Resolver): Boolean =
    a.size == b.size && a.zip(b).forall { case (x, y) => resolver(x, y) }

  /** Whether the indexed columns are exactly `keys` (as a set): the index is bucketed on them. */
  private def keyedOn(indexed: Seq[IndexColumn], keys: Seq[Seq[String]], resolver: Resolver): Boolean = {
    val distinctKeys = keys.foldLeft(Seq.empty[Seq[String]]) { (acc, k) =>
      if (acc.exists(samePath(_, k, resolver))) acc else acc :+ k
    }
    indexed.size == distinctKeys.size && indexed.forall(c => distinctKeys.exists(samePath(c.path, _, resolver)))
  }

  /**
   * Whether the two indexes bucket on paired columns in the same order (left column i joins
   * right column i), which co-partitioning needs.
   */
  private def aligned(spark: SparkSession, l: LogEntry, r: LogEntry,
      lk: Seq[Seq[String]], rk: Seq[Seq[String]]): Boolean = {
    val resolver = spark.sessionState.conf.resolver
    val (lc, rc) = (CoveringIndex.columnsOf(l.index)._1, CoveringIndex.columnsOf(r.index)._1)
    lc.size == rc.size && lc.zip(rc).forall { case (a, b) =>
      lk.zip(rk).exists { case (x, y) => samePath(x, a.path, resolver) && samePath(y, b.path, resolver) }
    }
  }

  private type Choice = (IndexCandidate, Map[StructFields.FieldRead, IndexColumn])

  private def choose(spark: SparkSession, leftChoices: Seq[Choice], rightChoices: Seq[Choice],
      lk: Seq[Seq[String]], rk: Seq[Seq[String]], log: DecisionLog): (Option[Choice], Option[Choice]) = {
    val chosen = pick(spark, leftChoices, rightChoices, lk, rk)
    if (log.recording) {
      val (lc, rc) = (chosen._1.map(_._1), chosen._2.map(_._1))
      def lost(of: Seq[Choice], winner: Option[IndexCandidate], criterion: String): Unit =
        winner.foreach(w =>
          of.map(_._1).filterNot(_ eq w).foreach(c => log.reject(c.entry, Reason.RankedLower(w.name, criterion))))
      if (lc.isDefined && rc.isDefined) {
        val criterion = "both sides indexed with equal bucket counts, then more buckets, then fewer bytes to read"
        lost(leftChoices, lc, criterion)
        lost(rightChoices, rc, criterion)
      } else {
        // One side only: every other candidate lost to the one that reads the fewest bytes.
        val all = leftChoices ++ rightChoices
        lost(all, lc.orElse(rc), "no pair of indexes bucketed alike on the join keys; fewest bytes to read")
      }
    }
    chosen
  }

  private def pick(spark: SparkSession, leftChoices: Seq[Choice], rightChoices: Seq[Choice],
      lk: Seq[Seq[String]], rk: Seq[Seq[String]]): (Option[Choice], Option[Choice]) = {
    val (left, right) = (leftChoices.map(_._1), rightChoices.map(_._1))
    def choice(of: Seq[Choice], c: IndexCandidate): Choice = of.find(_._1 eq c).get
    val pairs = for (l <- left; r <- right if aligned(spark, l.entry, r.entry, lk, rk)) yield (l, r)
    if (pairs.nonEmpty) {
      val (l, r) = pairs.minBy { case (l, r) =>
        val (lb, rb) = (l.entry.index.numBuckets, r.entry.index.numBuckets)
        (if (lb == rb) 0 else 1, -math.min(lb, rb), l.bytesRead + r.bytesRead, l.name, r.name)
      }
      (Some(choice(leftChoices, l)), Some(choice(rightChoices, r)))
    } else {
      // One side only: the one whose index reads fewer bytes.
      val best = (left.map(e => (e, true)) ++ right.map(e => (e, false)))
        .sortBy { case (c, isLeft) => (c.bytesRead, c.name, !isLeft) }.headOption
      best match {
        case Some((e, true)) => (Some(choice(leftChoices, e)), None)
        case Some((e, false)) => (None, Some(choice(rightChoices, e)))
        case None => (None, None)
      }
    }
  }
}
