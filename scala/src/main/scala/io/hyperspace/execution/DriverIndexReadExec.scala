package io.hyperspace.execution

import java.io.Closeable

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Predicate, UnsafeProjection}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{CollectLimitExec, ColumnarToRowExec, ExecSubqueryExpression, FileSourceScanExec, FilterExec, InputAdapter, ProjectExec, SQLExecution, SparkPlan, UnaryExecNode, WholeStageCodegenExec}
import org.apache.spark.sql.execution.datasources.FileFormat
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.index.split.SplitSeekFileIndex
import io.hyperspace.shims.FileListing

/**
 * `child` — Filters and Projects over an index scan of a few small files, or over a split index
 * seek's scan of a few row groups of its source — with its rows read in the driver when they are
 * collected there (`collect`, `show`, `first`, a scalar subquery): the files are read with the
 * scan format's own reader (its filters pushed down, so Parquet skips row groups and pages of the
 * sorted files; a seek's format reads only the located row groups), the Filters and Projects
 * evaluated on the rows, and no job runs. Once an index has cut a lookup to one file or a few
 * row groups, Spark's fixed cost of a job (stages, a task's launch, its result's trip back) is
 * most of the query's time (benchmarks/results/seek-sf1.md, split-point-profile.md).
 *
 * Everywhere else `child` runs as planned: when another operator or a job reads the rows
 * (`execute`), and when the files hold more than `maxRows` matching rows, which bounds what the
 * driver holds (the read stops there and the plan runs as a job instead).
 */
case class DriverIndexReadExec(child: SparkPlan, maxRows: Int) extends UnaryExecNode {

  override def nodeName: String = "DriverIndexRead"
  override def simpleString(maxFields: Int): String =
    s"$nodeName (rows collected to the driver: up to $maxRows read there)"
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning = child.outputPartitioning
  override def outputOrdering = child.outputOrdering

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numFiles" -> SQLMetrics.createMetric(sparkContext, "files read in the driver"),
    "filesSize" -> SQLMetrics.createSizeMetric(sparkContext, "size of what was read in the driver"),
    "rowsRead" -> SQLMetrics.createMetric(sparkContext, "rows read from the files, before filters"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override protected def doExecute(): RDD[InternalRow] = child.execute()

  override def executeCollect(): Array[InternalRow] = readInDriver().getOrElse(child.executeCollect())

  override def executeTake(n: Int): Array[InternalRow] =
    readInDriver().map(_.take(n)).getOrElse(child.executeTake(n))

  override def executeTail(n: Int): Array[InternalRow] =
    readInDriver().map(_.takeRight(n)).getOrElse(child.executeTail(n))

  /** The rows of `child`, read in the driver; None when more than `maxRows` match. */
  private def readInDriver(): Option[Array[InternalRow]] = child match {
    case DriverIndexRead.Shape(steps, scan) => read(steps, scan)
    case _ => None
  }

  private def read(steps: Seq[SparkPlan], scan: FileSourceScanExec): Option[Array[InternalRow]] = {
    val relation = scan.relation
    val files = relation.location.listFiles(Nil, scan.dataFilters).flatMap(_.files).map(_.fileStatus)
    val pushed = scan.dataFilters.flatMap(SparkInternals.sourceFilter)
    val read = relation.fileFormat.buildReaderWithPartitionValues(
      sparkSession = relation.sparkSession,
      dataSchema = relation.dataSchema,
      partitionSchema = relation.partitionSchema,
      requiredSchema = scan.requiredSchema,
      filters = pushed,
      options = relation.options + (FileFormat.OPTION_RETURNING_BATCH -> "false"),
      hadoopConf = relation.sparkSession.sessionState.newHadoopConfWithOptions(relation.options))
    // Each Filter and Project, from the scan up, as a function of the rows below it.
    val pipeline: Iterator[InternalRow] => Iterator[InternalRow] =
      steps.reverse.foldLeft(identity[Iterator[InternalRow]] _) {
        case (below, filter: FilterExec) =>
          val predicate = Predicate.create(filter.condition, filter.child.output)
          predicate.initialize(0)
          rows => below(rows).filter(predicate.eval)
        case (below, project: ProjectExec) =>
          val projection = UnsafeProjection.create(project.projectList, project.child.output)
          projection.initialize(0)
          rows => below(rows).map(projection)
        case (_, other) => throw new IllegalStateException(s"not a Filter or Project: ${other.nodeName}")
      }
    // Readers and projections reuse their row objects: what is kept is a copy.
    val toOutput = UnsafeProjection.create(output, output)
    val rows = ArrayBuffer.empty[InternalRow]
    val remaining = files.iterator
    var fits = true
    var rowsRead = 0L
    while (fits && remaining.hasNext) {
      val raw = read(FileListing.partitionedFile(remaining.next()))
      try {
        val counted = raw.asInstanceOf[Iterator[InternalRow]].map { r => rowsRead += 1; r }
        val matching = pipeline(counted)
        while (fits && matching.hasNext) {
          rows += toOutput(matching.next()).copy()
          fits = rows.length <= maxRows
        }
      } finally raw match {
          case c: Closeable => c.close()
          // The row-based Parquet reader hands out a plain iterator that closes its file at its
          // end or when its task completes, and the driver runs no task: a read stopped early
          // (past maxRows) runs it to its end, so the file is not left open until GC.
          case rest => if (!fits) rest.foreach(_ => ())
        }
    }
    if (!fits) None
    else {
      metrics("numFiles").add(files.size)
      metrics("filesSize").add(relation.location match {
        case seek: SplitSeekFileIndex => seek.plan.bytesToRead // its row groups, not the files they lie in
        case _ => files.map(_.getLen).sum
      })
      metrics("rowsRead").add(rowsRead)
      metrics("numOutputRows").add(rows.length)
      SQLMetrics.postDriverMetricUpdates(sparkContext,
        sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY), metrics.values.toSeq)
      Some(rows.toArray)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): DriverIndexReadExec = copy(child = newChild)
}

object DriverIndexRead {

  /**
   * A plan of only Filters and Projects over an index scan or a split index seek's scan of its
   * source (with the row/codegen wrappers Spark adds around them): (the Filters and Projects, top
   * first; the scan).
   */
  object Shape {
    def unapply(plan: SparkPlan): Option[(Seq[SparkPlan], FileSourceScanExec)] = plan match {
      case scan: FileSourceScanExec
          if scan.relation.isInstanceOf[IndexHadoopFsRelation] ||
            scan.relation.location.isInstanceOf[SplitSeekFileIndex] =>
        Some((Nil, scan))
      case f: FilterExec => unapply(f.child).map { case (steps, scan) => (f +: steps, scan) }
      case p: ProjectExec => unapply(p.child).map { case (steps, scan) => (p +: steps, scan) }
      case w: WholeStageCodegenExec => unapply(w.child)
      case i: InputAdapter => unapply(i.child)
      case c: ColumnarToRowExec => unapply(c.child)
      case _ => None
    }
  }
}

/**
 * Marks the plan's root for a driver-side read ([[DriverIndexReadExec]]) when it is Filters and
 * Projects over an index scan of index files of at most `spark.hyperspace.index.driverRead.maxBytes`
 * in all, after bucket pruning, or over a split index seek reading row groups of at most
 * `spark.hyperspace.index.split.driverRead.maxBytes`. Only the root: its rows are what the driver
 * collects.
 */
object ReadSmallIndexLookupsInDriver extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = plan match {
    case limit: CollectLimitExec if fits(limit.child) => limit.withNewChildren(Seq(marked(limit.child)))
    case root if fits(root) => marked(root)
    case _ => plan
  }

  private def marked(plan: SparkPlan): SparkPlan =
    DriverIndexReadExec(plan, HyperspaceConf.driverReadMaxRows(plan.session))

  private def fits(plan: SparkPlan): Boolean = plan match {
    case DriverIndexRead.Shape(steps, scan)
        if plan.session != null && evaluable(steps :+ scan) && readsOnlyData(scan) =>
      scan.relation.location match {
        // A seek reads the row groups it located (and the files the index does not cover), not
        // the files they lie in; their bytes are known since planning.
        case seek: SplitSeekFileIndex =>
          val limit = HyperspaceConf.splitDriverReadMaxBytes(plan.session)
          limit > 0 && seek.plan.bytesToRead <= limit
        case location =>
          val limit = HyperspaceConf.driverReadMaxBytes(plan.session)
          limit > 0 && location.listFiles(Nil, scan.dataFilters).flatMap(_.files).map(_.fileStatus.getLen).sum <= limit
      }
    case _ => false
  }

  /**
   * Whether the driver evaluates `nodes`' expressions as tasks would: deterministic ones (no
   * `rand`, no `input_file_name`, which read a task's state) without subqueries (whose results
   * only a job's preparation computes).
   */
  private def evaluable(nodes: Seq[SparkPlan]): Boolean =
    nodes.flatMap(_.expressions).forall(e => e.deterministic && !e.exists(_.isInstanceOf[ExecSubqueryExpression]))

  /** Whether the scan outputs just the data columns its reader returns (no partition or metadata columns). */
  private def readsOnlyData(scan: FileSourceScanExec): Boolean =
    scan.partitionFilters.isEmpty && scan.relation.partitionSchema.isEmpty &&
      scan.output.map(a => (a.name, a.dataType)) == scan.requiredSchema.fields.toSeq.map(f => (f.name, f.dataType))
}
