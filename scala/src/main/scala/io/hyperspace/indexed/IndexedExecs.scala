package io.hyperspace.indexed

import org.apache.spark.TaskContext
import org.apache.spark.rdd.{PartitionPruningRDD, RDD}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{BinaryExecNode, FilterExec, LeafExecNode, ProjectExec, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.exchange.BroadcastExchangeExec
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import org.apache.spark.sql.execution.hyperspace.PartitionedBroadcast

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf

/**
 * Reads every row of an Indexed DataFrame version. It reports the key's hash partitioning
 * (except for floating point keys, whose partitioning is on the normalised key), so Spark does
 * not shuffle it again for aggregates or joins clustered on the key.
 *
 * With `tasks`, it reads the partitions in that many tasks instead (partitions cached on one
 * executor together), and reports no partitioning: [[ScanBroadcastIndexInFewTasks]] sets it for
 * a scan whose rows are only collected for a broadcast, where nothing needs the partitioning and
 * a task per partition cost more than reading a small index.
 */
case class IndexedScanExec(output: Seq[Attribute], relation: IndexedRelation, tasks: Option[Int] = None)
  extends LeafExecNode {

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override def outputPartitioning: Partitioning = {
    val data = relation.data
    if (tasks.isDefined) {
      UnknownPartitioning(data.tasksFor(tasks.get))
    } else if (data.codec.partitionKey(output(data.keyOrdinal)) eq output(data.keyOrdinal)) {
      HashPartitioning(Seq(output(data.keyOrdinal)), data.numPartitions)
    } else {
      UnknownPartitioning(data.numPartitions)
    }
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val numOutputRows = longMetric("numOutputRows")
    val partitions = tasks match {
      case Some(n) => relation.data.inTasks(n).map(_._2)
      case None => relation.data.rdd
    }
    partitions.mapPartitions { parts =>
      parts.flatMap(_.iterator).map { row => numOutputRows += 1; row }
    }
  }

  override def simpleString(maxFields: Int): String =
    s"IndexedScan ${truncatedString(output, "[", ", ", "]", maxFields)}, " +
      s"key=${output(relation.data.keyOrdinal).name}, version=${relation.data.version}" +
      tasks.map(n => s", ${relation.data.tasksFor(n)} tasks").getOrElse("")
}

/**
 * Reads an Indexed DataFrame in one task per task slot where its rows are only collected for a
 * broadcast (Spark's broadcast hash join of a small index side): a task per index partition
 * cost more than the rows, e.g. 16 tasks for a 25,000-row index against 2 for the same rows
 * cached by `df.cache()`. Only through projections and filters, which need no distribution of
 * their input; a run after Spark placed its exchanges (a pre-transition columnar rule).
 */
object ScanBroadcastIndexInFewTasks extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
    case b: BroadcastExchangeExec => b.withNewChildren(Seq(inFewTasks(b.child)))
  }

  private def inFewTasks(plan: SparkPlan): SparkPlan = plan match {
    case s: IndexedScanExec if s.tasks.isEmpty =>
      s.copy(tasks = Some(s.relation.data.rdd.sparkContext.defaultParallelism))
    case p: ProjectExec => p.withNewChildren(Seq(inFewTasks(p.child)))
    case f: FilterExec => f.withNewChildren(Seq(inFewTasks(f.child)))
    case other => other
  }
}

/**
 * A point lookup (`key = v` or `key IN (v1, ...)`): runs tasks only on the partitions the keys
 * hash to, each looking its keys up in the trie and following the chain of equal keys.
 */
case class IndexedLookupExec(output: Seq[Attribute], relation: IndexedRelation, keys: Seq[Any])
  extends LeafExecNode {

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "numPartitionsRead" -> SQLMetrics.createMetric(sparkContext, "partitions read"))

  @transient private lazy val keysByPartition: Map[Int, Array[AnyRef]] =
    relation.data.keysByPartition(keys)

  override def outputPartitioning: Partitioning = UnknownPartitioning(keysByPartition.size)

  override protected def doExecute(): RDD[InternalRow] = {
    val data = relation.data
    val byPartition = keysByPartition
    longMetric("numPartitionsRead").set(byPartition.size.toLong)
    val numOutputRows = longMetric("numOutputRows")
    val looked = data.rdd.mapPartitionsWithIndex { (p, parts) =>
      val wanted = byPartition.getOrElse(p, Array.empty[AnyRef])
      parts.flatMap(part => wanted.iterator.flatMap(part.lookup))
        .map { row => numOutputRows += 1; row: InternalRow }
    }
    PartitionPruningRDD.create(looked, byPartition.contains)
  }

  // Collecting a lookup (the plan's root: `get_rows(k).collect()`, `SELECT * ... WHERE k = v`)
  // skips the SQL execution's RDD wrapping: partitions held in this JVM are read in place, the
  // others by one job on those partitions only.
  override def executeCollect(): Array[InternalRow] = {
    val rows = relation.data.lookup(keys, Option(session).forall(HyperspaceConf.indexedLookupReadInPlace))
    longMetric("numPartitionsRead").set(keysByPartition.size.toLong)
    longMetric("numOutputRows").set(rows.length.toLong)
    Option(sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)).foreach { id =>
      SQLMetrics.postDriverMetricUpdates(sparkContext, id, metrics.values.toSeq)
    }
    rows
  }

  override def executeTake(n: Int): Array[InternalRow] = executeCollect().take(n)

  override def simpleString(maxFields: Int): String =
    s"IndexedLookup ${truncatedString(output, "[", ", ", "]", maxFields)}, " +
      s"key=${output(relation.data.keyOrdinal).name} IN " +
      s"${truncatedString(keys.map(String.valueOf), "(", ", ", ")", maxFields)}, " +
      s"version=${relation.data.version}"
}

/**
 * An equi-join of a plan (the probe side) with an Indexed DataFrame on its key. The index is
 * the pre-built build side: Spark shuffles only the probe side, by the join key into the
 * index's hash partitioning, and each task probes its partition's trie with the probe rows it
 * got. The index side may be filtered and projected (`indexFilters`, `indexProjects`, over the
 * relation's output); `extraCondition` (other equalities and the join's other conditions, over
 * the join's left ++ right output) is applied to every candidate pair after the probe.
 *
 * Index rows that must appear unmatched (the index side of outer joins, index-side semi and
 * anti joins) are found by a scan of the partition after all its probe rows were seen.
 *
 * The index leaf (`index`) is a child so Spark's adaptive execution, which only coalesces
 * shuffle partitions when every leaf of a stage is a shuffle, never changes the probe side's
 * partition count; the probe rows' partitions are checked against the index's anyway.
 *
 * With `broadcastProbe` (a probe side small enough to broadcast, paper §III-C) the probe rows
 * are broadcast instead of shuffled, grouped by the index partition their key hashes to (hashed
 * once, where the broadcast is built), and each index partition takes its group: no shuffle
 * stage at all, and every probe row is still owned by one partition (which outer, semi and anti
 * joins need). The index partitions are then joined in `broadcastTasks` tasks (one per task
 * slot, each task's partitions where one executor caches them): joining a small probe side is
 * a few milliseconds per partition, less than a task's own fixed cost. For the smallest probe
 * sides `broadcastTasks` is 1 (see [[IndexedStrategy]]) and the output is a single partition.
 *
 * With `probeInPlace` as well (local mode, where one JVM caches every index partition and runs
 * every task; joins whose output each probe row decides alone) the probe side is not moved at
 * all: a task per probe partition (one for all of them when `broadcastTasks` is 1) reads its
 * probe rows and joins them with the index partitions they hash to ([[ProbeInPlaceRDD]]). No
 * job collects the probe side, no broadcast is built, and the join needs no stage of its own.
 *
 * `reason` is why the planner chose this over Spark's own join ([[IndexedJoinSelection]]).
 */
case class IndexedJoinExec(
    probe: SparkPlan,
    index: IndexedScanExec,
    probeKey: Expression,
    indexFilters: Seq[Expression],
    indexProjects: Seq[NamedExpression],
    joinType: JoinType,
    indexOnLeft: Boolean,
    extraCondition: Option[Expression],
    broadcastProbe: Boolean,
    broadcastTasks: Int,
    reason: String = "",
    probeInPlace: Boolean = false) extends BinaryExecNode {

  override def left: SparkPlan = probe
  override def right: SparkPlan = index

  private def data: IndexedData = index.relation.data

  private def indexSideOutput: Seq[Attribute] = indexProjects.map(_.toAttribute)
  private def leftOutput: Seq[Attribute] = if (indexOnLeft) indexSideOutput else probe.output
  private def rightOutput: Seq[Attribute] = if (indexOnLeft) probe.output else indexSideOutput

  override def output: Seq[Attribute] = joinType match {
    case _: InnerLike => leftOutput ++ rightOutput
    case LeftOuter => leftOutput ++ rightOutput.map(_.withNullability(true))
    case RightOuter => leftOutput.map(_.withNullability(true)) ++ rightOutput
    case FullOuter => (leftOutput ++ rightOutput).map(_.withNullability(true))
    case LeftSemi | LeftAnti => leftOutput
    case other => throw new IllegalStateException(s"unsupported join type $other")
  }

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "numProbeRows" -> SQLMetrics.createMetric(sparkContext, "number of probe rows"))

  override def requiredChildDistribution: Seq[Distribution] = {
    val probeSide =
      if (probeInPlace) UnspecifiedDistribution
      else if (broadcastProbe) BroadcastDistribution(IndexedJoinExec.probeBroadcastMode(probeKey, data.numPartitions,
          probe.output))
      else StatefulOpClusteredDistribution(Seq(probeKey), data.numPartitions)
    probeSide :: UnspecifiedDistribution :: Nil
  }

  // One task's output is all rows in one partition: an aggregate or a clustered operator above
  // needs no exchange (Spark's UnknownPartitioning(1) would satisfy only AllTuples).
  override def outputPartitioning: Partitioning =
    if (probeInPlace) {
      if (broadcastTasks == 1) SinglePartition else UnknownPartitioning(probe.outputPartitioning.numPartitions)
    } else if (!broadcastProbe) UnknownPartitioning(data.numPartitions)
    else if (data.tasksFor(broadcastTasks) == 1) SinglePartition
    else UnknownPartitioning(data.tasksFor(broadcastTasks))

  private def probePreserved: Boolean = joinType match {
    case LeftOuter => !indexOnLeft
    case RightOuter => indexOnLeft
    case FullOuter => true
    case _ => false
  }

  private def indexPreserved: Boolean = joinType match {
    case LeftOuter => indexOnLeft
    case RightOuter => !indexOnLeft
    case FullOuter => true
    case _ => false
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val spec = joinSpec()
    if (probeInPlace) joinProbeInPlace(spec)
    else if (broadcastProbe) joinBroadcastProbe(spec)
    else joinShuffledProbe(spec)
  }

  /** The probe rows joined where they are, in one task or a task per probe partition. */
  private def joinProbeInPlace(spec: IndexedJoinSpec): RDD[InternalRow] = {
    val probeRdd = probe.execute()
    val all = (0 until probeRdd.getNumPartitions).toArray
    val groups = if (broadcastTasks == 1) Array(all) else all.map(Array(_))
    new ProbeInPlaceRDD(probeRdd, data.rdd, groups, spec)
  }

  /** What each task needs to join its partition, taken out of this node (closures ship it). */
  private def joinSpec(): IndexedJoinSpec = IndexedJoinSpec(
    probeOutput = probe.output,
    boundKey = BindReferences.bindReference(probeKey, probe.output),
    partitionIdOfProbe = BindReferences.bindReference(
      HashPartitioning(Seq(probeKey), data.numPartitions).partitionIdExpression, probe.output),
    relationOutput = index.output,
    indexFilter = indexFilters.reduceOption(And),
    indexProjects = indexProjects,
    extraCondition = extraCondition,
    leftOutput = leftOutput,
    rightOutput = rightOutput,
    resultOutput = output,
    indexOnLeft = indexOnLeft,
    joinType = joinType,
    keepProbe = probePreserved,
    keepIndex = indexPreserved,
    codec = data.codec,
    keyColumn = data.keyColumn,
    numOutputRows = longMetric("numOutputRows"),
    numProbeRows = longMetric("numProbeRows"))

  /** Each index partition joins the broadcast probe rows whose key hashes to it. */
  private def joinBroadcastProbe(spec: IndexedJoinSpec): RDD[InternalRow] = {
    val broadcastRows = probe.executeBroadcast[Any]()
    data.inTasks(broadcastTasks).mapPartitions { parts =>
      val rowsOf = PartitionedBroadcast.reader(broadcastRows.value, spec.probeOutput.size)
      val code = new JoinCode(spec)
      parts.flatMap { case (partition, part) =>
        new PartitionJoin(code, part, partition, check = false).rows(rowsOf(partition))
      }
    }
  }

  /** Each index partition joins the probe partition of the same number (shuffled to match it). */
  private def joinShuffledProbe(spec: IndexedJoinSpec): RDD[InternalRow] = {
    val probeRdd = probe.execute()
    if (probeRdd.getNumPartitions != data.numPartitions) {
      throw new HyperspaceException(s"Indexed join on '${data.keyColumn}': the probe side has " +
        s"${probeRdd.getNumPartitions} partitions but the index has ${data.numPartitions}.")
    }
    probeRdd.zipPartitions(data.rdd) { (probeRows, parts) =>
      new PartitionJoin(new JoinCode(spec), parts.next(), TaskContext.getPartitionId(), check = true).rows(probeRows)
    }
  }

  override protected def withNewChildrenInternal(
      newLeft: SparkPlan, newRight: SparkPlan): IndexedJoinExec =
    copy(probe = newLeft, index = newRight.asInstanceOf[IndexedScanExec])

  override def simpleString(maxFields: Int): String =
    s"IndexedJoin $joinType, key=${data.keyColumn}, probe key=${probeKey.sql}, " +
      s"index on ${if (indexOnLeft) "left" else "right"}" +
      (if (probeInPlace)
         s", probe read in place, ${if (broadcastTasks == 1) "1 task" else "a task per probe partition"}"
       else if (broadcastProbe) s", probe broadcast, ${data.tasksFor(broadcastTasks)} tasks"
       else "") +
      extraCondition.map(c => s", condition=${c.sql}").getOrElse("") +
      (if (reason.isEmpty) "" else s" ($reason)")
}

object IndexedJoinExec {

  /**
   * The broadcast an indexed join needs of its probe side: the rows grouped by the number of the
   * index partition `probeKey` hashes to, among `partitions`.
   */
  def probeBroadcastMode(probeKey: Expression, partitions: Int, probeOutput: Seq[Attribute]): BroadcastMode =
    PartitionedBroadcast.mode(
      BindReferences.bindReference(HashPartitioning(Seq(probeKey), partitions).partitionIdExpression, probeOutput),
      partitions, probeOutput.map(_.dataType))
}
