package io.hyperspace.sources.iceberg

import java.util.concurrent.atomic.AtomicLong

import scala.annotation.nowarn
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.chaining._

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.iceberg.{ContentFile, DataOperations, FileFormat, FileScanTask, MetadataColumns, MetricsConfig, MetricsModes, Schema, Snapshot, SnapshotChanges, SnapshotSummary, Table}
import org.apache.iceberg.expressions.{Expressions, Expression => IcebergExpression}
import org.apache.iceberg.spark.{SparkSchemaUtil, SparkV2Filters}
import org.apache.iceberg.spark.source.SparkTable
import org.apache.iceberg.types.{Type, TypeUtil}
import org.apache.iceberg.util.SnapshotUtil
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, CreateNamedStruct, Expression, GetMapValue, In, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.util.QuotingUtils
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation, PartitionDirectory}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.{DataType, MapType, MetadataBuilder, StringType, StructField, StructType}

import io.hyperspace.HyperspaceException
import io.hyperspace.index.BoundedCache
import io.hyperspace.index.dataskipping.{RelationSkippingStats, SkippedFilesIndex}
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.{FileListing, FileRelation}
import io.hyperspace.sources.{FileKey, FormatScan, LogChanges, SelectedFilesIndex, SourcePaths, TableFormatProvider, TableScanListing, VersionedTable}

/**
 * Apache Iceberg tables. The only classes of this jar that name Iceberg's classes; compiled only for
 * Spark lines with an Iceberg runtime (build.sbt) and instantiated by
 * [[io.hyperspace.sources.TableFormats]] only when that runtime is on the class path.
 *
 * Iceberg scans are DataSource V2 scans (`DataSourceV2Relation` over Iceberg's `SparkTable`), which
 * the rules do not read. Where a Parquet scan of the snapshot's data files with the table's schema
 * reads exactly the rows Iceberg's scan reads, the rules see that file scan instead
 * ([[asFileScan]]); a scan no index replaced is given back to Iceberg unchanged
 * ([[io.hyperspace.sources.TableScans]]). The files, sizes and version come from the snapshot's
 * manifests, never from a directory listing.
 */
class IcebergProvider extends TableFormatProvider {

  override def format: String = "iceberg"

  override def tableOf(relation: LogicalRelation, fs: HadoopFsRelation): Option[VersionedTable] =
    fs.location match {
      case listing: IcebergFileIndex => Some(listing.table)
      // The same scan with files data skipping indexes ruled out: still the table, for the
      // covering index rules (they replace the whole scan).
      case pruned: IcebergSkippedFiles => Some(pruned.table.table)
      case _ => None
    }

  override def load(spark: SparkSession, root: String): DataFrame = spark.read.format("iceberg").load(root)

  // A scan data skipping indexes pruned while planning is a file scan of the files it kept at run
  // time too; an unpruned one is Iceberg's own V2 scan again by then, which this does not take.
  @nowarn("cat=unused-params")
  override def wholeTable(fs: HadoopFsRelation, filters: Seq[Expression]): Option[FileIndex] = fs.location match {
    case pruned: IcebergSkippedFiles => Some(pruned.table)
    case _ => None
  }

  override def asFileScan(plan: LogicalPlan): Option[LogicalRelation] = plan match {
    case r: DataSourceV2Relation => r.table match {
        case t: SparkTable => IcebergTable.read(r, t).map(_.relation)
        case _ => None
      }
    case _ => None
  }
}

/**
 * One scan of an Iceberg table, at the snapshot Iceberg will scan for it, with the Parquet scan
 * of its files that stands in for it ([[relation]]).
 */
private[iceberg] final class IcebergTable(
    original: DataSourceV2Relation,
    table: Table,
    snapshot: Option[Snapshot],
    readSchema: Schema,
    timeTravel: Boolean) extends VersionedTable {

  private def spark: SparkSession = SparkSession.active

  override def format: String = "iceberg"

  override lazy val root: String = {
    val path = new Path(table.location())
    val fs = path.getFileSystem(spark.sessionState.newHadoopConf())
    path.makeQualified(fs.getUri, fs.getWorkingDirectory).toString
  }

  /**
   * The snapshot's sequence number: snapshot ids are random, sequence numbers grow with every
   * commit, which is what time travel compares (an index built from a later snapshot never serves
   * an earlier one). 0 for an empty table (and for every snapshot of a format v1 table, whose
   * reads then compare files only).
   */
  override def version: Long = snapshot.map(_.sequenceNumber()).getOrElse(0L)

  override def isTimeTravel: Boolean = timeTravel

  // A time travel read's identifier may carry Iceberg's snapshot selector: read again by path then.
  override lazy val name: Option[String] = (original.catalog, original.identifier) match {
    case (Some(catalog), Some(ident)) if !timeTravel && !ident.getClass.getSimpleName.contains("PathIdentifier") =>
      Some((catalog.name() +: ident.namespace().toSeq :+ ident.name()).map(QuotingUtils.quoteIfNeeded).mkString("."))
    case _ => None
  }

  private lazy val tasks: Seq[FileScanTask] = snapshot.map(s => IcebergTable.tasks(table, s)).getOrElse(Nil)

  override lazy val files: Seq[FileKey] = tasks.map(IcebergTable.keyOf).sortBy(_.path)

  // Iceberg's table uuid: a table created again at the same location has another one, and its
  // snapshots' sequence numbers start again.
  override def tableId: Option[String] = Some(table.uuid().toString)

  // The snapshot's data files as the last successful filesFromLog found them, by path: a scan of
  // some of them (what refresh indexes) and the format check of `unservable` then need no planning
  // of the snapshot, whose cost is that of the table.
  @volatile private var foundByLog: Option[Map[String, FileKey]] = None

  override def filesFromLog(
      since: Long,
      tableIdThen: Option[String],
      filesThen: Seq[FileKey]): Either[String, LogChanges] =
    snapshot match {
      case None => Left("the Iceberg table has no snapshot")
      case Some(current) =>
        new IcebergLogWalk(table, current, since, tableIdThen, filesThen).changes.map { found =>
          foundByLog = Some(found.files.map(f => f.path -> f).toMap)
          found
        }
    }

  private def snapshotName = snapshot.map(s => s"snapshot ${s.snapshotId()}").getOrElse("the empty table")

  // Data files with delete files are served: their keys name their deletes (a file whose deletes
  // change is another file) and [[restrictedTo]] reads them through Iceberg, deletes applied. The
  // snapshot's summary counts its live delete files: when it counts none, no planning is needed;
  // when it counts some, only planning tells whether any still applies to a data file (compaction
  // leaves delete files that apply to none).
  private lazy val hasDeletes: Boolean =
    !snapshot.forall(s => IcebergTable.summaryCount(s, SnapshotSummary.TOTAL_DELETE_FILES_PROP).contains(0L)) &&
      tasks.exists(!_.deletes().isEmpty)

  private lazy val plannedFormatsProblem: Option[String] = {
    val otherFormats = tasks.map(_.file().format()).filter(_ != FileFormat.PARQUET).distinct
    if (otherFormats.isEmpty) None
    else Some(s"the Iceberg table's $snapshotName has ${otherFormats.mkString(", ")} data files; only Parquet " +
      "data files are read")
  }

  private lazy val schemaProblem: Option[String] = IcebergTable.schemaProblem(table, readSchema)

  // After a successful walk of the log every data file is known to be Parquet without planning: the
  // files the index holds were when it was built, and the walk refuses any other it sees added.
  override def unservable: Option[String] =
    (if (foundByLog.isDefined) None else plannedFormatsProblem).orElse(schemaProblem)

  // Pruning ends in a Parquet scan of the kept files ([[IcebergPruning.without]]), which would bring
  // back the rows delete files remove: a snapshot with deletes is left to Iceberg's own scan.
  override def unprunable: Option[String] =
    if (hasDeletes) Some(s"data files of the Iceberg table's $snapshotName have delete files, which only Iceberg's " +
      "scan applies")
    else None

  override def pruning(filters: Seq[Expression]): Option[FormatScan] = snapshot.map(new IcebergPruning(_, filters))

  // The top-level columns whose lower and upper bounds Iceberg keeps per data file in its manifests
  // (metrics mode truncate or full; by default the first 100 columns, strings truncated).
  override def minMaxColumns: Set[String] = {
    val metrics = MetricsConfig.forTable(table)
    readSchema.columns().asScala.iterator.filter(_.`type`().isPrimitiveType).filter { c =>
      metrics.columnMode(c.name()) match {
        case _: MetricsModes.Truncate | _: MetricsModes.Full => true
        case _ => false
      }
    }.map(_.name()).toSet
  }

  /**
   * Iceberg's own file pruning for `filters`: the files planning `s` with them keeps (partition
   * values, the per-file column bounds of the manifests). A conjunct Iceberg cannot take is left
   * out, which only keeps more files.
   */
  private final class IcebergPruning(s: Snapshot, filters: Seq[Expression]) extends FormatScan {

    override lazy val kept: Set[String] = IcebergTable.keptBy(table, s, filters.flatMap(IcebergTable.toIceberg))

    // A Parquet scan of the kept files but `skipped`: what Iceberg's scan reads for the filter,
    // when `unservable` says a Parquet scan of the files reads what Iceberg reads (the rule asks).
    override def without(skipped: Set[String], entries: Seq[LogEntry], stats: RelationSkippingStats,
        forJoin: Boolean): LogicalRelation = {
      val FileRelation(scan, fs) = relation
      val listing = fs.location.asInstanceOf[IcebergFileIndex]
      val read = files.filter(f => kept.contains(f.path) && !skipped.contains(f.path))
      FileRelation.withLocation(scan, fs,
        new IcebergSkippedFiles(listing, new Path(root), read, entries, stats, forJoin))
    }
  }

  /** The read schema's columns with their Iceberg field ids, as [[relation]]'s data schema records them. */
  private lazy val dataSchema: StructType = StructType(original.output.map { a =>
    val id = readSchema.asStruct().field(a.name).fieldId()
    StructField(a.name, a.dataType, a.nullable,
      new MetadataBuilder().withMetadata(a.metadata).putLong(IcebergTable.FieldIdKey, id).build())
  })

  override def schemaChange(recorded: String, columns: Set[String]): Option[String] = {
    val before = DataType.fromJson(recorded).asInstanceOf[StructType]
    before.fields.iterator.filter(f => columns.exists(_.equalsIgnoreCase(f.name))).flatMap { old =>
      val id = if (old.metadata.contains(IcebergTable.FieldIdKey)) Some(old.metadata.getLong(IcebergTable.FieldIdKey))
      else None
      dataSchema.fields.find(_.name == old.name) match {
        case None => Some(s"column '${old.name}' is no longer in the table (renamed or dropped)")
        case Some(now)
            if !now.metadata.contains(IcebergTable.FieldIdKey) ||
              id.forall(_ != now.metadata.getLong(IcebergTable.FieldIdKey)) =>
          Some(s"column '${old.name}' is another column of the table now (dropped and added again)")
        case Some(now) if now.dataType != old.dataType =>
          Some(s"column '${old.name}' is of type ${now.dataType.simpleString} now, not ${old.dataType.simpleString}")
        case _ => None
      }
    }.nextOption()
  }

  /** The Parquet scan of the snapshot's files, with the V2 scan's own output attributes. */
  lazy val relation: LogicalRelation = {
    val listing = new IcebergFileIndex(this, original, new Path(root))
    FileRelation(
      HadoopFsRelation(listing, new StructType(), dataSchema, None, new ParquetFileFormat, Map.empty)(spark),
      original.output.map(_.asInstanceOf[org.apache.spark.sql.catalyst.expressions.AttributeReference]))
  }

  /**
   * The files in `paths` as a Parquet scan, or, when one of them has delete files, as Iceberg's own
   * scan of them (which applies the deletes) with a `_metadata.file_path` column naming each row's
   * file as a file scan's `_metadata.file_path` does (lineage needs it). Files a walk of the log
   * found without deletes are listed from what it found, without planning the snapshot.
   */
  override def restrictedTo(paths: Set[String]): LogicalPlan = {
    val FileRelation(scan, fs) = relation
    foundByLog.filter(found => paths.forall(p => found.get(p).exists(_.deletionVector.isEmpty))) match {
      case Some(found) =>
        val listing = new IcebergListing(new Path(root), paths.toSeq.sorted.map(found))
        FileRelation.withLocation(scan, fs, listing, keepTable = false).newInstance()
      case None =>
        val selected = tasks.filter(t => paths.contains(IcebergTable.pathOf(t)))
        if (selected.exists(!_.deletes().isEmpty)) IcebergTable.readThroughIceberg(original, selected)
        else FileRelation.withLocation(scan, fs, new SelectedFilesIndex(fs.location, paths), keepTable = false)
          .newInstance()
    }
  }
}

private[iceberg] object IcebergTable {

  /** The metadata key of a data schema field holding its Iceberg field id. */
  val FieldIdKey = "hyperspace.iceberg.fieldId"

  // Read options (lower case) that choose the snapshot (resolved below; Spark's own time travel
  // options reach the relation already resolved to the table's pinned snapshot) or only tune how
  // files are split and read.
  private val readOptions = Set("snapshot-id", "as-of-timestamp", "versionasof", "timestampasof", "split-size",
    "lookback", "file-open-cost", "vectorization-enabled", "batch-size", "locality", "path")

  /**
   * The scan `relation` makes of `sparkTable`, when it reads the whole table at one snapshot of its
   * main history; None for a branch or tag, an incremental or rewrite read (other read options), or
   * output columns that are not table columns (metadata columns).
   */
  def read(relation: DataSourceV2Relation, sparkTable: SparkTable): Option[IcebergTable] = {
    val options = relation.options.asCaseSensitiveMap().asScala.map { case (k, v) => k.toLowerCase -> v }.toMap
    val branch = Option(sparkTable.branch()).filter(_ != "main")
    if (branch.isDefined || !options.keySet.forall(readOptions.contains)) return None
    val table = sparkTable.table()
    val pinned = Option(sparkTable.snapshotId()).map(_.longValue()).filterNot(readsCurrentTable(sparkTable, table, _))
    val readSchema = pinned.fold(table.schema())(id => SnapshotUtil.schemaFor(table, id, null))
    if (!relation.output.forall(a => readSchema.asStruct().field(a.name) != null)) return None
    val chosen: Option[Long] = pinned
      .orElse(options.get("snapshot-id").map(_.toLong))
      .orElse(options.get("as-of-timestamp").map(ts => SnapshotUtil.snapshotIdAsOfTime(table, ts.toLong)))
    // A snapshot id the table does not have: Iceberg's scan fails, no index makes it succeed.
    val snapshot: Option[Option[Snapshot]] = chosen match {
      case Some(id) => Option(table.snapshot(id)).map(Some(_))
      case None => Some(Option(table.currentSnapshot())) // None: an empty table
    }
    snapshot.map(s => new IcebergTable(relation, table, s, readSchema, chosen.isDefined))
  }

  /**
   * Whether a scan pinned to snapshot `id` reads what a scan of the table as it is reads: Iceberg
   * 1.12 pins every scan to the snapshot current when the table was loaded (1.11 only time travel),
   * so a pin alone does not tell time travel apart. The current snapshot read with the table's
   * current schema is the table as it is, whichever way it was asked for.
   */
  private def readsCurrentTable(sparkTable: SparkTable, table: Table, id: Long): Boolean =
    Option(table.currentSnapshot()).exists(_.snapshotId() == id) &&
      sparkTable.schema() == SparkSchemaUtil.convert(table.schema())

  def pathOf(task: FileScanTask): String = pathOf(task.file())

  /** A count the snapshot's summary keeps (`total-data-files`, ...), when its writer kept it. */
  def summaryCount(s: Snapshot, property: String): Option[Long] =
    Option(s.summary()).flatMap(m => Option(m.get(property))).flatMap(_.toLongOption)

  def pathOf(file: ContentFile[_]): String = new Path(file.location()).toString

  /**
   * A data file's key, as reading its commits gives it: without its delete files, which only
   * planning a snapshot knows ([[keyOf(task)]]). A walk of the commits that add or remove no delete
   * file keeps the keys the index recorded, deletes included.
   */
  def keyOf(file: ContentFile[_]): FileKey = FileKey(pathOf(file), file.fileSizeInBytes(), 0L)

  /**
   * A data file's key as planning a snapshot gives it: with the identity of the delete files
   * (position, equality, deletion vectors) that apply to it, so that a file whose deletes changed
   * is another file ([[FileKey.deletionVector]]) and an index built without those deletes no
   * longer serves it.
   */
  def keyOf(task: FileScanTask): FileKey = keyOf(task.file()).copy(deletionVector = deletesOf(task))

  /**
   * The identity of the delete files applying to `task`'s file: a digest of their locations (a
   * delete file is never rewritten in place) and, for a deletion vector, its place in its Puffin
   * file (one Puffin file holds the vectors of many data files). None without deletes.
   */
  def deletesOf(task: FileScanTask): Option[String] = {
    val deletes = task.deletes().asScala.toSeq
    if (deletes.isEmpty) None
    else {
      val names = deletes.map(d => s"${d.location()}@${Option(d.contentOffset()).getOrElse("")}").sorted
      val digest = java.security.MessageDigest.getInstance("SHA-256")
      names.foreach(n => digest.update((n + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8)))
      Some(s"iceberg-deletes:${deletes.size}:" + digest.digest().take(16).map(b => f"$b%02x").mkString)
    }
  }

  /**
   * Iceberg's scan `original` of only the files of `selected`, which applies their delete files as
   * any Iceberg scan does, with fresh attributes: the table's columns, then `_metadata`, a struct
   * whose `file_path` names each row's file as a file scan's `_metadata.file_path` does.
   */
  def readThroughIceberg(original: DataSourceV2Relation, selected: Seq[FileScanTask]): LogicalPlan = {
    val fileColumnName = MetadataColumns.FILE_PATH.name()
    val fileColumn = original.metadataOutput.find(_.name == fileColumnName).getOrElse(
      throw new HyperspaceException(
        s"The Iceberg scan of ${original.name} has no $fileColumnName metadata column to read only some files by"))
    val scan = original.copy(output = original.output :+ fileColumn).newInstance()
    val file = scan.output.last
    // `_file` is the location as the manifests spell it; lineage joins on the URI spelling.
    val spelled = selected.map(t => t.file().location() -> SourcePaths.asMetadataPath(pathOf(t))).toMap
    val kept = Filter(In(file, spelled.keys.toSeq.sorted.map(l => Literal(l))), scan)
    val spellings = Literal.create(spelled, MapType(StringType, StringType, valueContainsNull = false))
    val filePath = GetMapValue(spellings, file)
    Project(scan.output.init :+ Alias(CreateNamedStruct(Seq(Literal("file_path"), filePath)), "_metadata")(), kept)
  }

  // A snapshot's files are read from its manifests; a query plans against the same snapshot many
  // times (every optimizer pass, every candidate index). Keyed by the table's uuid and snapshot.
  private val cache = new BoundedCache[(String, Long), Seq[FileScanTask]](64, 2000000L, _.size.toLong)

  def tasks(table: Table, snapshot: Snapshot): Seq[FileScanTask] =
    cache.getOrElseUpdate((table.uuid().toString, snapshot.snapshotId()), {
        val planned = table.newScan().useSnapshot(snapshot.snapshotId()).planFiles()
        try planned.asScala.toList.tap(all => IcebergReads.read(all.size))
        finally planned.close()
      })

  /** The paths of the data files planning `snapshot` with the conjuncts `filters` keeps. */
  def keptBy(table: Table, snapshot: Snapshot, filters: Seq[IcebergExpression]): Set[String] = {
    val planned = table.newScan().useSnapshot(snapshot.snapshotId()).caseSensitive(false)
      .filter(filters.foldLeft(Expressions.alwaysTrue(): IcebergExpression)(Expressions.and)).planFiles()
    try planned.asScala.map(pathOf).toSet.tap(kept => IcebergReads.read(kept.size))
    finally planned.close()
  }

  /** `e` as an Iceberg expression, when Spark's and Iceberg's filter translations both take it. */
  def toIceberg(e: Expression): Option[IcebergExpression] =
    SparkInternals.translateFilter(e)
      .flatMap(p => Try(SparkV2Filters.convert(p)).toOption.flatMap(Option(_)))

  // Types whose Parquet representation Spark reads as Iceberg does (UUID, time, variant and others are not).
  private val readableTypes: Set[Type.TypeID] = Set(Type.TypeID.BOOLEAN, Type.TypeID.INTEGER, Type.TypeID.LONG,
    Type.TypeID.FLOAT, Type.TypeID.DOUBLE, Type.TypeID.DATE, Type.TypeID.TIMESTAMP, Type.TypeID.STRING,
    Type.TypeID.FIXED, Type.TypeID.BINARY, Type.TypeID.DECIMAL, Type.TypeID.STRUCT, Type.TypeID.LIST,
    Type.TypeID.MAP)

  /**
   * Why a Parquet scan by column name may not read what Iceberg reads by field id: a column renamed,
   * or dropped and added again under the same name, or whose type was promoted, in any schema the
   * table has had (older data files were written with it); a column with a default value for older
   * files; files without field ids (a name mapping); a type Spark's Parquet reader reads otherwise.
   */
  def schemaProblem(table: Table, read: Schema): Option[String] = {
    val readNames = TypeUtil.indexByName(read.asStruct()).asScala
    val readIds = TypeUtil.indexNameById(read.asStruct()).asScala
    def field(id: Int) = read.findField(id)
    val history = table.schemas().asScala.values.toSeq.flatMap { old =>
      TypeUtil.indexByName(old.asStruct()).asScala.toSeq.flatMap { case (name, id) =>
        val oldType = old.findType(id.intValue())
        if (readNames.get(name).exists(_ != id)) {
          Some(s"column '$name' was dropped and added again (Iceberg field ids ${id} and ${readNames(name)})")
        } else if (readIds.get(id).exists(_ != name)) {
          Some(s"column '${readIds(id)}' was renamed (it was '$name')")
        } else if (readIds.contains(id) && oldType.isPrimitiveType && oldType != field(id).`type`()) {
          Some(s"column '$name' changed type from $oldType to ${field(id).`type`()}")
        } else None
      }
    }
    val defaults = read.columns().asScala.filter(f => f.initialDefault() != null).map(_.name())
    val types = readIds.keys.map(id => field(id.intValue())).filter(f => !readableTypes.contains(f.`type`().typeId()))
    history.headOption.map(why =>
      s"the Iceberg table's schema changed in a way a scan by column name would not see: " +
        s"$why")
      .orElse(defaults.headOption.map(c => s"the Iceberg table's column '$c' has a default value for older files"))
      .orElse(types.headOption.map(f =>
          s"the Iceberg table's column '${f.name()}' is of type ${f.`type`()}, which " +
            "Spark's Parquet reader does not read as Iceberg does"))
      .orElse(Option(table.properties().get("schema.name-mapping.default")).map(_ =>
          "the Iceberg table has a " +
            "name mapping (imported files without field ids)"))
  }
}

/**
 * How many data file entries this JVM read from Iceberg manifests: every file of a snapshot it
 * planned, and the files each commit an [[IcebergLogWalk]] read added or removed. What tests measure
 * the cost of a refresh by (proportional to the change, not to the table), rather than a clock.
 */
private[hyperspace] object IcebergReads {
  private val dataFiles = new AtomicLong

  /** The data file entries read so far. */
  def dataFilesRead: Long = dataFiles.get()

  private[iceberg] def read(entries: Long): Unit = dataFiles.addAndGet(entries)
}

/**
 * The data files of the Iceberg snapshot `current` found from those of an older snapshot of its
 * ancestry (`filesThen`, at sequence number `since`, of the table with uuid `tableIdThen`) and
 * the data files each snapshot in between added and removed, read from the manifests that
 * snapshot wrote: the cost of the change, not of the table.
 *
 * Left, with the reason, whenever the walk cannot be trusted to give exactly what planning
 * `current` gives: another table at the location; no snapshot with sequence number `since` among
 * `current`'s ancestors (expired, or the table rolled back past it or replaced); a format v1 table
 * (its snapshots carry no sequence number); a snapshot in between whose operation is not one of
 * Iceberg's data operations, or that added or removed delete files (row-level deletes); a removed
 * file that was not there, or an added one that already was; a count of files that disagrees with
 * what the snapshots' summaries say the table holds.
 */
private[iceberg] final class IcebergLogWalk(
    table: Table,
    current: Snapshot,
    since: Long,
    tableIdThen: Option[String],
    filesThen: Seq[FileKey]) {

  private val uuid = table.uuid().toString

  // Operations whose data and delete file changes the snapshot's own manifests list.
  private val known = Set(DataOperations.APPEND, DataOperations.REPLACE, DataOperations.OVERWRITE,
    DataOperations.DELETE)

  lazy val changes: Either[String, LogChanges] =
    if (!tableIdThen.contains(uuid)) {
      Left(
        tableIdThen.fold("the index does not record the Iceberg table's uuid (it was built before it did)")(recorded =>
          s"the Iceberg table at its location is another table than the one indexed (uuid $uuid, not $recorded)"))
    } else if (since <= 0 || current.sequenceNumber() <= 0) {
      Left("the Iceberg table's snapshots carry no sequence number (format v1, or the index was built " +
        "from the empty table)")
    } else {
      for {
        chain <- snapshotsSince()
        files = mutable.HashMap.empty[String, FileKey] ++ filesThen.map(f => f.path -> f)
        _ <- chain.iterator.map(applyChanges(_, files)).collectFirst { case Some(why) => why }.toLeft(())
        _ <- totalMatches(current, files.size, "from its snapshots' changes")
      } yield LogChanges(files.valuesIterator.toSeq.sortBy(_.path), chain.size,
        chain.headOption.fold(current.sequenceNumber())(_.sequenceNumber()), current.sequenceNumber())
    }

  /**
   * The snapshots after the ancestor of `current` with sequence number `since`, up to `current`,
   * oldest first (a file one of them adds, a later one may remove); Left when there is no such
   * ancestor, or the files the index recorded are not as many as that ancestor held.
   */
  private def snapshotsSince(): Either[String, List[Snapshot]] = {
    def notAncestor(why: String) = Left(s"the snapshot the index was built from (sequence number $since) is not " +
      s"an ancestor of the table's current snapshot ${current.snapshotId()}: $why")
    var chain = List.empty[Snapshot]
    var at = current
    // Every commit has a larger sequence number than its parent: the walk stops at `since` or before.
    while (at.sequenceNumber() > since) {
      Option(at.parentId()).map(id => Option(table.snapshot(id.longValue()))) match {
        case None => return notAncestor("the table was rolled back or replaced since")
        case Some(None) =>
          return Left(s"the Iceberg table no longer has every snapshot since sequence number $since (snapshot " +
            s"${at.parentId()}, parent of ${at.snapshotId()}, was expired)")
        case Some(Some(parent)) if parent.sequenceNumber() >= at.sequenceNumber() =>
          return Left(s"snapshot ${parent.snapshotId()} has a sequence number not smaller than its child's")
        case Some(Some(parent)) =>
          chain = at :: chain
          at = parent
      }
    }
    if (at.sequenceNumber() != since) notAncestor("the table was rolled back since")
    else totalMatches(at, filesThen.size, "in the index's log entry").map(_ => chain)
  }

  // The snapshot summary's count of live data files, when the writer kept it: a walk ending with
  // another count missed a change, an entry with another count describes another snapshot.
  private def totalMatches(s: Snapshot, counted: Int, where: String): Either[String, Unit] =
    IcebergTable.summaryCount(s, SnapshotSummary.TOTAL_DATA_FILES_PROP) match {
      case None => Left(s"snapshot ${s.snapshotId()}'s summary does not say how many data files the table holds")
      case Some(total) if total != counted =>
        Left(s"snapshot ${s.snapshotId()}'s summary says the table holds $total data file(s), not $counted as " +
          s"found $where")
      case _ => Right(())
    }

  /** Applies the data file changes of `s` to `files`; the reason when they cannot be accounted for. */
  private def applyChanges(s: Snapshot, files: mutable.HashMap[String, FileKey]): Option[String] = {
    val at = s"snapshot ${s.snapshotId()} (sequence number ${s.sequenceNumber()}, ${s.operation()})"
    // Only the manifests `s` wrote are read, and of them only the entries `s` added or removed.
    lazy val changes = SnapshotChanges.builderFor(table).snapshot(s).build()
    if (!known.contains(s.operation())) Some(s"$at is not a data operation Hyperspace reads the changes of")
    else if (changes.addedDeleteFiles().iterator().hasNext || changes.removedDeleteFiles().iterator().hasNext) {
      Some(s"$at adds or removes delete files (merge-on-read row-level deletes)")
    } else {
      val removed = changes.removedDataFiles().asScala.map(IcebergTable.keyOf).toSeq
      val addedData = changes.addedDataFiles().asScala.toSeq
      val added = addedData.map(IcebergTable.keyOf)
      IcebergReads.read(removed.size + added.size)
      // A file Spark's Parquet reader cannot read: planning finds it too, and `unservable` says why.
      addedData.find(_.format() != FileFormat.PARQUET)
        .map(f => s"$at adds ${f.format()} data file ${IcebergTable.pathOf(f)}; only Parquet data files are read")
        // A commit names a data file without its delete files, which this one neither adds nor removes.
        .orElse(removed.find(r => !files.get(r.path).exists(_.copy(deletionVector = None) == r))
            .map(r => s"$at removes data file ${r.path}, which was not among the table's files"))
        .orElse {
          removed.foreach(r => files -= r.path)
          added.find(a => files.contains(a.path)).map(a =>
            s"$at adds data file ${a.path}, already among the table's files")
        }
        .orElse {
          added.foreach(a => files(a.path) = a)
          None
        }
    }
  }
}

/**
 * Data files of an Iceberg table (`keys`, read when first listed) as a file listing. Files are
 * immutable in Iceberg: the modification time is not kept.
 */
private[iceberg] class IcebergListing(root: Path, keys: => Seq[FileKey]) extends FileIndex {

  protected lazy val files: Seq[FileKey] = keys

  private lazy val statuses: Seq[FileStatus] =
    files.map(f => new FileStatus(f.size, false, 1, 0L, f.modificationTime, new Path(f.path)))

  override def rootPaths: Seq[Path] = Seq(root)

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    if (statuses.isEmpty) Nil else Seq(FileListing.directory(InternalRow.empty, statuses))

  override def inputFiles: Array[String] = statuses.map(_.getPath.toUri.toString).toArray

  override def refresh(): Unit = ()

  override def sizeInBytes: Long = files.map(_.size).sum

  override def partitionSchema: StructType = new StructType()

  override def toString: String = s"IcebergListing(${files.size} files of $root)"
}

/**
 * The data files of one Iceberg snapshot as a file listing, standing in for the V2 scan `original`
 * while the rules look at it. Listed only when a rule compares the table with an index, or a scan
 * reads it.
 */
private[iceberg] final class IcebergFileIndex(
    val table: IcebergTable,
    override val original: LogicalPlan,
    root: Path) extends IcebergListing(root, table.files) with TableScanListing {

  override def toString: String = s"IcebergFileIndex(${files.size} files of $root)"
}

/**
 * The data files of an Iceberg scan that Iceberg's own pruning keeps for a query's filter, minus
 * those data skipping indexes ruled out (`read`): a Parquet scan of them reads what Iceberg's scan
 * would. `table` is the stand-in listing of the whole scan, which still names the table.
 */
private[iceberg] final class IcebergSkippedFiles(
    val table: IcebergFileIndex,
    root: Path,
    read: Seq[FileKey],
    val entries: Seq[LogEntry],
    val stats: RelationSkippingStats,
    override val forJoin: Boolean) extends IcebergListing(root, read) with SkippedFilesIndex {

  override def equals(other: Any): Boolean = other match {
    case o: IcebergSkippedFiles => o.table.rootPaths == table.rootPaths && o.files == files
    case _ => false
  }

  override def hashCode(): Int = (table.rootPaths, files).hashCode()

  override def toString: String =
    s"IcebergSkippedFiles(${stats.filesRead} of ${stats.filesTotal} files; ${entries.map(_.name).mkString(", ")})"
}
