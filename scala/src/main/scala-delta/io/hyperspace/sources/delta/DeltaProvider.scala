package io.hyperspace.sources.delta

import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.util.chaining._

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionSet}
import org.apache.spark.sql.delta.Snapshot
import org.apache.spark.sql.delta.actions.{AddFile, RemoveFile}
import org.apache.spark.sql.delta.files.{TahoeBatchFileIndex, TahoeFileIndexWithSnapshotDescriptor, TahoeLogFileIndex}
import org.apache.spark.sql.delta.stats.{DeltaScan, PreparedDeltaFileIndex}
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}

import io.hyperspace.index.BoundedCache
import io.hyperspace.index.dataskipping.{RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.{FileKey, FormatScan, LogChanges, TableFormatProvider, VersionedTable}

/**
 * Delta Lake tables. The only class of this jar that names Delta's classes (with [[DeltaTable]]):
 * it is instantiated by [[io.hyperspace.sources.TableFormats]] only when delta-spark is on the
 * class path.
 *
 * A scan of a Delta table is a `HadoopFsRelation` over Delta's `TahoeLogFileIndex` (by path, by
 * catalog name, with or without `versionAsOf` / `timestampAsOf`). Delta's own commands (DELETE,
 * UPDATE, MERGE, OPTIMIZE) read other file indexes of it (a pinned selection of files), which
 * are not recognised here, so no index ever stands in for what a command reads.
 */
class DeltaProvider extends TableFormatProvider {

  override def format: String = "delta"

  override def tableOf(relation: LogicalRelation, fs: HadoopFsRelation): Option[VersionedTable] =
    fs.location match {
      // Partition filters a file index carries itself would narrow the table the log describes.
      case index: TahoeLogFileIndex if index.partitionFilters.isEmpty => Some(new DeltaTable(relation, fs, index))
      // The same scan with files data skipping indexes ruled out: still the table, for the
      // covering index rules (they replace the whole scan).
      case pruned: DeltaSkippedFilesIndex => tableOf(relation, fs.copy(location = pruned.table)(fs.sparkSession))
      case _ => None
    }

  override def load(spark: SparkSession, root: String): DataFrame = spark.read.format("delta").load(root)

  override def wholeTable(fs: HadoopFsRelation, filters: Seq[Expression]): Option[FileIndex] = fs.location match {
    case pruned: DeltaSkippedFilesIndex => Some(pruned.table)
    // Delta's PrepareDeltaScan (an optimizer rule that runs after Hyperspace's) replaced the
    // table's index with its pruning for the scan's filters, asked once, at the snapshot the query
    // reads: the same table at that snapshot, pinned (a time travel index) so that the scan still
    // reads the version the rest of the query reads. The prepared pruning may hold the partition
    // filters of a table read by a partition's path, which no Filter above the scan applies: only a
    // scan pruned for filters the plan applies is the whole table under those filters.
    case prepared: PreparedDeltaFileIndex if prepared.preparedScan.allFilters.forall(ExpressionSet(filters).contains) =>
      val snapshot = prepared.preparedScan.scannedSnapshot
      snapshot.deltaLog.createRelation(snapshotToUseOpt = Some(snapshot), isTimeTravelQuery = true) match {
        case table: HadoopFsRelation => Some(table.location)
        case _ => None
      }
    case _ => None
  }
}

/** One scan of a Delta table, at the snapshot Delta will scan for it. */
private final class DeltaTable(relation: LogicalRelation, fs: HadoopFsRelation, index: TahoeLogFileIndex)
  extends VersionedTable {

  // What Delta's scan reads: the pinned snapshot of a time travel query, else the newest known.
  private lazy val snapshot: Snapshot = index.getSnapshot

  override def format: String = "delta"
  override def root: String = index.path.toString
  override def version: Long = snapshot.version
  override def isTimeTravel: Boolean = index.isTimeTravelQuery

  private lazy val addFiles: Seq[AddFile] = DeltaTable.addFiles(snapshot)

  private def pathOf(add: AddFile): String = index.absolutePath(add.path).toString

  override lazy val files: Seq[FileKey] = addFiles.map { add =>
    FileKey(pathOf(add), add.size, add.modificationTime, Option(add.deletionVector).map(_.uniqueId))
  }.sortBy(_.path)

  // The files the last filesFromLog found added by the commits it read, by path: a scan of
  // only those (what incremental refresh indexes) then needs no listing of the table either.
  @volatile private var addedByLog: Map[String, AddFile] = Map.empty

  // A pinned selection of the snapshot's files: Delta reads it as its own commands read theirs,
  // applying deletion vectors and column mapping.
  override def restrictedTo(paths: Set[String]): LogicalRelation = {
    val fromLog = addedByLog
    val selected =
      if (paths.forall(fromLog.contains)) paths.toSeq.sorted.map(fromLog)
      else addFiles.filter(a => paths.contains(pathOf(a)))
    val location = new TahoeBatchFileIndex(fs.sparkSession, "hyperspace", selected, index.deltaLog, index.path,
      snapshot)
    FileRelation.withLocation(relation, fs, location, keepTable = false).newInstance()
  }

  override def tableId: Option[String] = Some(snapshot.metadata.id)

  // restrictedTo builds Delta's file index from the AddFile actions: without those filesFromLog
  // read, it lists every file of the snapshot.
  override def scansAddedFilesFromLog: Boolean = true

  private def keyOf(add: AddFile): FileKey =
    FileKey(pathOf(add), add.size, add.modificationTime, Option(add.deletionVector).map(_.uniqueId))

  // Delta identifies a file of a snapshot by its path and the id of its deletion vector: a DELETE
  // with deletion vectors removes (path, old vector) and adds (path, new vector).
  private type LogKey = (String, Option[String])

  override def filesFromLog(
      since: Long,
      tableIdThen: Option[String],
      filesThen: Seq[FileKey]): Either[String, LogChanges] = {
    val target = version
    if (!tableIdThen.contains(snapshot.metadata.id)) {
      Left(tableIdThen.fold("the index does not record the Delta table's id (it was built before it did)")(_ =>
          "the Delta table at its root is another table than the one indexed (created again)"))
    } else if (since > target) {
      Left(s"the index was built from version $since, newer than the table's version $target")
    } else {
      // Only the commit files after `since`, read one by one up to `target`: the log's state
      // (checkpoint and every file of the table) is never reconstructed.
      val changes = index.deltaLog.getChanges(since + 1)
      val touched = mutable.LinkedHashMap.empty[LogKey, Option[AddFile]]
      var expected = since + 1
      var gap: Option[Long] = None
      while (gap.isEmpty && expected <= target && changes.hasNext) {
        val (v, actions) = changes.next()
        DeltaReads.commit()
        if (v != expected) gap = Some(v)
        else {
          actions.foreach {
            case a: AddFile => touched((pathOf(a), Option(a.deletionVector).map(_.uniqueId))) = Some(a)
            case r: RemoveFile =>
              touched((index.absolutePath(r.path).toString, Option(r.deletionVector).map(_.uniqueId))) = None
            case _ =>
          }
          expected += 1
        }
      }
      if (expected <= target) {
        Left(s"the Delta log no longer holds every commit after version $since (version ${gap.getOrElse(expected)} " +
          "is the first it has): they were cleaned up after a checkpoint (delta.logRetentionDuration)")
      } else {
        val kept = filesThen.filterNot(f => touched.contains((f.path, f.deletionVector)))
        val added = touched.valuesIterator.flatten.toSeq
        addedByLog = added.map(a => pathOf(a) -> a).toMap
        Right(LogChanges((kept ++ added.map(keyOf)).sortBy(_.path), (target - since).toInt, since + 1, target))
      }
    }
  }

  override def pruning(filters: Seq[Expression]): Option[FormatScan] = Some(new DeltaPruning(filters))

  override def minMaxColumns: Set[String] = snapshot.statCollectionLogicalSchema.fieldNames.toSet

  /** Delta's own file pruning for `filters`: what its scan of this snapshot keeps. */
  private final class DeltaPruning(filters: Seq[Expression]) extends FormatScan {
    private val scan: DeltaScan = DeltaTable.filesForScan(snapshot, filters)

    override lazy val kept: Set[String] = scan.files.iterator.map(pathOf).toSet

    override def without(skipped: Set[String], entries: Seq[LogEntry], stats: RelationSkippingStats,
        forJoin: Boolean): LogicalRelation = {
      val location = new DeltaSkippedFilesIndex(index, snapshot, scan, skipped, entries, stats, forJoin)
      FileRelation.withLocation(relation, fs, location)
    }
  }
}

/**
 * A scan of a Delta table at `snapshot` without the files data skipping indexes ruled out
 * (`skipped`, absolute paths): Delta's own pruning (partition values, per-file statistics) is
 * done as its prepared scans do it — `prepared` is reused when the scan's filters are those it
 * was computed for, else the snapshot is asked again — and the files it keeps, minus `skipped`,
 * are listed as Delta lists them, deletion vectors included, so that Delta's reader masks their
 * rows as it always does.
 */
private final class DeltaSkippedFilesIndex(
    val table: TahoeLogFileIndex,
    snapshot: Snapshot,
    private val prepared: DeltaScan,
    val skipped: Set[String],
    val entries: Seq[LogEntry],
    val stats: RelationSkippingStats,
    override val forJoin: Boolean)
  extends TahoeFileIndexWithSnapshotDescriptor(table.spark, table.deltaLog, table.path, snapshot)
  with SkippedFilesIndex {

  private def kept(files: Seq[AddFile]): Seq[AddFile] =
    files.filterNot(a => skipped.contains(absolutePath(a.path).toString))

  override def matchingFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[AddFile] = {
    val filters = ExpressionSet(partitionFilters ++ dataFilters)
    // The scan's filters include those `prepared` pruned by: its files include every file these
    // filters keep (the Filter above the scan still drops the rows they rule out). Spark infers
    // `isnotnull` conjuncts after the rule prepared the scan, so the sets are seldom equal; asking
    // the snapshot again was one more Spark job per query, at execution.
    val files =
      if (prepared.filtersUsedForSkipping.forall(filters.contains)) prepared.files
      else DeltaTable.planScan(snapshot, partitionFilters ++ dataFilters).files
    kept(files)
  }

  override def inputFiles: Array[String] = kept(prepared.files).map(a => absolutePath(a.path).toString).toArray

  override def refresh(): Unit = ()

  override def sizeInBytes: Long = kept(prepared.files).map(_.size).sum

  override def equals(other: Any): Boolean = other match {
    case o: DeltaSkippedFilesIndex =>
      o.table == table && o.version == version && o.prepared == prepared && o.skipped == skipped
    case _ => false
  }

  override def hashCode(): Int = (table, version, skipped).hashCode()

  override def toString: String =
    s"DeltaSkippedFilesIndex(${stats.filesRead} of ${stats.filesTotal} files; ${entries.map(_.name).mkString(", ")})"
}

private object DeltaTable {

  // The files of a snapshot are computed by a Spark job over the table's log; a query plans
  // against the same snapshot many times (every optimizer pass, every candidate index). Keyed
  // by the table's id, so a table created again at the same path is another table.
  private val cache = new BoundedCache[(String, String, Long), Seq[AddFile]](64, 2000000L, _.size.toLong)

  // Delta's own pruning of a snapshot for a filter: asked once per query planned (the optimizer
  // runs its rules more than once), like Delta's own prepared scans. Keyed by the filters without
  // their expression ids, so another plan of the same query finds it too.
  private val scans =
    new BoundedCache[(String, String, Long, Set[Expression]), DeltaScan](64, 2000000L, _.files.size.toLong)

  def filesForScan(snapshot: Snapshot, filters: Seq[Expression]): DeltaScan =
    scans.getOrElseUpdate(
      (snapshot.deltaLog.dataPath.toString, snapshot.metadata.id, snapshot.version, filters.map(_.canonicalized).toSet),
      planScan(snapshot, filters))

  /** Delta's own pruning of `snapshot` for `filters`, asked anew (a Spark job over the log's state). */
  def planScan(snapshot: Snapshot, filters: Seq[Expression]): DeltaScan = {
    DeltaReads.scanPlanned()
    snapshot.filesForScan(filters)
  }

  def addFiles(snapshot: Snapshot): Seq[AddFile] =
    cache.getOrElseUpdate((snapshot.deltaLog.dataPath.toString, snapshot.metadata.id, snapshot.version),
      snapshot.allFiles.collect().toSeq.tap(all => DeltaReads.listed(all.size)))
}

/**
 * What this JVM read of Delta tables' logs: the commit files [[DeltaTable.filesFromLog]] read, the
 * files of whole snapshots it listed (each `snapshot.allFiles` it computed), and the scans it
 * planned with Delta's own pruning. What tests measure the cost of a refresh (proportional to the
 * change, not to the table) and of a pruned scan by, rather than a clock.
 */
private[hyperspace] object DeltaReads {
  private val commits = new AtomicLong
  private val snapshotFiles = new AtomicLong
  private val scans = new AtomicLong

  /** The commit files read so far. */
  def commitsRead: Long = commits.get()

  /** The files of whole snapshots listed so far. */
  def snapshotFilesListed: Long = snapshotFiles.get()

  /** The scans of a snapshot planned with Delta's own pruning (`filesForScan`) so far. */
  def scansPlanned: Long = scans.get()

  private[delta] def commit(): Unit = commits.incrementAndGet()

  private[delta] def scanPlanned(): Unit = scans.incrementAndGet()

  private[delta] def listed(files: Long): Unit = snapshotFiles.addAndGet(files)
}
