package io.hyperspace.sources.iceberg

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.iceberg.{ContentFile, DataOperations, FileFormat, FileScanTask, MetadataColumns, Schema, Snapshot, SnapshotChanges, SnapshotSummary, Table}
import org.apache.iceberg.spark.SparkSchemaUtil
import org.apache.iceberg.spark.source.SparkTable
import org.apache.iceberg.types.{Type, TypeUtil}
import org.apache.iceberg.util.SnapshotUtil
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, CreateNamedStruct, Expression, GetMapValue, In, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.util.QuotingUtils
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation, PartitionDirectory}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{DataType, MapType, MetadataBuilder, StringType, StructField, StructType}

import io.hyperspace.HyperspaceException
import io.hyperspace.index.BoundedCache
import io.hyperspace.shims.{FileListing, FileRelation}
import io.hyperspace.sources.{FileKey, LogChanges, SelectedFilesIndex, SourcePaths, TableFormatProvider, TableScanListing, VersionedTable}

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
      case _ => None
    }

  override def load(spark: SparkSession, root: String): DataFrame = spark.read.format("iceberg").load(root)

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

  override def filesFromLog(
      since: Long,
      tableIdThen: Option[String],
      filesThen: Seq[FileKey]): Either[String, LogChanges] =
    snapshot match {
      case None => Left("the Iceberg table has no snapshot")
      case Some(current) => new IcebergLogWalk(table, current, since, tableIdThen, filesThen).changes
    }

  // Data files with delete files are served: their keys name their deletes (a file whose deletes
  // change is another file) and [[restrictedTo]] reads them through Iceberg, deletes applied.
  override lazy val unservable: Option[String] = {
    val otherFormats = tasks.map(_.file().format()).filter(_ != FileFormat.PARQUET).distinct
    lazy val snapshotName = snapshot.map(s => s"snapshot ${s.snapshotId()}").getOrElse("the empty table")
    if (otherFormats.nonEmpty) {
      Some(s"the Iceberg table's $snapshotName has ${otherFormats.mkString(", ")} data files; only Parquet " +
        "data files are read")
    } else IcebergTable.schemaProblem(table, readSchema)
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
   * file as a file scan's `_metadata.file_path` does (lineage needs it).
   */
  override def restrictedTo(paths: Set[String]): LogicalPlan = {
    val selected = tasks.filter(t => paths.contains(IcebergTable.pathOf(t)))
    if (selected.exists(!_.deletes().isEmpty)) IcebergTable.readThroughIceberg(original, selected)
    else {
      val FileRelation(scan, fs) = relation
      FileRelation.withLocation(scan, fs, new SelectedFilesIndex(fs.location, paths), keepTable = false).newInstance()
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
        try planned.asScala.toList
        finally planned.close()
      })

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
    Option(s.summary()).flatMap(m => Option(m.get(SnapshotSummary.TOTAL_DATA_FILES_PROP))).flatMap(
      _.toLongOption) match {
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
      val added = changes.addedDataFiles().asScala.map(IcebergTable.keyOf).toSeq
      // A commit names a data file without its delete files, which this one neither adds nor removes.
      removed.find(r => !files.get(r.path).exists(_.copy(deletionVector = None) == r))
        .map(r => s"$at removes data file ${r.path}, which was not among the table's files")
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
 * The data files of one Iceberg snapshot as a file listing, standing in for the V2 scan `original`
 * while the rules look at it. Files are immutable in Iceberg: the modification time is not kept.
 */
private[iceberg] final class IcebergFileIndex(
    val table: IcebergTable,
    override val original: LogicalPlan,
    root: Path) extends TableScanListing {

  // Listed only when a rule compares the table with an index, or a scan reads it.
  private def files: Seq[FileKey] = table.files

  private lazy val statuses: Seq[FileStatus] =
    files.map(f => new FileStatus(f.size, false, 1, 0L, f.modificationTime, new Path(f.path)))

  override def rootPaths: Seq[Path] = Seq(root)

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    if (statuses.isEmpty) Nil else Seq(FileListing.directory(InternalRow.empty, statuses))

  override def inputFiles: Array[String] = statuses.map(_.getPath.toUri.toString).toArray

  override def refresh(): Unit = ()

  override def sizeInBytes: Long = files.map(_.size).sum

  override def partitionSchema: StructType = new StructType()

  override def toString: String = s"IcebergFileIndex(${files.size} files of $root)"
}
