package io.hyperspace.indexed

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.hyperspace.TaskMemoryReservation

import io.hyperspace.HyperspaceException

/**
 * What the tasks of an [[IndexedJoinExec]] need, out of the plan node so that closures do not
 * capture it. Expressions are over the attributes named beside them; `boundKey` and
 * `partitionIdOfProbe` are already bound to `probeOutput`.
 */
private[indexed] final case class IndexedJoinSpec(
    probeOutput: Seq[Attribute],
    boundKey: Expression,
    partitionIdOfProbe: Expression,
    relationOutput: Seq[Attribute],
    indexFilter: Option[Expression],
    indexProjects: Seq[NamedExpression],
    extraCondition: Option[Expression],
    leftOutput: Seq[Attribute],
    rightOutput: Seq[Attribute],
    resultOutput: Seq[Attribute],
    indexOnLeft: Boolean,
    joinType: JoinType,
    keepProbe: Boolean,
    keepIndex: Boolean,
    codec: KeyCodec,
    keyColumn: String,
    numOutputRows: SQLMetric,
    numProbeRows: SQLMetric) {

  def indexSideWidth: Int = indexProjects.length
}

/**
 * The generated code an [[IndexedJoinExec]] task joins with (predicates and projections), made
 * once per task and shared by the partitions it joins: generating a projection's code costs
 * about a millisecond even when the compiled class is cached, as much as joining a small probe
 * side with a partition. Used by one thread at a time (the projections reuse their result row).
 */
private[indexed] final class JoinCode(val spec: IndexedJoinSpec) {
  import spec._

  lazy val indexFilterPredicate: Option[BasePredicate] =
    indexFilter.map(f => Predicate.create(f, relationOutput))
  lazy val project: InternalRow => InternalRow =
    if (indexProjects == relationOutput) identity else UnsafeProjection.create(indexProjects, relationOutput)
  /** The index columns the filter and projections read: a compact row decodes only these. */
  lazy val usedIndexColumns: Array[Boolean] = {
    val used = AttributeSet(indexProjects.flatMap(_.references) ++ indexFilter.toSeq.flatMap(_.references))
    relationOutput.map(used.contains).toArray
  }
  lazy val condition: Option[BasePredicate] =
    extraCondition.map(c => Predicate.create(c, leftOutput ++ rightOutput))
  val joined = new JoinedRow
  // Nullable inputs: outer joins feed null rows for sides whose columns are not nullable.
  lazy val result: UnsafeProjection =
    UnsafeProjection.create(resultOutput, (leftOutput ++ rightOutput).map(_.withNullability(true)))
  lazy val semiResult: UnsafeProjection = UnsafeProjection.create(resultOutput, resultOutput)
  val nullIndex = new GenericInternalRow(indexSideWidth)
  val nullProbe = new GenericInternalRow(probeOutput.length)
  /** Pages of decoded blocks a partition's reader gave back, for the next one's (no new arrays). */
  val decodedPages = new mutable.ArrayBuffer[Array[Byte]]()
}

/**
 * An [[IndexedJoinExec]] task's join of the probe rows of index partition `partition` with it.
 * With `check`, the first probe rows are verified to hash to this partition (a probe side
 * partitioned otherwise than the index would silently miss matches).
 */
private[indexed] final class PartitionJoin(
    code: JoinCode,
    part: IndexedPartition,
    partition: Int,
    check: Boolean) {
  import code._
  import code.spec._

  private val view = part.newRowView()
  private val memory = if (part.packedBatches == 0) None else TaskMemoryReservation.forCurrentTask()
  private val reader = PartitionJoin.reader(part, memory, decodedPages).decodeOnly(usedIndexColumns)
  private val trackMatches = keepIndex || ((joinType == LeftSemi || joinType == LeftAnti) && indexOnLeft)
  private val matched = if (trackMatches) new mutable.LongMap[Unit]() else null
  private var checked = 0
  private val keyHolder = new GenericInternalRow(1)

  /** The joined rows: the probe rows' results, then the index rows that must appear unmatched. */
  def rows(probeRows: Iterator[InternalRow]): Iterator[InternalRow] = rows(probeRows, distinctRows = false)

  /**
   * [[rows]] of probe rows that are `distinctRows` (each its own object, not changed while the
   * join runs) are not copied first.
   */
  def rows(probeRows: Iterator[InternalRow], distinctRows: Boolean): Iterator[InternalRow] =
    // `++` takes its right side lazily: unmatched rows are known once every probe row was seen,
    // and the decoded blocks are given back once this partition is joined (a task may join more).
    (probed(if (distinctRows) probeRows else probeRows.map(_.copy())) ++ unmatchedIndexRows ++ {
      reader.release()
      memory.foreach(_.releaseAll())
      Iterator.empty[InternalRow]
    })
      .map { row => numOutputRows += 1; row }

  private def pair(indexRow: InternalRow, probeRow: InternalRow): InternalRow =
    if (indexOnLeft) joined(indexRow, probeRow) else joined(probeRow, indexRow)

  private def keepsIndexRow(raw: InternalRow): Boolean = indexFilterPredicate.forall(_.eval(raw))

  private def checkPartition(probeRow: InternalRow): Unit =
    if (check && checked < 1024) {
      checked += 1
      val expected = partitionIdOfProbe.eval(probeRow).asInstanceOf[Int]
      if (expected != partition) {
        throw new HyperspaceException(s"Indexed join on '$keyColumn': a probe row of " +
          s"partition $expected reached partition $partition (the probe side was not " +
          "partitioned like the index).")
      }
    }

  /**
   * The newest-first pointers of the index rows with each probe row's key (none for a null key).
   * The probe rows' chains of equal keys are walked in turns, up to [[PartitionJoin.Walked]]
   * steps each: every step reads a row at a random place in the partition, mostly a cache miss,
   * and steps of different chains do not depend on one another, so the CPU overlaps their misses
   * where walking one chain after another waits for each miss in turn (following chains was a
   * third of a 100K-row probe's join time). A longer chain goes on lazily from where it stopped.
   */
  private def chains(probeRows: IndexedSeq[InternalRow]): IndexedSeq[Iterator[Long]] = {
    val n = probeRows.length
    val next = new Array[Long](n)
    var i = 0
    while (i < n) {
      val value = boundKey.eval(probeRows(i))
      next(i) = if (value == null) IndexedPartition.NoRow
      else {
        checkPartition(probeRows(i))
        keyHolder.update(0, value)
        reader.headOf(keyHolder, 0)
      }
      i += 1
    }
    val walked = Array.fill(n)(new mutable.ArrayBuilder.ofLong)
    var steps = 0
    var more = true
    while (more && steps < PartitionJoin.Walked) {
      more = false
      i = 0
      while (i < n) {
        val p = next(i)
        if (p != IndexedPartition.NoRow) {
          walked(i).addOne(p)
          next(i) = reader.previous(p)
          more = true
        }
        i += 1
      }
      steps += 1
    }
    (0 until n).map { i =>
      val rest = next(i)
      val first = walked(i).result().iterator
      if (rest == IndexedPartition.NoRow) first else first ++ reader.chainFrom(rest)
    }
  }

  /** The index rows joining `probeRow` at `pointers`, as (pointer, projected index row) pairs. */
  private def matches(probeRow: InternalRow, pointers: Iterator[Long]): Iterator[(Long, InternalRow)] =
    pointers.flatMap { p =>
      val raw = reader.rowAt(p, view)
      if (keepsIndexRow(raw)) {
        val indexRow = project(raw)
        if (condition.forall(_.eval(pair(indexRow, probeRow)))) Some(p -> indexRow) else None
      } else None
    }

  /** The results of the probe rows (for index-side semi and anti joins, none: only marks). */
  private def probed(probeRows: Iterator[InternalRow]): Iterator[InternalRow] =
    // Probe rows are grouped, so each must be its own object (see rows).
    probeRows.grouped(PartitionJoin.Group).flatMap { group =>
      val rows = group.toIndexedSeq
      rows.iterator.zip(chains(rows).iterator).flatMap { case (probeRow, pointers) =>
        numProbeRows += 1
        val found = matches(probeRow, pointers)
        joinType match {
          case LeftSemi | LeftAnti if indexOnLeft =>
            found.foreach { case (p, _) => matched.update(p, ()) }
            Iterator.empty
          case LeftSemi =>
            if (found.hasNext) Iterator.single(semiResult(probeRow)) else Iterator.empty
          case LeftAnti =>
            if (found.hasNext) Iterator.empty else Iterator.single(semiResult(probeRow))
          case _ =>
            var any = false
            val out = found.map { case (p, indexRow) =>
              any = true
              if (trackMatches) matched.update(p, ())
              result(pair(indexRow, probeRow))
            }
            if (keepProbe) {
              out ++ (if (any) Iterator.empty else Iterator.single(result(pair(nullIndex, probeRow))))
            } else out
        }
      }
    }

  /** The index rows the join keeps by whether a probe row matched them; only after [[probed]]. */
  private def unmatchedIndexRows: Iterator[InternalRow] = {
    if (!trackMatches) return Iterator.empty
    part.scanWithPointers(usedIndexColumns).flatMap { case (p, raw) =>
      if (!keepsIndexRow(raw)) None
      else {
        val hit = matched.contains(p)
        joinType match {
          case LeftSemi => if (hit) Some(semiResult(project(raw))) else None
          case LeftAnti => if (hit) None else Some(semiResult(project(raw)))
          case _ => if (hit) None else Some(result(pair(project(raw), nullProbe)))
        }
      }
    }
  }
}

private[indexed] object PartitionJoin {

  /** Probe rows whose chains of equal keys are walked in turns (see `chains`). */
  val Group = 16

  /** Steps of each chain walked in turns; the rest of a longer chain is read lazily. */
  val Walked = 32

  /** Most decoded blocks of packed batches a join task keeps (execution memory permitting). */
  val MaxDecodedBytes: Long = 64L * 1024 * 1024

  /**
   * A reader keeping the decoded blocks of packed batches for the task: probe keys land on random
   * blocks, and decoding each block once per partition join, not once per row read, is what
   * keeps a join over packed batches as fast as over plain ones. The blocks kept are reserved in
   * `memory`, the task's execution memory (fewer when the task cannot get that much), until the
   * caller releases them or the task ends.
   */
  def reader(part: IndexedPartition, memory: Option[TaskMemoryReservation],
      pool: mutable.ArrayBuffer[Array[Byte]]): part.Reader = {
    if (part.packedBatches == 0) return part.newReader()
    var bytes = math.min(MaxDecodedBytes, part.decodedBlocksBytes)
    memory.foreach { memory =>
      while (bytes >= 1024 * 1024 && !memory.reserve(bytes)) bytes /= 2
      if (bytes < 1024 * 1024) bytes = 0
      TaskContext.get().addTaskCompletionListener[Unit](_ => memory.releaseAll())
    }
    part.newReader(bytes, pool)
  }
}
