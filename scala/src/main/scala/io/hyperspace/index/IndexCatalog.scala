package io.hyperspace.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.types._

import io.hyperspace.{HyperspaceException, HyperspaceIndexNotFoundException}
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.{Content, IndexLogManager, LogEntry, NameClaims, States}
import io.hyperspace.sources.{FileSource, SourceChanges}

/** What `indexes()` and `index(name)` report about one index. */
case class IndexSummary(
    name: String,
    kind: String,
    indexedColumns: Seq[String],
    includedColumns: Seq[String],
    numBuckets: Int,
    state: String,
    indexLocation: String,
    sizeInBytes: Long,
    numIndexFiles: Int,
    numSourceFiles: Int,
    appendedFiles: Integer,
    deletedFiles: Integer,
    lastModified: java.sql.Timestamp,
    stateReason: String,
    // Extended statistics (index(name) only).
    lineage: Boolean,
    dataVersion: Int,
    logVersion: Long,
    sourceFormat: String,
    sourceRootPaths: Seq[String],
    sourceTable: String,
    sourceSizeInBytes: Long,
    schema: String,
    signature: String,
    // The original Hyperspace's columns (see docs/migrating.md).
    additionalStats: Map[String, String],
    indexRoot: String,
    kindAbbr: String,
    sizeIndexFiles: Long,
    sizeSourceFiles: Long,
    numAppendedFiles: Int,
    sizeAppendedFiles: Long,
    numDeletedFiles: Int,
    sizeDeletedFiles: Long,
    indexContentPaths: Seq[String])

/** The indexes under the session's system path. */
class IndexCatalog(spark: SparkSession) extends Logging {

  // One copy per catalog (they live for one operation or one query's planning): Spark copies
  // the whole Hadoop configuration on every call, a noticeable part of planning a query.
  private[hyperspace] lazy val hadoopConf: org.apache.hadoop.conf.Configuration = spark.sessionState.newHadoopConf()

  /**
   * The qualified system path. Fails with a [[HyperspaceException]] naming it when it cannot be
   * used: an unknown filesystem scheme, or a file where the directory should be.
   */
  def systemPath: Path = {
    val configured = HyperspaceConf.systemPath(spark)
    scala.util.Try(new Path(configured)).foreach(io.hyperspace.log.LogStore.requireSupported(_))
    val qualified = try {
      val p = new Path(configured)
      p.getFileSystem(hadoopConf).makeQualified(p)
    } catch {
      case NonFatal(e) =>
        throw new HyperspaceException(s"Cannot use the system path '$configured' " +
            s"(spark.hyperspace.system.path): ${e.getClass.getSimpleName}: ${e.getMessage}", e)
    }
    val fs = qualified.getFileSystem(hadoopConf)
    if (scala.util.Try(fs.getFileStatus(qualified)).toOption.exists(!_.isDirectory)) {
      throw new HyperspaceException(s"The system path $qualified (spark.hyperspace.system.path) is a " +
        "file, not a directory: set spark.hyperspace.system.path to a directory for the indexes.")
    }
    qualified
  }

  /** The names of the index directories present (including deleted or half-created ones). */
  def directoryNames: Seq[String] = {
    val root = systemPath
    val fs = root.getFileSystem(hadoopConf)
    if (!fs.exists(root)) Nil
    else fs.listStatus(root).toSeq.filter(_.isDirectory).map(_.getPath.getName)
      .filterNot(n => n.startsWith(".") || n.startsWith("_")).sorted
  }

  /**
   * The log of index `name` (validated first: a name is one directory under the system path):
   * the directory its claim names (see [[NameClaims]]), else — for indexes created before claims
   * — its own directory or one whose name differs only in case. A new name gets its own.
   */
  def logOf(name: String): IndexLogManager = {
    IndexNames.validate(name)
    val root = systemPath
    val dir = NameClaims.read(root, name, hadoopConf)
      .orElse(existingDirectory(name))
      .getOrElse(name)
    new IndexLogManager(new Path(root, dir), hadoopConf)
  }

  private def existingDirectory(name: String): Option[String] = {
    val names = directoryNames
    names.find(_ == name).orElse(names.find(n => IndexNames.key(n) == IndexNames.key(name)))
  }

  /**
   * The log a create of `name` writes: the name is claimed first (so `X` and `x` created at once
   * end up in one directory, where entry 0 decides), and the directory must be empty or an index
   * directory — Hyperspace never writes into a directory it does not own.
   */
  def logForCreate(name: String): IndexLogManager = {
    IndexNames.validate(name)
    val root = systemPath
    val dir = NameClaims.read(root, name, hadoopConf).getOrElse(
      NameClaims.claim(root, existingDirectory(name).getOrElse(name), hadoopConf))
    val log = new IndexLogManager(new Path(root, dir), hadoopConf)
    requireOwnDirectory(name, log)
    log
  }

  /** Fails unless the index directory of `log` is absent, empty, or holds only a Hyperspace index. */
  private def requireOwnDirectory(name: String, log: IndexLogManager): Unit = {
    val dir = log.indexPath
    val fs = dir.getFileSystem(hadoopConf)
    def notOurs(why: String): Nothing =
      throw new HyperspaceException(s"Cannot create index '$name': $dir exists and is not a Hyperspace " +
        s"index ($why). Hyperspace never writes into a directory it does not own: choose another " +
        "index name, or set spark.hyperspace.system.path to a directory that holds only indexes.")
    val status = scala.util.Try(fs.getFileStatus(dir)).toOption
    if (status.exists(!_.isDirectory)) notOurs("it is a file")
    if (status.nonEmpty) {
      val children = fs.listStatus(dir).toSeq
      if (children.nonEmpty) {
        val logDir = children.find(_.getPath.getName == IndexLogManager.LogDirName)
        // Only data versions left means an index whose log was lost: a new build takes the
        // next version beside them (vacuum removes them, VacuumAction.removeLoglessData).
        val onlyVersions = children.forall { c =>
          c.getPath.getName.startsWith(".") || (c.isDirectory && Content.versionOf(c.getPath.getName).isDefined)
        }
        if (!logDir.exists(_.isDirectory) && !onlyVersions) {
          notOurs(s"it has no ${IndexLogManager.LogDirName} directory")
        }
        val foreign = children.map(_.getPath.getName).filterNot(n =>
          n == IndexLogManager.LogDirName || Content.versionOf(n).isDefined || n.startsWith("."))
        if (foreign.nonEmpty) notOurs(s"it holds ${foreign.take(3).mkString(", ")}")
        log.damage.foreach { e =>
          throw new HyperspaceException(s"Cannot create index '$name': $dir holds an index log whose " +
            s"newest entry cannot be read (${e.getMessage}); indexes() lists it as CORRUPT. If it is " +
            s"an index, delete and vacuum it first; if not, choose another index name.")
        }
        log.latest.map(_.name).filter(n => IndexNames.key(n) != IndexNames.key(name))
          .foreach(other => notOurs(s"its log is the log of index '$other'"))
      }
    }
  }

  /** The log of an index that must exist (any state but DOESNOTEXIST, or stuck transient, or CORRUPT). */
  def existingLogOf(name: String): IndexLogManager = {
    val log = logOf(name)
    val latest = if (log.damage.isDefined) None else log.latest
    if (log.damage.isEmpty && (latest.isEmpty || latest.exists(_.state == States.DOESNOTEXIST))) {
      throw new HyperspaceIndexNotFoundException(
        s"Index '$name' does not exist under ${systemPath}." +
          (if (directoryNames.nonEmpty) s" Existing indexes: ${liveNames.mkString(", ")}." else ""))
    }
    log
  }

  private def liveNames: Seq[String] = summaries().map(_.name)

  /**
   * One summary per index that exists, by name; unreadable logs are skipped with a warning.
   * `withPending` lists every index's source for the appended/deleted counts (null otherwise).
   */
  def summaries(withPending: Boolean = false): Seq[IndexSummary] = {
    val root = systemPath
    directoryNames.flatMap(dir => summaryIn(root, dir, withPending))
  }

  private def summaryIn(root: Path, dir: String, withPending: Boolean): Option[IndexSummary] = {
    try summaryOf(new IndexLogManager(new Path(root, dir), hadoopConf), withPending)
    catch {
      case NonFatal(e) =>
        logWarning(s"Skipping index directory '$dir' in the index list: ${e.getMessage}")
        None
    }
  }

  /**
   * The summary of one index's log: the state of its newest entry, data of its newest stable one,
   * and, `withPending`, how many source files were appended and deleted since the index data was
   * built (null when not asked for or the source cannot be listed). Listing the source is the
   * costly part, so only what users see (`indexes()`, `index(name)`) asks for it.
   */
  def summaryOf(log: IndexLogManager, withPending: Boolean = false): Option[IndexSummary] =
    log.damage match {
      case Some(damage) => Some(corruptSummary(log, damage))
      case None => log.latest.flatMap { latest =>
          val shown: LogEntry = log.latestStable.filter(_ => latest.state != States.CREATING).getOrElse(latest)
          lazy val pending = if (withPending) pendingChanges(shown) else None
          if (latest.state == States.DOESNOTEXIST) None
          else Some(summary(latest.name, latest.state, unknownKindReason(shown), latest.id, latest.timestamp, shown,
              pending))
        }
    }

  /**
   * A CORRUPT index (its newest entry cannot be read): shown with the reason and, where one
   * exists, the data of its newest readable stable entry, so users see what delete + vacuum
   * would start from.
   */
  private def corruptSummary(log: IndexLogManager, damage: Exception): IndexSummary = {
    val base = log.newestReadableStable
    val reason = damage.getMessage
    val lastId = log.entryIds.lastOption.getOrElse(-1L)
    base match {
      case Some(entry) => summary(entry.name, IndexCatalog.Corrupt, reason, lastId, entry.timestamp, entry, None)
      case None =>
        IndexSummary(log.indexPath.getName, "", Nil, Nil, 0, IndexCatalog.Corrupt, log.indexPath.toString,
          0L, 0, 0, null, null, new java.sql.Timestamp(0L), reason, false, 0, lastId, "", Nil, null, 0L, "", "",
          Map.empty, log.indexPath.toString, "", 0L, 0L, 0, 0L, 0, 0L, Nil)
    }
  }

  /** Why an index cannot be used at all: its kind is not registered in this JVM (null otherwise). */
  private def unknownKindReason(entry: LogEntry): String =
    if (IndexKinds.find(entry.index.kind).isDefined) null
    else IndexKinds.unknown(entry.index.kind, entry.name).getMessage

  private def summary(name: String, state: String, reason: String, logVersion: Long, timestamp: Long,
      shown: LogEntry, pending: => Option[SourceChanges]): IndexSummary = {
    val kind = IndexCatalog.kindSummary(shown)
    IndexSummary(
      name = name,
      kind = shown.index.kind,
      indexedColumns = kind.indexedColumns,
      includedColumns = kind.includedColumns,
      numBuckets = kind.numBuckets,
      state = state,
      indexLocation = IndexCatalog.dataLocation(shown.content),
      sizeInBytes = shown.content.sizeInBytes,
      numIndexFiles = shown.content.files.size,
      numSourceFiles = shown.source.files.size,
      appendedFiles = pending.map(c => Integer.valueOf(c.appended.size)).orNull,
      deletedFiles = pending.map(c => Integer.valueOf(c.deleted.size)).orNull,
      lastModified = new java.sql.Timestamp(timestamp),
      stateReason = reason,
      lineage = shown.index.lineage,
      dataVersion = shown.content.dataVersion,
      logVersion = logVersion,
      sourceFormat = shown.source.format,
      sourceRootPaths = shown.source.rootPaths,
      sourceTable = shown.source.table.orNull,
      sourceSizeInBytes = shown.source.sizeInBytes,
      schema = shown.index.schema,
      signature = shown.signature.value,
      additionalStats = kind.additionalStats,
      indexRoot = shown.content.root,
      kindAbbr = IndexCatalog.kindAbbr(shown.index.kind),
      sizeIndexFiles = shown.content.sizeInBytes,
      sizeSourceFiles = shown.source.sizeInBytes,
      numAppendedFiles = shown.source.appendedFiles.size,
      sizeAppendedFiles = shown.source.appendedFiles.map(_.size).sum,
      numDeletedFiles = shown.source.deletedFiles.size,
      sizeDeletedFiles = shown.source.deletedFiles.map(_.size).sum,
      indexContentPaths = IndexCatalog.contentPaths(shown.content))
  }

  private def pendingChanges(entry: LogEntry): Option[SourceChanges] =
    if (entry.state == States.CREATING) None
    else try {
      val source = FileSource.load(spark, entry.source, entry.name)
      Some(SourceChanges.between(entry.source.files, source.currentFilesSince(entry)._1))
    } catch {
      case NonFatal(e) =>
        logWarning(s"Cannot list the source of index '${entry.name}': ${e.getMessage}")
        None
    }

  /** `indexes()`: one row per index. */
  def indexesDataFrame(): DataFrame = toDataFrame(summaries(withPending = true), IndexCatalog.listColumns)

  /** `listIndexes()`: one row per index, in words (see [[IndexCatalog.readableColumns]]). */
  def readableDataFrame(): DataFrame = {
    val rows = summaries(withPending = true).map(IndexCatalog.readable)
    spark.createDataFrame(spark.sparkContext.parallelize(rows, 1), StructType(IndexCatalog.readableColumns))
  }

  /** `index(name)`: one row with the extended statistics. */
  def indexDataFrame(name: String): DataFrame =
    toDataFrame(summaryOf(existingLogOf(name), withPending = true).toSeq, IndexCatalog.allColumns)

  private def toDataFrame(rows: Seq[IndexSummary], columns: Seq[StructField]): DataFrame = {
    val data = rows.map { s =>
      val values = s.productElementNames.zip(s.productIterator).toMap
      Row.fromSeq(columns.map(c => values(c.name)))
    }
    spark.createDataFrame(spark.sparkContext.parallelize(data, 1), StructType(columns))
  }
}

object IndexCatalog {
  /** The state `indexes()` shows for an index whose newest log entry cannot be read. */
  val Corrupt = "CORRUPT"

  private val strings = ArrayType(StringType, containsNull = false)

  /** The columns of `indexes()`. */
  val listColumns: Seq[StructField] = Seq(
    StructField("name", StringType, nullable = false),
    StructField("kind", StringType, nullable = false),
    StructField("indexedColumns", strings, nullable = false),
    StructField("includedColumns", strings, nullable = false),
    StructField("numBuckets", IntegerType, nullable = false),
    StructField("state", StringType, nullable = false),
    StructField("indexLocation", StringType, nullable = false),
    StructField("sizeInBytes", LongType, nullable = false),
    StructField("numIndexFiles", IntegerType, nullable = false),
    StructField("numSourceFiles", IntegerType, nullable = false),
    StructField("appendedFiles", IntegerType, nullable = true),
    StructField("deletedFiles", IntegerType, nullable = true),
    StructField("lastModified", TimestampType, nullable = false),
    StructField("stateReason", StringType, nullable = true),
    StructField("indexRoot", StringType, nullable = false),
    StructField("additionalStats", MapType(StringType, StringType, valueContainsNull = false),
      nullable = false))

  /**
   * The original Hyperspace's `index(name)` columns not in `indexes()`. `numAppendedFiles` and
   * `numDeletedFiles` count, as there, the changes a quick refresh recorded in the log; the
   * `appendedFiles` / `deletedFiles` columns count what a listing of the source finds now.
   */
  private val originalExtendedColumns: Seq[StructField] = Seq(
    StructField("kindAbbr", StringType, nullable = false),
    StructField("sizeIndexFiles", LongType, nullable = false),
    StructField("sizeSourceFiles", LongType, nullable = false),
    StructField("numAppendedFiles", IntegerType, nullable = false),
    StructField("sizeAppendedFiles", LongType, nullable = false),
    StructField("numDeletedFiles", IntegerType, nullable = false),
    StructField("sizeDeletedFiles", LongType, nullable = false),
    StructField("indexContentPaths", strings, nullable = false))

  /** The short kind name explain prints (`Type: CI`), as the original reported it; an unknown kind's own name. */
  def kindAbbr(kind: String): String = IndexKinds.find(kind).map(_.abbreviation).getOrElse(kind)

  /**
   * The directory holding the index data files: the data version directory when all files lie in
   * one (`<root>/v__=N`), otherwise the deepest directory above all of them. Where the original
   * Hyperspace's `indexLocation` pointed, so `spark.read.parquet(indexLocation)` reads the data.
   */
  def dataLocation(content: Content): String = {
    val dirs = content.files.map(f => f.path.split('/').dropRight(1).toSeq).distinct
    if (dirs.isEmpty) content.dataPath
    else {
      val common = dirs.reduce((a, b) => a.zip(b).takeWhile { case (x, y) => x == y }.map(_._1))
      (content.root +: common).mkString("/")
    }
  }

  /** The data version directories holding the index data files, in version order. */
  def contentPaths(content: Content): Seq[String] =
    content.files.flatMap(_.dataVersion).distinct.sorted.map(v => s"${content.root}/${Content.versionDirName(v)}")

  /**
   * What the kind of `entry`'s index shows of it; for a kind this JVM does not know, the
   * definition's fields as recorded (the index is listed, but no query or operation uses it).
   */
  def kindSummary(entry: LogEntry): KindSummary = IndexKinds.find(entry.index.kind) match {
    case Some(kind) => kind.summary(entry.index)
    case None => KindSummary(entry.index.indexedColumns, entry.index.includedColumns, entry.index.numBuckets,
        entry.index.properties)
  }

  /**
   * The columns of `listIndexes()`: what a person reading a notebook cell wants of each index,
   * as text — `indexes()` keeps the original Hyperspace's typed columns for programs.
   */
  val readableColumns: Seq[StructField] =
    Seq("name", "kind", "source", "columns", "state", "size", "freshness").map(StructField(_, StringType,
        nullable = false))

  /** The [[readableColumns]] row of `s`. */
  def readable(s: IndexSummary): Row = {
    val source = Option(s.sourceTable).getOrElse(s.sourceRootPaths.mkString(", "))
    val included = if (s.includedColumns.isEmpty) "" else s" include ${s.includedColumns.mkString(", ")}"
    Row(s.name, s.kind, s"${s.sourceFormat} $source", s.indexedColumns.mkString(", ") + included, s.state,
      bytesInWords(s.sizeInBytes), freshness(s))
  }

  // Whether a query would see source rows the index data lacks: files appended or deleted
  // since the data was built (a quick refresh records them; hybrid scan serves them).
  private def freshness(s: IndexSummary): String =
    if (s.appendedFiles == null || s.deletedFiles == null) "unknown: the source cannot be listed"
    else if (s.appendedFiles == 0 && s.deletedFiles == 0) "up to date"
    else s"${s.appendedFiles} appended, ${s.deletedFiles} deleted source files not in the index data"

  /** `bytes` in the largest binary unit that keeps it at least 1, e.g. "1.5 MiB". */
  def bytesInWords(bytes: Long): String = {
    val units = Seq("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    val exponent =
      if (bytes <= 0) 0 else math.min((63 - java.lang.Long.numberOfLeadingZeros(bytes)) / 10, units.size - 1)
    if (exponent == 0) s"$bytes B" else f"${bytes.toDouble / (1L << (10 * exponent))}%.1f ${units(exponent)}"
  }

  /** The columns of `index(name)`: those of `indexes()` and the extended statistics. */
  val allColumns: Seq[StructField] = listColumns ++ Seq(
    StructField("lineage", BooleanType, nullable = false),
    StructField("dataVersion", IntegerType, nullable = false),
    StructField("logVersion", LongType, nullable = false),
    StructField("sourceFormat", StringType, nullable = false),
    StructField("sourceRootPaths", strings, nullable = false),
    StructField("sourceTable", StringType, nullable = true),
    StructField("sourceSizeInBytes", LongType, nullable = false),
    StructField("schema", StringType, nullable = false),
    StructField("signature", StringType, nullable = false)) ++ originalExtendedColumns
}
