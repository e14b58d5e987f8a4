package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{CatalogRoot, IndexKinds}
import io.hyperspace.index.covering.{IndexFileIndex, IndexHadoopFsRelation}
import io.hyperspace.index.dataskipping.SkippedFilesIndex
import io.hyperspace.index.zorder.ZOrderFileIndex
import io.hyperspace.log.{ContentFile, LogEntry}
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.TableScans

/**
 * The optimizer rule that rewrites queries to use indexes. It runs in every session built with
 * the extension and does nothing unless Hyperspace is enabled for that session
 * (`spark.hyperspace.apply.enabled`, set by `enableHyperspace()`).
 *
 * The rewrites it applies are [[IndexRewrite]]s, tried in order; an internal error in any of them
 * is logged and the original plan returned, because a failed optimisation must never fail, or
 * change, a user's query.
 */
case class ApplyHyperspace(spark: SparkSession) extends Rule[LogicalPlan] with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    recordQueriesIfAsked()
    if (!isEnabled) plan
    else ApplyHyperspace.rewrite(spark, plan, ApplyHyperspace.logOf(spark), CatalogRoot.forSession(spark))
  }

  // The advisor's query recorder is registered from here because this rule is the one part of
  // Hyperspace every session it is installed in runs (extension, attach, a Spark Connect
  // server's sessions), before the query it optimizes runs: that query is already recorded.
  // Spark builds its optimizer's rules anew for each run of the optimizer: the flag spares the
  // later passes of one query's planning (`install` itself registers a session's recorder once).
  @volatile private var recorderInstalled = false

  private def recordQueriesIfAsked(): Unit =
    if (!recorderInstalled) {
      try {
        if (HyperspaceConf.advisorRecordQueries(spark)) {
          io.hyperspace.advisor.QueryRecorder.install(spark)
          recorderInstalled = true
        }
      } catch {
        case NonFatal(e) => logWarning(s"Hyperspace could not start recording queries for the advisor: $e")
      }
    }

  // A malformed apply.enabled value must not break queries of a session: treat it as off.
  private def isEnabled: Boolean =
    try HyperspaceConf.applyEnabled(spark)
    catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace is off for this query: ${e.getMessage}")
        false
    }
}

/** A plan rewrite proposed by an index kind (filter, join, data skipping, ...). */
trait IndexRewrite {
  /**
   * Returns `plan` rewritten to use some of `indexes`, or `plan` itself when nothing applies;
   * why an index that could have served part of the plan was turned down goes to `log`.
   */
  def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan
}

object ApplyHyperspace extends Logging with PredicateHelper {

  /**
   * `plan` rewritten with the session's ACTIVE indexes — what the live rule does once rewriting
   * is on — with the reasons for the indexes turned down written to `log`.
   */
  def rewrite(spark: SparkSession, plan: LogicalPlan, log: DecisionLog): LogicalPlan =
    rewrite(spark, plan, log, CatalogRoot.of(spark, None))

  /**
   * [[rewrite]] reading the catalog under `root`, resolved only when the plan scans a source. A
   * plan an earlier pass of the same query's planning returned is returned as it is
   * ([[DecidedPlans]]); whyNot's recorded runs decide every pass, for the reasons.
   */
  def rewrite(spark: SparkSession, plan: LogicalPlan, log: DecisionLog, root: => CatalogRoot): LogicalPlan = {
    lazy val catalogRoot = root
    if (plan.isStreaming) plan
    else {
      log.newPass()
      try {
        if (!log.recording && DecidedPlans.decidedAlready(plan, catalogRoot.version())) plan
        else decide(spark, plan, log, catalogRoot)
      } catch {
        // An audit that found skipped rows must fail the query, not run it without the index.
        case e: AuditFailure => throw e
        case NonFatal(e) =>
          logWarning(s"Hyperspace could not rewrite the plan; running it unchanged. Cause: $e", e)
          plan
      }
    }
  }

  private def decide(spark: SparkSession, plan: LogicalPlan, log: DecisionLog, root: CatalogRoot): LogicalPlan = {
    // Scans of table-format tables the rules see as file scans, given back when not replaced.
    val scans = TableScans.asFileScans(plan)
    if (!scans.exists(isSourceScan)) plan
    else {
      val token = root.version()
      val active = CandidateIndexes.active(spark, root, token)
      // No index of any scanned data: no rewrite applies, so none is tried (a pass of a query
      // over tables without indexes costs the token read). whyNot's recorded runs still try
      // them all, for the reasons some rewrites give about every index.
      val decided =
        if (!log.recording && !CandidateIndexes.mayServeAny(active, scans)) plan
        else {
          TableScans.restore(rewriteWithReadableIndexes(spark, root.conf, scans, active, log))
        }
      if (log.recording) decided else DecidedPlans.remember(decided, token)
    }
  }

  // The sessions whose optimizer records its decisions: private copies of a user's session that
  // whyNot plans a query in (see [[recording]]). Keyed by session identity, so no other session,
  // and no query of the user's own session, ever records; weak, so a lost copy is dropped.
  private val recorders =
    java.util.Collections.synchronizedMap(new java.util.WeakHashMap[SparkSession, RecordingLog]())

  private def logOf(spark: SparkSession): DecisionLog = Option(recorders.get(spark)).getOrElse(DecisionLog.Discard)

  /**
   * Runs `body` with the rule of `session` — a private copy of a user's session, planned in by
   * one caller — writing its decisions to `log`: whyNot then reads the decisions of the very
   * optimizer run that produced the plan, made where the rule runs among Spark's own rules.
   */
  def recording[T](session: SparkSession, log: RecordingLog)(body: => T): T = {
    recorders.put(session, log)
    try body
    finally recorders.remove(session)
  }

  /**
   * What a recorded optimizer run decided: the indexes its plan `optimized` reads (with what they
   * will decide at run time), and for each other ACTIVE index the reasons written to `log`, or,
   * when no rule met the index, why none could ([[Unconsidered]], judged on `query`, the query's
   * analyzed plan: the scans it asks for).
   */
  def decisions(spark: SparkSession, optimized: LogicalPlan, log: RecordingLog, query: LogicalPlan): Decisions = {
    val used = indexesIn(optimized).map(_.name).toSet
    val reasons = CandidateIndexes.active(spark).map { e =>
      val recorded = log.reasons(e.name)
      e.name.toLowerCase(java.util.Locale.ROOT) ->
        (if (used.contains(e.name)) recorded.filter(_.isInstanceOf[Reason.DecidedAtRunTime])
         else if (recorded.nonEmpty) recorded
         else Seq(Unconsidered.reason(e, TableScans.asFileScans(query))))
    }.toMap
    Decisions(used, reasons)
  }

  /**
   * `plan` rewritten with `indexes`, none of whose data files is missing: each index the rewrite
   * newly puts into the plan has its files checked once (a listing per data version), and if
   * any is gone the rewrite is redone without it — a query never fails, nor returns fewer rows,
   * because index data was removed behind the log's back. Later optimizer passes find the index
   * already in the plan and do not check it again.
   */
  private def rewriteWithReadableIndexes(
      spark: SparkSession,
      conf: org.apache.hadoop.conf.Configuration,
      plan: LogicalPlan,
      indexes: Seq[LogEntry],
      log: DecisionLog): LogicalPlan = {
    val inPlanAlready = indexesIn(plan).map(_.identity).toSet
    val readable = scala.collection.mutable.Map[((String, String, Long), Option[Seq[String]]), Boolean]()
    def isReadable(e: LogEntry, reads: Option[Seq[ContentFile]]): Boolean = readable.getOrElseUpdate(
      (e.identity, reads.map(_.map(_.path))),
      CandidateIndexes.missingData(spark, e, Some(conf), reads) match {
        case None => true
        case Some(reason) =>
          logWarning(s"Hyperspace does not use index '${e.name}': $reason")
          log.reject(e, Reason.DataMissing(reason))
          CandidateIndexes.forget(e)
          false
      })
    @scala.annotation.tailrec
    def attempt(usable: Seq[LogEntry]): LogicalPlan = {
      // Reasons of an attempt that is redone are those of a plan that does not run.
      val attemptLog = if (log.recording) new RecordingLog else DecisionLog.Discard
      val rewritten = rewriteWith(spark, plan, usable, attemptLog)
      val broken = indexReadsIn(rewritten)
        .filterNot { case (e, reads) => inPlanAlready.contains(e.identity) || isReadable(e, reads) }
        .map(_._1.identity).toSet
      val remaining = usable.filterNot(e => broken.contains(e.identity))
      if (broken.isEmpty) {
        attemptLog match {
          case r: RecordingLog => usable.foreach(e => r.reasons(e.name).foreach(why => log.reject(e, why)))
          case _ =>
        }
        rewritten
      } else if (remaining.size == usable.size) plan // cannot happen: rewrites only use `usable`
      else attempt(remaining)
    }
    attempt(indexes)
  }

  private def isSourceScan(p: LogicalPlan): Boolean = p match {
    case r: LogicalRelation => CandidateIndexes.sourceScan(r).isDefined
    case _ => false
  }

  /**
   * The rewrites, in the order they are tried. Data skipping first: it only prunes the file list
   * of a filtered scan, which stays a source scan the covering rules can still replace (they
   * look at the full listing). Then joins, so a join side gets the index bucketed on its join
   * keys rather than one chosen for a filter below it (avoiding shuffles wins over skipping);
   * then aggregations (bucketed on their grouping keys); then filters, where a covering index
   * replaces a pruned scan only when it reads fewer bytes. Split index seeks last: they read
   * the source itself, so a covering index that serves the query replaces the scan first; a
   * join's small side prunes a split-indexed scan only where no filter seek narrowed it already.
   * Last, the streamed side of a join Spark broadcasts, left unread by all of the above, reads an
   * index sorted on the join key. Then a join side the filter rule read bucketed, which adaptive
   * execution is expected to broadcast once it has run, is read unbucketed so it can.
   */
  val rewrites: Seq[IndexRewrite] = Seq(DataSkippingRule, JoinIndexRule, AggregateIndexRule, FilterIndexRule,
    SplitSeekRule, JoinPruningRule, BroadcastProbeIndexRule, KeepAdaptiveBroadcasts)

  /**
   * `plan` rewritten to use some of `indexes` (real ones, or hypothetical ones for whatIf), as
   * far as its [[RewriteScope]] allows.
   */
  def rewriteWith(
      spark: SparkSession,
      plan: LogicalPlan,
      indexes: Seq[LogEntry],
      log: DecisionLog = DecisionLog.Discard): LogicalPlan =
    if (indexes.isEmpty) plan
    else {
      val scope = RewriteScope.of(plan, indexes)
      scope.reason.foreach { why =>
        indexes.filterNot(e => IndexKinds.find(e.index.kind).forall(k => scope.allows(k.rewrites)))
          .foreach(log.reject(_, why))
      }
      rewritesFor(scope).foldLeft(plan) { (current, rewrite) =>
        val next = rewrite(spark, current, indexes, log)
        if (log.recording) {
          // A later rule may replace a scan an earlier one pruned (data skipping, then a covering index).
          val (before, after) = (indexesIn(current), indexesIn(next))
          val added = after.filterNot(e => before.exists(_.identity == e.identity)).map(_.name).distinct
          before.filterNot(e => after.exists(_.identity == e.identity))
            .foreach(log.reject(_, Reason.ScanReplaced(added)))
        }
        next
      }
    }

  /** The rewrites a scope allows, in order: data skipping keeps the source's scans, the others replace them. */
  def rewritesFor(scope: RewriteScope): Seq[IndexRewrite] = rewrites.filter {
    case DataSkippingRule => scope.skippingAllowed
    case _ => scope.coveringAllowed
  }

  /**
   * The indexes `plan` reads, each with the data files its scan reads when they are known at
   * planning — a Z-order index's range, or the buckets a filter right above a covering index's
   * scan pins to its keys — else None (all the files its listing finds).
   */
  private def indexReadsIn(plan: LogicalPlan): Seq[(LogEntry, Option[Seq[ContentFile]])] = {
    val pinned = plan.collect {
      case Filter(condition, scan @ FileRelation(_, r: IndexHadoopFsRelation))
          if r.location.isInstanceOf[IndexFileIndex] =>
        pinnedBucketFiles(r.entry, splitConjunctivePredicates(condition)).map(scan -> _)
    }.flatten
    plan.collect {
      case scan @ FileRelation(_, r: IndexHadoopFsRelation) =>
        Seq(r.entry ->
          (r.location match {
            case z: ZOrderFileIndex => Some(z.kept)
            case _ => pinned.collectFirst { case (s, files) if s eq scan => files }
          }))
      case FileRelation(_, r) if r.location.isInstanceOf[SkippedFilesIndex] =>
        r.location.asInstanceOf[SkippedFilesIndex].entries.map(_ -> None)
    }.flatten
  }

  /**
   * The files of the buckets of covering index `entry` that `filters` pin the indexed column to,
   * if they do: a lookup's scan opens no other ([[IndexFileIndex.filesToRead]], whatever form a
   * later optimizer pass gives the same `=`, `IN` or `<=>` filter), so a file of another bucket
   * missing does not keep the lookup from the index.
   */
  private def pinnedBucketFiles(entry: LogEntry, filters: Seq[Expression]): Option[Seq[ContentFile]] =
    IndexFileIndex.bucketsToRead(entry, filters).map(IndexFileIndex.filesOfBuckets(entry, _))

  /** The index entries a logical plan reads (covering indexes) or prunes files with (data skipping). */
  def indexesIn(plan: LogicalPlan): Seq[LogEntry] = plan.collect {
    case FileRelation(_, r: IndexHadoopFsRelation) => Seq(r.entry)
    case FileRelation(_, r) if r.location.isInstanceOf[SkippedFilesIndex] =>
      r.location.asInstanceOf[SkippedFilesIndex].entries
  }.flatten
}
