package io.hyperspace.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.types._

import io.hyperspace.HyperspaceIndexNotFoundException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.log.{Content, IndexLogManager, LogEntry, States}
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

  private def hadoopConf = spark.sessionState.newHadoopConf()

  /** The qualified system path. */
  def systemPath: Path = {
    val p = new Path(HyperspaceConf.systemPath(spark))
    p.getFileSystem(hadoopConf).makeQualified(p)
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
   * The log of index `name`: its own directory, or — index names being case-insensitive — the
   * directory whose name differs only in case. A new index gets a directory of its own name.
   */
  def logOf(name: String): IndexLogManager = {
    val dir = directoryNames.find(_ == name)
      .orElse(directoryNames.find(_.equalsIgnoreCase(name)))
      .getOrElse(name)
    new IndexLogManager(new Path(systemPath, dir), hadoopConf)
  }

  /** The log of an index that must exist (any state but DOESNOTEXIST, or stuck transient). */
  def existingLogOf(name: String): IndexLogManager = {
    val log = logOf(name)
    val latest = log.latest
    if (latest.isEmpty || latest.exists(_.state == States.DOESNOTEXIST)) {
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
  def summaries(withPending: Boolean = false): Seq[IndexSummary] = directoryNames.flatMap { dir =>
    try summaryOf(new IndexLogManager(new Path(systemPath, dir), hadoopConf), withPending)
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
    log.latest.flatMap { latest =>
      val shown: LogEntry = log.latestStable.filter(_ => latest.state != States.CREATING).getOrElse(latest)
      lazy val pending = if (withPending) pendingChanges(shown) else None
      if (latest.state == States.DOESNOTEXIST) None
      else Some(IndexSummary(
        name = latest.name,
        kind = shown.index.kind,
        indexedColumns = shown.index.indexedColumns,
        includedColumns = shown.index.includedColumns,
        numBuckets = shown.index.numBuckets,
        state = latest.state,
        indexLocation = IndexCatalog.dataLocation(shown.content),
        sizeInBytes = shown.content.sizeInBytes,
        numIndexFiles = shown.content.files.size,
        numSourceFiles = shown.source.files.size,
        appendedFiles = pending.map(c => Integer.valueOf(c.appended.size)).orNull,
        deletedFiles = pending.map(c => Integer.valueOf(c.deleted.size)).orNull,
        lastModified = new java.sql.Timestamp(latest.timestamp),
        lineage = shown.index.lineage,
        dataVersion = shown.content.dataVersion,
        logVersion = latest.id,
        sourceFormat = shown.source.format,
        sourceRootPaths = shown.source.rootPaths,
        sourceTable = shown.source.table.orNull,
        sourceSizeInBytes = shown.source.sizeInBytes,
        schema = shown.index.schema,
        signature = shown.signature.value,
        additionalStats = IndexCatalog.additionalStats(shown),
        indexRoot = shown.content.root,
        kindAbbr = IndexCatalog.kindAbbr(shown.index.kind),
        sizeIndexFiles = shown.content.sizeInBytes,
        sizeSourceFiles = shown.source.sizeInBytes,
        numAppendedFiles = shown.source.appendedFiles.size,
        sizeAppendedFiles = shown.source.appendedFiles.map(_.size).sum,
        numDeletedFiles = shown.source.deletedFiles.size,
        sizeDeletedFiles = shown.source.deletedFiles.map(_.size).sum,
        indexContentPaths = IndexCatalog.contentPaths(shown.content)))
    }

  private def pendingChanges(entry: LogEntry): Option[SourceChanges] =
    if (entry.state == States.CREATING) None
    else try {
      val source = FileSource.load(spark, entry.source, entry.name)
      Some(SourceChanges.between(entry.source.files, source.currentFiles))
    } catch {
      case NonFatal(e) =>
        logWarning(s"Cannot list the source of index '${entry.name}': ${e.getMessage}")
        None
    }

  /** `indexes()`: one row per index. */
  def indexesDataFrame(): DataFrame = toDataFrame(summaries(withPending = true), IndexCatalog.listColumns)

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

  /** The short kind name explain prints (`Type: CI`), as the original reported it. */
  def kindAbbr(kind: String): String = kind match {
    case "CoveringIndex" => "CI"
    case "DataSkippingIndex" => "DS"
    case other => other
  }

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

  /** The original's kind-specific properties: a covering index's definition, or the sketches. */
  def additionalStats(entry: LogEntry): Map[String, String] = entry.index.kind match {
    case "CoveringIndex" => Map(
      "includedColumns" -> entry.index.includedColumns.mkString(", "),
      "numBuckets" -> entry.index.numBuckets.toString,
      "schema" -> entry.index.schema,
      "hasLineage" -> entry.index.lineage.toString)
    case "DataSkippingIndex" => Map("sketches" -> entry.index.indexedColumns.mkString(", "))
    case _ => entry.index.properties
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
