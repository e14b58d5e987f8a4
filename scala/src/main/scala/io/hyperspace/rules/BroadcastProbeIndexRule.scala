package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, IsNotNull, PredicateHelper}
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.EquiJoin
import io.hyperspace.sources.{FileSource, TableScans}

/**
 * The streamed side of a join Spark runs as a broadcast hash join reads a covering index whose
 * leading indexed column is the join key, so the broadcast is kept and only the order of the
 * probes changes.
 *
 * [[JoinIndexRule]] leaves a join Spark broadcasts to Spark, but the big side still streams its
 * source in file order: for a random-order source every probe of the broadcast hash table lands
 * somewhere else in it. An index file is sorted on its indexed columns, so consecutive probes
 * ask for the same or neighbouring keys. Measured on TPC-H SF1 lineitem ⋈ part (200K parts
 * broadcast, 6M lines streamed): the same lines read from `li_partkey` in key order 3.5 s, in a
 * random order 10.3 s, the source 10.4 s (load 13–16); an aggregate without the join read all
 * three alike, so the order, not the bytes, is what pays.
 *
 * Only a side that reads its whole relation (no filter but Spark's inferred `IS NOT NULL`): a
 * filter is the filter rule's, and a source laid out for it (partitions, sorted files) may read
 * less than the index would. Only a single-column key: with several, the hash table is keyed on
 * all of them and one sorted column does not keep the probes together. The index is read with
 * file splits, as Spark reads any files (nothing above needs its buckets: read by bucket, a
 * 64-bucket index streamed a 2-file fact table in 64 tasks and ran at 0.48–0.78× of Spark's scan,
 * issue #55), and only when that read costs no more than Spark's own scan of the source: no more
 * tasks and fewer bytes with each file's open cost counted, as Spark sizes its scans
 * ([[ScanTasks]]); an index of many small buckets over a few source files is declined with the
 * figures ([[Reason.ProbeReadCostsMore]]). The join is kept only while Spark still broadcasts
 * the same side with the index in place. A side that split index join pruning will narrow at run
 * time is left to it.
 */
object BroadcastProbeIndexRule extends IndexRewrite with PredicateHelper {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan =
    if (!HyperspaceConf.broadcastProbeEnabled(spark)) plan
    else plan transformUp { case join: Join => rewriteJoin(spark, join, indexes, log) }

  private def rewriteJoin(spark: SparkSession, join: Join, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan =
    join match {
      // A split index may narrow the streamed side to a few row groups once the broadcast is
      // built, which beats reading all of a covering index in key order.
      case _ if JoinPruningRule.decidesAtRunTime(spark, indexes, join) => join
      case EquiJoin(_, Seq(leftKey: AttributeReference), Seq(rightKey: AttributeReference), _, left, right, _) =>
        val conf = spark.sessionState.conf
        BroadcastSides.of(TableScans.restore(join).asInstanceOf[Join], conf) match {
          case Some(decision) =>
            val (streamed, key) = decision.side match {
              case BuildRight => (left, leftKey)
              case BuildLeft => (right, rightKey)
            }
            probeInKeyOrder(spark, streamed, key, indexes, log).map { side =>
              val rewritten = decision.side match {
                case BuildRight => join.copy(left = side)
                case BuildLeft => join.copy(right = side)
              }
              // A smaller index side may turn Spark to broadcast it instead: then no probe is sorted.
              val still = BroadcastSides.of(TableScans.restore(rewritten).asInstanceOf[Join], conf)
              if (still.map(_.side).contains(decision.side)) rewritten else join
            }.getOrElse(join)
          case None => join
        }
      case _ => join
    }

  /** `streamed` reading the smallest usable index sorted on `key`, if it reads its whole relation. */
  private def probeInKeyOrder(
      spark: SparkSession,
      streamed: LogicalPlan,
      key: AttributeReference,
      indexes: Seq[LogEntry],
      log: DecisionLog): Option[LogicalPlan] = streamed match {
    case chain @ ScanChain(relation, _) if readsWholeRelation(chain) && relation.outputSet.contains(key) =>
      val resolver = spark.sessionState.conf.resolver
      val reads = StructFields.readsOf(chain, relation)
      val usable = CandidateIndexes.forRelation(spark, indexes, relation, reads.whole, log).flatMap { c =>
        val leading = CoveringIndex.columnsOf(c.entry.index)._1.head
        if (leading.isNested || !resolver(leading.path.head, key.name)) {
          log.reject(c.entry, Reason.ProbeKeyNotLeading(key.name, leading.name))
          None
        } else StructFields.coverage(c.entry, reads.fields, resolver).map(c -> _)
      }
      lazy val sourceSizes = CandidateIndexes.sourceScan(relation)
        .map(fs => FileSource(relation, fs).listedFiles.map(_.size)).getOrElse(Nil)
      lazy val sourceBytes = sourceSizes.sum
      val best = IndexRanking.best(usable.map(_._1))
      best.foreach(b =>
        usable.map(_._1).filterNot(_ eq b).foreach(c =>
          log.reject(c.entry, Reason.RankedLower(b.name, "fewer bytes to read"))))
      best.filter { b =>
        // The order's gain was measured with an index narrower than its source; one no smaller
        // than the files it replaces could read more than they would.
        val smaller = b.bytesRead < sourceBytes
        if (!smaller) log.reject(b.entry, Reason.IndexNotSmaller(b.bytesRead, sourceBytes))
        smaller && noCostlierThanSource(spark, b, sourceSizes, log)
      }.map { b =>
        val covered = usable.find(_._1 eq b).get._2
        StructFields.replaceScan(spark, chain, relation, b, covered, keepBuckets = false, bySplits = true)
      }
    case _ => None
  }

  /**
   * Whether `candidate`'s files (and hybrid scan's appended files), read with file splits, cost
   * no more than Spark's scan of the source's files of `sourceSizes`: no more tasks, and fewer
   * bytes with each file's open cost counted. What the order of the probes saves grows with the
   * rows, not with the files: each file opened and each task scheduled is paid whatever it holds.
   */
  private def noCostlierThanSource(
      spark: SparkSession,
      candidate: IndexCandidate,
      sourceSizes: Seq[Long],
      log: DecisionLog): Boolean = {
    val index = ScanTasks.of(spark, candidate.entry.content.files.map(_.size) ++ candidate.changes.appended.map(_.size))
    val source = ScanTasks.of(spark, sourceSizes)
    val cheaper = index.tasks <= source.tasks && index.cost < source.cost
    if (!cheaper) log.reject(candidate.entry, Reason.ProbeReadCostsMore(index, source))
    cheaper
  }

  /** Whether `chain` filters its relation by nothing but `IS NOT NULL` (what Spark infers for join keys). */
  private def readsWholeRelation(chain: LogicalPlan): Boolean = chain match {
    case Project(_, Filter(condition, _: LogicalRelation)) => onlyNotNull(condition)
    case Filter(condition, _: LogicalRelation) => onlyNotNull(condition)
    case _ => true
  }

  private def onlyNotNull(condition: Expression): Boolean =
    splitConjunctivePredicates(condition).forall(_.isInstanceOf[IsNotNull])
}
