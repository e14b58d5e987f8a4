package io.hyperspace.rules

import scala.collection.mutable

import io.hyperspace.log.LogEntry

/**
 * Where one run of the rules writes why it turned indexes down. It is an argument of the run,
 * never shared: the live optimizer rule passes [[DecisionLog.Discard]], whyNot a fresh
 * [[RecordingLog]] for the one plan it asks about.
 */
trait DecisionLog {

  /** Whether reasons are kept; a rule works out costly details of a reason only when they are. */
  def recording: Boolean

  /** `entry` was turned down for `reason` (evaluated only when recording). */
  def reject(entry: LogEntry, reason: => Reason): Unit

  /**
   * The rule starts another pass over the plan (the optimizer runs it until the plan settles):
   * an index turned down again gets the new pass's reasons, made on a more optimized plan.
   */
  def newPass(): Unit = ()
}

object DecisionLog {

  /** The live rule's log: decisions are made the same way, and their reasons dropped. */
  val Discard: DecisionLog = new DecisionLog {
    def recording: Boolean = false
    def reject(entry: LogEntry, reason: => Reason): Unit = ()
  }
}

/**
 * A log that keeps the reasons, per index name (case-insensitive), in the order given: those of
 * the last pass that turned the index down.
 */
final class RecordingLog extends DecisionLog {
  private val byIndex = mutable.LinkedHashMap[String, (Int, Vector[Reason])]()
  private var pass = 0

  def recording: Boolean = true

  override def newPass(): Unit = synchronized { pass += 1 }

  def reject(entry: LogEntry, reason: => Reason): Unit = synchronized {
    val key = entry.name.toLowerCase(java.util.Locale.ROOT)
    val r = reason
    val seen = byIndex.get(key).collect { case (p, reasons) if p == pass => reasons }.getOrElse(Vector.empty)
    if (!seen.contains(r)) byIndex(key) = (pass, seen :+ r)
  }

  /** The reasons recorded for index `name`. */
  def reasons(name: String): Seq[Reason] = synchronized {
    byIndex.get(name.toLowerCase(java.util.Locale.ROOT)).map(_._2).getOrElse(Vector.empty)
  }
}

/**
 * What a recording run decided for a query: the indexes its rewritten plan reads, and the reasons
 * for the others. `blocked` is set when the session rewrites nothing at all (extension missing,
 * rewriting off, a streaming query); `ifRewriting` then holds what the rules would decide with
 * rewriting on, so whyNot can say both.
 */
final case class Decisions(
    used: Set[String],
    reasons: Map[String, Seq[Reason]],
    blocked: Option[Reason] = None,
    ifRewriting: Option[Decisions] = None) {

  private def key(name: String) = name.toLowerCase(java.util.Locale.ROOT)

  def isUsed(name: String): Boolean = used.exists(_.equalsIgnoreCase(name))

  /**
   * Why index `name` is not used; for one that is, only what it decides at run time
   * ([[Reason.DecidedAtRunTime]], usually nothing).
   */
  def reasonsFor(name: String): Seq[Reason] =
    blocked.toSeq ++ (if (blocked.isEmpty) reasons.getOrElse(key(name), Nil) else Nil)
}
