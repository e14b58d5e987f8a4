package io.hyperspace.execution

import java.io.Closeable
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable.ArrayBuffer
import scala.util.control.{ControlThrowable, NonFatal}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.hadoop.mapred.JobConf
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, InterpretedMutableProjection, JoinedRow, MutableProjection, RowOrdering, SortOrder, SpecificInternalRow, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{DeclarativeAggregate, Partial}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodeAndComment, CodegenContext, CodeGenerator}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{CoalesceExec, CollectLimitExec, ColumnarToRowExec, ExecSubqueryExpression, FileSourceScanExec, FilterExec, InputAdapter, ProjectExec, SQLExecution, SparkPlan, UnaryExecNode, WholeStageCodegenEvaluatorFactory, WholeStageCodegenExec}
import org.apache.spark.sql.execution.aggregate.{BaseAggregateExec, HashAggregateExec}
import org.apache.spark.sql.execution.datasources.{FileFormat, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.vectorized.ColumnarBatch

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.expressions.{FewRowsProjection, SharedCodePredicate}
import io.hyperspace.index.DriverParquetReader
import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.index.split.{PageReadCounts, SplitPageRead, SplitSeekFileIndex, SplitSeekParquetFormat}
import io.hyperspace.shims.{AggregateSteps, FileListing, SortAggregation}

/**
 * `child` — Filters, Projects and aggregates over an index scan of a few small files, or Filters
 * and Projects over a split index seek's scan of a few row groups of its source — with its rows
 * read in the driver when they are collected there (`collect`, `show`, `first`, a scalar
 * subquery): the files are read with the scan format's own reader (its filters pushed down, so
 * Parquet skips row groups and pages of the sorted files; a seek's format reads only the located
 * row groups), the Filters, Projects and aggregates evaluated on the rows, and no job runs. Once
 * an index has cut a lookup or a small range to one file or a few row groups, Spark's fixed cost
 * of a job (stages, a task's launch, its result's trip back) is most of the query's time
 * (benchmarks/results/archive/seek-sf1.md, h-18-driver-aggregate-sf1.md, split-point-profile.md).
 *
 * Several index files are read as a job's tasks would read them, without the job: in runs of
 * consecutive files on `spark.hyperspace.index.driverRead.threads` threads (each run through the
 * row-by-row steps and a global aggregate's partial step; the rest of the plan over the runs'
 * rows, in file order), and — outside lookups of a few sorted keys — with the plan's own
 * whole-stage code over the reader's batches for the Filters and Projects above the scan (and a
 * global aggregate's partial step above them), which evaluates them several times faster than
 * row by row (TPC-H Q6 over 15 Z-order files: benchmarks/results/archive/h-18-q6-threads.notes.md).
 *
 * An aggregate is evaluated as Spark's sort-based aggregation evaluates it in a task (the same
 * aggregate functions, partial and final steps in turn, over all the rows as one partition,
 * which is what the plan reads once a coalesce to one partition or the index's buckets made the
 * shuffle unnecessary); a global aggregate streams its input, a grouped one sorts it by the
 * grouping keys first.
 *
 * Everywhere else `child` runs as planned: when another operator or a job reads the rows
 * (`execute`), and when the driver would hold more than `maxRows` rows (the result, and a grouped
 * aggregate's input), which bounds its memory (the read stops there and the plan runs as a job
 * instead).
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
    "readThreads" -> SQLMetrics.createMetric(sparkContext, "threads the files were read on"),
    "compiledSteps" -> SQLMetrics.createMetric(sparkContext, "steps run as their whole-stage code over batches"),
    "rowGroupsByPages" -> SQLMetrics.createMetric(sparkContext, "row groups read by their located pages"),
    "rowGroupsWhole" -> SQLMetrics.createMetric(sparkContext, "located row groups read whole"),
    "keysDecoded" -> SQLMetrics.createMetric(sparkContext, "key values decoded to locate rows"),
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
    // Configured by the format's reader below for the scan's schema, which a page read reuses; the
    // reader of the first run (on whose thread the page read reads) holds it as its own.
    val hadoopConf =
      DriverParquetReader.jobConf(relation.sparkSession, relation.options, files.headOption.map(_.getPath))
    // The other runs' readers, on other threads, each set their files' predicates on a copy.
    def confOf(run: Int): Configuration = if (run == 0) hadoopConf else new JobConf(hadoopConf)
    def formatReader = relation.fileFormat.buildReaderWithPartitionValues(
      sparkSession = relation.sparkSession,
      dataSchema = relation.dataSchema,
      partitionSchema = relation.partitionSchema,
      requiredSchema = scan.requiredSchema,
      filters = pushed,
      options = relation.options + (FileFormat.OPTION_RETURNING_BATCH -> "false"),
      hadoopConf = hadoopConf)
    def driverReader(run: Int) = DriverParquetReader(relation.sparkSession, relation.partitionSchema,
      scan.requiredSchema, pushed, relation.options, confOf(run))
    // Only plain Parquet (index files, or a seek's row groups of Parquet sources) is read without the
    // format's reader: a subclass of Spark's Parquet format (a table format's) may read otherwise.
    val plainParquet = relation.fileFormat.getClass == classOf[ParquetFileFormat]
    val ownReads = (plainParquet || relation.fileFormat.isInstanceOf[SplitSeekParquetFormat]) &&
      DriverParquetReader.readsInBatches(relation.sparkSession, relation.partitionSchema, scan.requiredSchema)
    // Built when rows are read one at a time: a read through the plan's compiled code reads batches only.
    // One check of a seek's located files for both readers below: each file's fingerprint is read once.
    lazy val check = relation.fileFormat match {
      case seek: SplitSeekParquetFormat => Some(seek.check(hadoopConf))
      case _ => None
    }
    lazy val readFile: PartitionedFile => Iterator[InternalRow] = (relation.fileFormat, ownReads) match {
      case (seek: SplitSeekParquetFormat, true) => seek.restrict(driverReader(0).get, check.get)
      case (_, true) => driverReader(0).get
      case _ => formatReader
    }
    val pageCounts = new PageReadCounts
    // A lookup of a few keys of a covering index's sorted column reads only the rows holding them.
    val keyRows = if (plainParquet && ownReads) SortedKeyRows.of(scan) else None
    // A seek that located its rows within their row groups reads only the pages holding them.
    lazy val read: PartitionedFile => Iterator[InternalRow] = relation.fileFormat match {
      case seek: SplitSeekParquetFormat if seek.positioned > 0 =>
        SplitPageRead.seekReader(conf, relation.options, scan.requiredSchema, hadoopConf, pageCounts, seek.rowGroups,
          readFile, check.get)
      case seek: SplitSeekParquetFormat =>
        file => {
          pageCounts.whole += seek.rowGroups.get(file.toPath.toString).map(_.size).getOrElse(0)
          readFile(file)
        }
      case _ =>
        keyRows.map(_.reader(conf, relation.options, scan, hadoopConf, pageCounts, readFile)).getOrElse(readFile)
    }
    val held = new RowBudget(maxRows)
    val rowsRead = new AtomicLong
    // Readers and projections reuse their row objects: what is kept is a copy.
    val toOutput = FewRowsProjection.create(output, output)
    val bottomUp = steps.reverse
    val threads = HyperspaceConf.driverReadThreads(relation.sparkSession)
    // Several plain Parquet index files are read on several threads, each with a reader of its own
    // (a located lookup reads few rows of each: on one).
    val onThreads =
      if (plainParquet && ownReads && keyRows.isEmpty && files.size > 1 && threads > 1) {
        DriverIndexRead.stepsPerRun(bottomUp)
      } else None
    // Where the plan's lowest whole-stage code is Filters and Projects over the scan's batches, each
    // run reads batches through that code, compiled as a job's task compiles it; otherwise rows.
    val stage =
      if (plainParquet && ownReads && files.nonEmpty) DriverIndexRead.compiledStage(child, scan, bottomUp) else None
    def batchReader(run: Int) = DriverParquetReader.batches(relation.sparkSession, relation.partitionSchema,
      scan.requiredSchema, pushed, relation.options, confOf(run)).get
    def source(run: Int): RunSource = stage match {
      case Some(compiled) => RunSource.compiled(batchReader(run), compiled, run)
      case None => RunSource.rows(if (run == 0) read else driverReader(run).get)
    }
    var threadsUsed = 1
    val collected = onThreads match {
      case None =>
        val only = source(0)
        readRun(files, only, pipeline(bottomUp.drop(only.steps), held), toOutput, held, rowsRead)
      case Some(perRun) =>
        val (lower, upper) = bottomUp.splitAt(perRun)
        val runOutput = if (upper.isEmpty) output else lower.last.output
        // Created here, one set per run: each thread's reader, code, predicates and projections are its own.
        val runs = DriverReadThreads.runs(files, threads).zipWithIndex.map { case (run, i) =>
          val runSource = source(i)
          val runPipeline = pipeline(lower.drop(runSource.steps), held)
          val toRunOutput = FewRowsProjection.create(runOutput, runOutput)
          () => readRun(run, runSource, runPipeline, toRunOutput, held, rowsRead)
        }
        threadsUsed = runs.size
        val runRows = DriverReadThreads.runAll(relation.sparkSession, runs)
        if (runRows.exists(_.isEmpty)) None
        else {
          val rows = runRows.iterator.flatMap(_.get)
          // The runs' rows (or partial aggregates) are the rows the rest of the plan reads.
          if (upper.isEmpty) Some(rows.to(ArrayBuffer)) else holdAll(pipeline(upper, held)(rows), toOutput, held)
        }
    }
    collected.map { rows =>
      metrics("numFiles").add(files.size)
      metrics("filesSize").add(relation.location match {
        case seek: SplitSeekFileIndex => seek.plan.bytesToRead // its row groups, not the files they lie in
        case _ => files.map(_.getLen).sum
      })
      metrics("rowsRead").add(rowsRead.get)
      metrics("readThreads").add(threadsUsed)
      metrics("compiledSteps").add(stage.map(_.steps.toLong).getOrElse(0L))
      metrics("rowGroupsByPages").add(pageCounts.byPages)
      metrics("rowGroupsWhole").add(pageCounts.whole)
      metrics("keysDecoded").add(pageCounts.keysDecoded)
      metrics("numOutputRows").add(rows.length)
      SQLMetrics.postDriverMetricUpdates(sparkContext,
        sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY), metrics.values.toSeq)
      rows.toArray
    }
  }

  /** Each step of `bottomUp`, from the scan up, as a function of the rows below it. */
  private def pipeline(bottomUp: Seq[SparkPlan], held: RowBudget): Iterator[InternalRow] => Iterator[InternalRow] =
    bottomUp.foldLeft(identity[Iterator[InternalRow]] _) {
      case (below, filter: FilterExec) =>
        val predicate = SharedCodePredicate.create(filter.condition, filter.child.output)
        rows => below(rows).filter(predicate)
      case (below, project: ProjectExec) =>
        val projection = FewRowsProjection.create(project.projectList, project.child.output)
        rows => below(rows).map(projection)
      case (below, aggregate: BaseAggregateExec) => rows => DriverAggregate(aggregate, below(rows), held)
      case (below, _: CoalesceExec) => below
      case (_, other) => throw new IllegalStateException(s"not a step read in the driver: ${other.nodeName}")
    }

  /**
   * The rows of `files` (as one input: an aggregate sees them all, each file opened when reached)
   * through `source`'s first steps then `steps`, as copies made by `copy`; None past the row budget.
   */
  private def readRun(
      files: Seq[FileStatus],
      source: RunSource,
      steps: Iterator[InternalRow] => Iterator[InternalRow],
      copy: InternalRow => UnsafeRow,
      held: RowBudget,
      rowsRead: AtomicLong): Option[ArrayBuffer[InternalRow]] = {
    val opened = ArrayBuffer.empty[Iterator[AnyRef]]
    var count = 0L
    val input = files.iterator.flatMap { file =>
      val raw = source.open(FileListing.partitionedFile(file))
      opened += raw
      raw.map { item => count += source.rowsIn(item); item }
    }
    var rows: Option[ArrayBuffer[InternalRow]] = None
    try rows = holdAll(steps(source.first(input)), copy, held)
    finally {
      rowsRead.addAndGet(count)
      opened.foreach {
        case c: Closeable => c.close()
        // The row-based Parquet reader hands out a plain iterator that closes its file at its
        // end or when its task completes, and the driver runs no task: a read stopped early
        // (past maxRows) runs it to its end, so the file is not left open until GC.
        case rest => if (rows.isEmpty) rest.foreach(_ => ())
      }
    }
    rows
  }

  /**
   * Copies of all of `rows`, each counted against `held`; None once past it (also while `rows` is
   * made: a grouped aggregate holds its input before its first row).
   */
  private def holdAll(rows: => Iterator[InternalRow], copy: InternalRow => UnsafeRow, held: RowBudget)
      : Option[ArrayBuffer[InternalRow]] = {
    val kept = ArrayBuffer.empty[InternalRow]
    try {
      val all = rows
      while (all.hasNext) {
        held.hold()
        kept += copy(all.next()).copy()
      }
      Some(kept)
    } catch {
      case RowBudget.Exceeded => None
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): DriverIndexReadExec = copy(child = newChild)
}

object DriverIndexRead {

  /**
   * A plan of only Filters, Projects, aggregates and coalesces over an index scan or a split index
   * seek's scan of its source (with the row/codegen wrappers Spark adds around them): (those
   * steps, top first; the scan). No Exchange: every aggregate in it already reads its input as
   * Spark would group it.
   */
  object Shape {
    def unapply(plan: SparkPlan): Option[(Seq[SparkPlan], FileSourceScanExec)] = plan match {
      case scan: FileSourceScanExec
          if scan.relation.isInstanceOf[IndexHadoopFsRelation] ||
            scan.relation.location.isInstanceOf[SplitSeekFileIndex] =>
        Some((Nil, scan))
      case f: FilterExec => step(f)
      case p: ProjectExec => step(p)
      case a: BaseAggregateExec if !a.isStreaming => step(a)
      case c: CoalesceExec => step(c)
      case w: WholeStageCodegenExec => unapply(w.child)
      case i: InputAdapter => unapply(i.child)
      case c: ColumnarToRowExec => unapply(c.child)
      case _ => None
    }

    private def step(node: SparkPlan): Option[(Seq[SparkPlan], FileSourceScanExec)] =
      unapply(node.children.head).map { case (steps, scan) => (node +: steps, scan) }
  }

  /**
   * The whole-stage code of `plan` that is only Filters and Projects over `scan`'s batches (the
   * columnar scan's rows turned out by generated code), when the driver can run it as a task
   * would: its code compiles within Spark's method size limit, and the scan's batches are of the
   * on-heap vectors the driver's reader fills. Not for reads of a few keys of the files' sorted
   * column: their literals are in the generated code, so each new key would compile a class (5–20
   * ms), where the rows a lookup decodes (a page or so) cost less row by row.
   *
   * Where a global aggregate's partial step comes next in `bottomUp` (the plan's [[Shape]] steps,
   * from the scan up), across coalesces (which only set how many tasks read), the code is that
   * step's over the same Filters and Projects, as Spark generates it for a task whose stage reads
   * the scan and aggregates it: the running sums in local variables,
   * where rows turned out of the Filters' code and aggregated one at a time were each written to a
   * row and read back from it (TPC-H Q6: benchmarks/results/archive/h-18-vectored-reads.notes.md).
   */
  private[execution] def compiledStage(
      plan: SparkPlan,
      scan: FileSourceScanExec,
      bottomUp: Seq[SparkPlan]): Option[CompiledStage] = {
    def rowSteps(node: SparkPlan): Option[Int] = node match {
      case f: FilterExec => rowSteps(f.child).map(_ + 1)
      case p: ProjectExec => rowSteps(p.child).map(_ + 1)
      case ColumnarToRowExec(InputAdapter(child)) if child eq scan => Some(0)
      case ColumnarToRowExec(child) if child eq scan => Some(0)
      case _ => None
    }
    val onHeap = scan.vectorTypes.exists(_.forall(_ == classOf[OnHeapColumnVector].getName))
    if (!onHeap || IndexHadoopFsRelation.readsSortedKeys(scan.relation)) None
    else plan.collectFirst(Function.unlift {
      case stage: WholeStageCodegenExec => rowSteps(stage.child).filter(_ > 0).map((stage, _))
      case _ => None
    }).flatMap { case (stage, steps) =>
      val withPartial = partialAggregateAbove(bottomUp.drop(steps)).map { case (partial, below) =>
        (WholeStageCodegenExec(partial.withNewChildren(Seq(stage.child)))(stage.codegenStageId), steps + below + 1)
      }
      withPartial.flatMap { case (fused, fusedSteps) => compiles(fused).map(CompiledStage(fused, fusedSteps, _)) }
        .orElse(compiles(stage).map(CompiledStage(stage, steps, _)))
    }
  }

  /**
   * A global aggregate's partial step that Spark generates code for, reading the rows of the
   * first steps of `bottomUp` after any coalesces, with how many coalesces are below it.
   */
  private def partialAggregateAbove(bottomUp: Seq[SparkPlan]): Option[(HashAggregateExec, Int)] = {
    val coalesces = bottomUp.takeWhile(_.isInstanceOf[CoalesceExec]).size
    bottomUp.drop(coalesces).headOption.collect {
      case agg: HashAggregateExec if agg.supportCodegen && GlobalPartialAggregate.handles(agg) => (agg, coalesces)
    }
  }

  /** `stage`'s generated code, when it compiles within Spark's method size limit. */
  private def compiles(stage: WholeStageCodegenExec): Option[(CodegenContext, CodeAndComment)] = {
    val generated = stage.doCodeGen()
    val fits = try {
      val (_, stats) = CodeGenerator.compile(generated._2)
      stats.maxMethodCodeSize <= stage.conf.hugeMethodLimit
    } catch { case NonFatal(_) => false } // as a job's stage falls back: the steps one at a time
    if (fits) Some(generated) else None
  }

  /**
   * How many of `bottomUp` (a [[Shape]]'s steps, from the scan up) each run of files read on its
   * own thread goes through: the Filters, Projects and coalesces, which see one row at a time,
   * and a global aggregate's partial step (one partial result per run, which its final step
   * merges as it merges a job's partitions'). None when the lowest aggregate is another kind:
   * a global aggregate that streams its input would have to hold it, and a grouped one's input
   * is held and sorted whole anyway.
   */
  def stepsPerRun(bottomUp: Seq[SparkPlan]): Option[Int] = {
    val rowByRow = bottomUp.takeWhile {
      case _: FilterExec | _: ProjectExec | _: CoalesceExec => true
      case _ => false
    }.size
    bottomUp.drop(rowByRow).headOption match {
      case None => Some(rowByRow)
      case Some(aggregate: BaseAggregateExec) if GlobalPartialAggregate.handles(aggregate) => Some(rowByRow + 1)
      case Some(_) => None
    }
  }
}

/**
 * What a run of files of a driver-side read starts with: how a file opens (rows, or a reader's
 * batches), the rows in each item it yields, and the first `steps` of the plan (from the scan up)
 * already applied to them by `first`.
 */
private case class RunSource(
    open: PartitionedFile => Iterator[AnyRef],
    rowsIn: AnyRef => Int,
    first: Iterator[AnyRef] => Iterator[InternalRow],
    steps: Int)

private object RunSource {
  def rows(read: PartitionedFile => Iterator[InternalRow]): RunSource =
    RunSource(read, _ => 1, _.asInstanceOf[Iterator[InternalRow]], 0)

  /**
   * Batches through a whole-stage code's generated class, as a task evaluates its partition: the
   * code generated for this run alone (its references — metrics aside — are then its own, as a
   * task's deserialized copy is; the compiled class is Spark's cached one).
   */
  def compiled(read: PartitionedFile => Iterator[ColumnarBatch], stage: CompiledStage, run: Int): RunSource = {
    val (ctx, code) = stage.generatedFor(run)
    val evaluator = new WholeStageCodegenEvaluatorFactory(Right(code), stage.code.metrics("pipelineTime"),
      ctx.references.toArray).createEvaluator()
    // A stage reading a columnar input takes its batches where it expects rows (as in a job, by erasure).
    RunSource(read, { case batch: ColumnarBatch => batch.numRows; case _ => 1 },
      batches => evaluator.eval(run, batches.asInstanceOf[Iterator[InternalRow]]), stage.steps)
  }
}

/**
 * The plan's whole-stage code over the scan's batches, how many Filters and Projects are in it,
 * and the code generated to check that it compiles, which the first run uses.
 */
private case class CompiledStage(code: WholeStageCodegenExec, steps: Int, checked: (CodegenContext, CodeAndComment)) {
  def generatedFor(run: Int): (CodegenContext, CodeAndComment) = if (run == 0) checked else code.doCodeGen()
}

/**
 * An aggregate step evaluated in the driver as a task's sort-based aggregation evaluates it: the
 * rows of one partition, sorted by the grouping keys (a grouped aggregate's input is held, and
 * counted against the driver's row budget), through Spark's own aggregation iterator.
 */
private object DriverAggregate {
  def apply(agg: BaseAggregateExec, input: Iterator[InternalRow], held: RowBudget): Iterator[InternalRow] =
    if (GlobalPartialAggregate.handles(agg)) Iterator.single(GlobalPartialAggregate(agg, input))
    else sortBased(agg, input, held)

  private def sortBased(agg: BaseAggregateExec, input: Iterator[InternalRow], held: RowBudget)
      : Iterator[InternalRow] = {
    val grouped = agg.groupingExpressions.nonEmpty
    val sorted =
      if (!grouped) input
      else {
        val rows = ArrayBuffer.empty[InternalRow]
        input.foreach { row =>
          held.hold()
          rows += row.copy()
        }
        rows.sortInPlace()(RowOrdering.create(agg.groupingExpressions.map(SortOrder(_, Ascending)), agg.child.output))
        rows.iterator
      }
    val hasInput = sorted.hasNext
    if (!hasInput && grouped) Iterator.empty
    else {
      val aggregation = SortAggregation.iterator(agg, sorted)
      // A global aggregate of no rows still has its one row (count 0, sums NULL).
      if (!hasInput) Iterator.single(aggregation.outputForEmptyGroupingKeyWithoutInput())
      // Its output row object is reused: a grouped step above holds copies.
      else aggregation
    }
  }
}

/**
 * The partial step of a global aggregate (no grouping keys) of declarative functions (sum, count,
 * avg, min, max, ...) with its buffer a row of objects, evaluated with Spark's own expressions:
 * each function's initial values, then its update expressions for every input row; the output
 * row is the buffer, as a partial step's is (also with no input). Spark's sort-based iterator
 * keeps its buffer in an UnsafeRow whenever the types allow, so each row's update of a decimal
 * wider than 18 digits (a sum of products of prices: TPC-H's revenue) decodes the running sum
 * from bytes into a BigInteger and encodes it back; a job's generated aggregation code keeps the
 * buffer in variables instead, and so does this.
 */
private object GlobalPartialAggregate {
  def handles(agg: BaseAggregateExec): Boolean =
    agg.groupingExpressions.isEmpty && agg.aggregateExpressions.nonEmpty &&
      agg.aggregateExpressions.forall { e =>
        e.mode == Partial && !e.isDistinct && e.filter.isEmpty && e.aggregateFunction.isInstanceOf[DeclarativeAggregate]
      } && {
        // Values held by themselves (numbers, decimals, dates, ...: the types Spark's iterator
        // would copy into an UnsafeRow), never one pointing into a reader's reused memory.
        val types = functions(agg).flatMap(_.aggBufferAttributes).map(_.dataType)
        types.forall(UnsafeRow.isMutable) && agg.output.map(_.dataType) == types
      }

  private def functions(agg: BaseAggregateExec): Seq[DeclarativeAggregate] =
    agg.aggregateExpressions.map(_.aggregateFunction).collect { case d: DeclarativeAggregate => d }

  def apply(agg: BaseAggregateExec, input: Iterator[InternalRow]): InternalRow = {
    val declared = functions(agg)
    val bufferAttributes = declared.flatMap(_.aggBufferAttributes)
    val buffer = new SpecificInternalRow(bufferAttributes.map(_.dataType))
    // The initial values and the final buffer are one row each: interpreted, not generated.
    InterpretedMutableProjection.createProjection(declared.flatMap(_.initialValues)).target(buffer)(InternalRow.empty)
    val update = MutableProjection.create(declared.flatMap(_.updateExpressions), bufferAttributes ++ agg.child.output)
    update.initialize(0)
    update.target(buffer)
    val joined = new JoinedRow(buffer, InternalRow.empty)
    input.foreach(row => update(joined.withRight(row)))
    FewRowsProjection.create(bufferAttributes, bufferAttributes)(buffer).copy()
  }
}

/**
 * Rows the driver holds for a driver-side read; past `max` the read gives way to a job. Shared by
 * the threads of one read: once one passes it, the others stop at their next row.
 */
private class RowBudget(max: Int) {
  private val count = new AtomicLong
  def hold(): Unit = if (count.incrementAndGet() > max) throw RowBudget.Exceeded
}

private object RowBudget {
  object Exceeded extends ControlThrowable
}

/**
 * Marks the plan's root for a driver-side read ([[DriverIndexReadExec]]) when it is Filters,
 * Projects and aggregates (no Exchange) over an index scan of index files of at most
 * `spark.hyperspace.index.driverRead.maxBytes` in all, after bucket and range pruning, or over a
 * split index seek reading row groups of at most `spark.hyperspace.index.split.driverRead.maxBytes`.
 * Only the root: its rows are what the driver collects.
 */
object ReadSmallIndexLookupsInDriver extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = plan match {
    case limit: CollectLimitExec if fits(limit.child) => limit.withNewChildren(Seq(marked(limit.child)))
    case root if fits(root) => marked(root)
    case _ => plan
  }

  /**
   * `plan` read in the driver, with a global aggregate's partial step apart from its final one
   * (which Spark 4.3 combines where no Exchange is between them: [[AggregateSteps]]), as the
   * read's runs of files and its compiled stage need it.
   */
  private def marked(plan: SparkPlan): SparkPlan =
    DriverIndexReadExec(AggregateSteps.separated(plan), HyperspaceConf.driverReadMaxRows(plan.session))

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
