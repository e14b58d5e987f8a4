package io.hyperspace.actions

import java.time.Instant

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

import io.hyperspace.{HyperspaceConflictException, HyperspaceCorruptedLogException, HyperspaceException}
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{CatalogVersion, IndexKinds}
import io.hyperspace.log.{IndexLogManager, LogEntry, Owner, States}

/**
 * One operation on one index, following the log's commit protocol (docs/log-format.md):
 *
 *  1. validate the stable state it starts from;
 *  2. append the transient entry `latest + 1` — an atomic put-if-absent, which is the lock;
 *  3. do the work;
 *  4. append the final stable entry and point `latestStable` at it.
 *
 * A failure in 3 appends a stable entry equal to the starting one and removes what the work
 * wrote. If another operation holds the index, Table 1 decides: an incompatible one fails at
 * once with [[HyperspaceConflictException]]; a compatible one waits for it, then starts over
 * from the new stable state.
 */
abstract class Action(
    protected val spark: SparkSession,
    protected val indexLog: IndexLogManager,
    val indexName: String) extends Logging {

  /** The operation name written in the log (see [[Operations]]). */
  def operation: String

  /** The state the transient entry is written in. */
  protected def transientState: String

  /** The stable state a successful run ends in. */
  protected def finalState: String

  /** Fails, with a message for the user, unless the operation may start from `base`. */
  protected def validate(base: Option[LogEntry]): Unit

  /** The transient entry, with id `id`, that locks the index for this operation. */
  protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry

  /** The work. Returns the final entry's content (its id, state and owner are set by `run`). */
  protected def op(begin: LogEntry): LogEntry

  /** Removes what `op` wrote, after it failed or its commit was lost. */
  protected def cleanup(begin: LogEntry): Unit = ()

  /** Work that must follow the commit (e.g. removing a vacuumed index's directory). */
  protected def afterCommit(committed: LogEntry): Unit = ()

  /**
   * Whether the operation may start from the newest readable stable entry when the newest entry
   * is damaged (the index is CORRUPT): delete and vacuum, so a CORRUPT index can be removed.
   */
  protected def startsFromDamagedLog: Boolean =
    operation == Operations.DELETE || operation == Operations.VACUUM

  /**
   * The name written in this operation's entries: the name the index was created with (names
   * are case-insensitive, so `delete("INDEX2")` must not rename index `index2`).
   */
  protected def entryName(base: Option[LogEntry]): String =
    base.filter(_.state != States.DOESNOTEXIST).map(_.name).getOrElse(indexName)

  /** Whether `base`, reached while waiting for a concurrent run of the same operation, means
   * this run has nothing left to do. */
  protected def alreadyDone(base: Option[LogEntry]): Boolean =
    base.exists(_.state == finalState)

  /**
   * Whether the operation would change nothing from `base` (checked after [[validate]]): then
   * nothing is written and `run` returns `base` — a refresh of an unchanged source, say.
   */
  protected def upToDate(base: Option[LogEntry]): Boolean = false

  /** What this operation's Spark jobs are called in the Spark UI ([[JobLabels]]). */
  protected def label: String = JobLabels.of(operation, indexName)

  /** Runs `body` (a step of [[op]]) with its Spark jobs labelled by the operation and `name`. */
  protected def step[T](name: String)(body: => T): T =
    JobLabels.during(spark, JobLabels.step(label, name))(body)

  private var wrote = false

  /** Whether [[run]] committed an entry (false when it found nothing to do). */
  def committedChanges: Boolean = wrote

  /** Runs the operation; returns the entry it committed (or the current one if it had nothing to do). */
  final def run(): LogEntry = {
    acquire() match {
      case Left(current) => current
      case Right((base, begin)) =>
        val finished = try JobLabels.during(spark, label)(op(begin))
        catch {
          case NonFatal(e) =>
            rollBack(base, begin, e)
            throw Action.asHyperspaceException(e,
              s"The $operation of index '$indexName' failed and was rolled back (index directory " +
                s"${indexLog.indexPath})")
        }
        val committed = finished.copy(
          id = begin.id + 1, name = begin.name, state = finalState, operation = operation,
          timestamp = System.currentTimeMillis(), owner = Owner.current,
          enabled = finalState == States.ACTIVE)
        if (!indexLog.tryAppend(committed)) {
          cleanup(begin)
          val winner = indexLog.entry(committed.id).map(_.operation).getOrElse("another operation")
          throw new HyperspaceConflictException(
            s"The $operation of index '$indexName' was overtaken by $winner (it wrote log " +
              s"entry ${committed.id} first, e.g. a cancel); nothing of this $operation was kept.")
        }
        indexLog.setLatestStable(committed.id)
        wrote = true
        afterCommit(committed)
        CatalogVersion.bump(indexLog.indexPath.getParent, spark.sessionState.newHadoopConf())
        committed
    }
  }

  /** Left: nothing to do (returns the current entry). Right: (starting entry, lock entry). */
  private def acquire(): Either[LogEntry, (Option[LogEntry], LogEntry)] = {
    val timeoutMs = HyperspaceConf.concurrencyWaitTimeoutMs(spark)
    val deadline = System.currentTimeMillis() + timeoutMs
    var waited = false
    while (true) {
      val nextId = indexLog.nextId
      currentEntry() match {
        case Some(running) if !running.isStable =>
          if (!Operations.compatible(running.operation, operation)) {
            throw new HyperspaceConflictException(
              s"Cannot ${operation.toLowerCase} index '$indexName': a ${running.operation} " +
                s"${describe(running)} holds it, and the two cannot run together. " +
                s"Retry when it has finished. ${cancelHint(running)}")
          }
          if (Owner.isDeadOnThisHost(running.owner) || System.currentTimeMillis() > deadline) {
            throw new HyperspaceConflictException(
              s"Cannot ${operation.toLowerCase} index '$indexName': it has an unfinished " +
                s"${running.operation} ${describe(running)}" +
                (if (Owner.isDeadOnThisHost(running.owner)) ", whose process is no longer running. "
                 else s" that did not finish within ${timeoutMs / 1000.0}s. ") +
                cancelHint(running))
          }
          waited = true
          Thread.sleep(100)
        case latest =>
          val base = latest
          if (waited && alreadyDone(base)) {
            logInfo(s"Index '$indexName': a concurrent $operation already did the work.")
            return Left(base.get)
          }
          validate(base)
          if (upToDate(base)) return Left(base.get)
          // The id after every name in the log directory, but never before the entry validated.
          val id = math.max(nextId, latest.map(_.id + 1).getOrElse(0L))
          val begin = beginEntry(base, id).copy(
            name = entryName(base), state = transientState, operation = operation,
            timestamp = System.currentTimeMillis(), owner = Owner.current, enabled = false)
          if (indexLog.tryAppend(begin)) return Right((base, begin))
          // Lost the race for this id: look again at who won — but not forever (every way
          // round this loop waits for another writer, and each has a deadline).
          if (System.currentTimeMillis() > deadline) {
            throw new HyperspaceConflictException(
              s"Cannot ${operation.toLowerCase} index '$indexName': other writers kept taking its " +
                s"next log entry (under ${indexLog.logPath}) for ${timeoutMs / 1000.0}s. Retry later.")
          }
          waited = true
          Thread.sleep(10)
      }
    }
    throw new IllegalStateException("unreachable")
  }

  /**
   * The newest entry. When it is damaged, operations that may (delete, vacuum) start from the
   * newest readable stable entry; the others fail naming the damaged file.
   */
  private def currentEntry(): Option[LogEntry] =
    try indexLog.latest
    catch {
      case e: HyperspaceCorruptedLogException =>
        val base =
          if (startsFromDamagedLog) indexLog.newestReadableStable.orElse(Action.unrecoverable(indexLog, e))
          else None
        if (base.isDefined) {
          logWarning(s"Index '$indexName' is CORRUPT (${e.getMessage}); the $operation starts " +
            (if (Action.isUnrecoverable(base.get)) "from a DELETED state: no stable entry can be read."
             else s"from its newest readable stable entry, ${base.get.id}."))
          base
        } else {
          val remedy =
            if (startsFromDamagedLog) s"None of its log entries can be read: restore one from a " +
              s"backup, or remove ${indexLog.indexPath} by hand."
            else "Delete and vacuum it (they start from its newest readable stable entry), then " +
              "create it again; or restore the damaged entry from a backup."
          throw new HyperspaceCorruptedLogException(
            s"Cannot ${operation.toLowerCase} index '$indexName': it is CORRUPT. ${e.getMessage} $remedy", e)
        }
    }

  private def rollBack(base: Option[LogEntry], begin: LogEntry, cause: Throwable): Unit = {
    val restored = Action.rollbackEntry(base, begin, operation)
      .copy(extra = begin.extra + ("failure" -> String.valueOf(cause.getMessage).take(1000)))
    try {
      if (indexLog.tryAppend(restored)) {
        indexLog.setLatestStable(restored.id)
        CatalogVersion.bump(indexLog.indexPath.getParent, spark.sessionState.newHadoopConf())
      }
    } catch {
      case NonFatal(e) => logWarning(s"Index '$indexName': could not roll back the failed $operation", e)
    } finally {
      try cleanup(begin)
      catch {
        case NonFatal(e) => logWarning(s"Index '$indexName': could not clean up the failed $operation", e)
      }
    }
  }

  private def describe(e: LogEntry): String =
    s"(log entry ${e.id}, started ${Instant.ofEpochMilli(e.timestamp)} by process ${e.owner.pid} " +
      s"on ${e.owner.host})"

  private def cancelHint(running: LogEntry): String =
    s"If that ${running.operation} is no longer running, run cancel('$indexName') (Scala: " +
      s"hs.cancel(\"$indexName\")) to roll the index back to its last stable state."
}

object Action {

  /** Marks a DELETED entry written for a CORRUPT index none of whose stable entries can be read. */
  val UnrecoverableKey = "unrecoverable"

  /**
   * What delete and vacuum of a CORRUPT index start from when none of its stable entries can be
   * read (a create's only ACTIVE entry cut short, say): its newest readable entry as DELETED and
   * listing no data file. What the damaged entries served is unknown, so it cannot be restored;
   * vacuum still keeps every data version for the retention ([[VacuumAction]] counts damaged
   * entries as readers), then frees the name. None when no entry at all can be read.
   */
  def unrecoverable(indexLog: IndexLogManager, damage: HyperspaceCorruptedLogException): Option[LogEntry] =
    indexLog.readableEntries.lastOption.map { e =>
      e.copy(state = States.DELETED, enabled = false, content = e.content.copy(files = Nil),
        extra = e.extra + (UnrecoverableKey -> String.valueOf(damage.getMessage).take(1000)))
    }

  def isUnrecoverable(e: LogEntry): Boolean = e.extra.contains(UnrecoverableKey)
  /**
   * `e` as a [[HyperspaceException]]: itself when it is one, else one saying `what` failed with
   * the original message (Spark's and Hadoop's errors name the file concerned), `e` as cause.
   */
  def asHyperspaceException(e: Throwable, what: String): HyperspaceException = e match {
    case h: HyperspaceException => h
    case other =>
      val message = Option(other.getMessage).map(_.linesIterator.take(3).mkString(" ")).getOrElse("")
      new HyperspaceException(s"$what: ${other.getClass.getSimpleName}: $message", other)
  }

  /**
   * The stable entry that undoes the transient entry `begin`: the starting entry again, or, for
   * an index that did not exist, a DOESNOTEXIST entry.
   */
  def rollbackEntry(base: Option[LogEntry], begin: LogEntry, operation: String): LogEntry = {
    val template = base.getOrElse(begin.copy(
        state = States.DOESNOTEXIST, content = begin.content.copy(files = Nil)))
    template.copy(id = begin.id + 1, operation = operation,
      timestamp = System.currentTimeMillis(), owner = Owner.current,
      enabled = template.state == States.ACTIVE)
  }

  /**
   * The ACTIVE entry a maintenance operation (refresh, optimize) starts from; fails for other
   * states, and for an index of a kind this JVM does not know (the error lists those it knows).
   */
  def requireActive(indexName: String, operation: String, base: Option[LogEntry]): LogEntry = {
    requireState(indexName, operation, base, Set(States.ACTIVE),
      if (base.exists(_.state == States.DELETED)) s"Restore it first with restoreIndex('$indexName')." else "")
    val entry = base.get
    if (IndexKinds.find(entry.index.kind).isEmpty) {
      throw new HyperspaceException(s"Cannot ${operation.toLowerCase} index '$indexName': " +
        IndexKinds.unknown(entry.index.kind, indexName).getMessage)
    }
    entry
  }

  /** Fails unless `base` is in one of `allowed` (a missing index counts as DOESNOTEXIST). */
  def requireState(indexName: String, operation: String, base: Option[LogEntry],
      allowed: Set[String], hint: String): Unit = {
    val state = base.map(_.state).getOrElse(States.DOESNOTEXIST)
    if (!allowed.contains(state)) {
      val exception =
        if (state == States.DOESNOTEXIST) new io.hyperspace.HyperspaceIndexNotFoundException(_)
        else new HyperspaceException(_: String)
      throw exception(
        s"Cannot ${operation.toLowerCase} index '$indexName': it is $state; " +
          s"${operation.toLowerCase} needs ${allowed.toSeq.sorted.mkString(" or ")}. $hint".trim)
    }
  }
}
