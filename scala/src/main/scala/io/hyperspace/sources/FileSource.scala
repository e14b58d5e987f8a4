package io.hyperspace.sources

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{AnalysisException, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.{DataType, StructType}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.dataskipping.DataSkippingFileIndex
import io.hyperspace.log.{LogEntry, Signature, Source, SourceFile}
import io.hyperspace.shims.FileRelation

/** A DataFrame that is a plain scan of files: what an index can be built over. */
case class FileSource(relation: LogicalRelation, fsRelation: HadoopFsRelation) {

  /**
   * The table-format table (Delta) the scan reads, when it reads one: then its files, version
   * and restricted scans come from the table's log ([[TableFormats]]), not from a listing.
   */
  lazy val versioned: Option[VersionedTable] = TableFormats.tableOf(relation, fsRelation)

  /** The catalog table the scan reads, when it came from `spark.table(...)`. */
  def table: Option[String] = relation.catalogTable.map(_.identifier.unquotedString).orElse(versioned.flatMap(_.name))

  /** The data source short name (`parquet`, `csv`, ...). */
  def format: String = versioned.map(_.format).getOrElse(fsRelation.fileFormat match {
    case r: DataSourceRegister => r.shortName()
    case other => other.getClass.getName
  })

  /** The read options that shape the data (`header` for CSV, ...), without the paths. */
  def readOptions: Map[String, String] =
    // A table format's read options (time travel) choose the version, which the index records.
    if (versioned.isDefined) Map.empty
    else fsRelation.options.filter { case (k, _) => !Set("path", "paths").contains(k.toLowerCase) }

  /**
   * The files the scan reads as this DataFrame sees them (its listing, not refreshed), with
   * size and modification time, sorted by path: what a query over it will read, before any data
   * skipping (a pruned relation is still the same source).
   */
  def listedFiles: Seq[FileKey] = versioned.map(_.files).getOrElse(
    DataSkippingFileIndex.unwrap(fsRelation.location).listFiles(Nil, Nil)
      .flatMap(_.files.map(f => f.fileStatus))
      .map(s => FileKey(s.getPath.toString, s.getLen, s.getModificationTime))
      .sortBy(_.path))

  /** Every file the scan's paths hold now (the listing refreshed first), as [[listedFiles]]. */
  def currentFiles: Seq[FileKey] = {
    // A table's snapshot is fixed by the scan: FileSource.load reads the table's newest one.
    if (versioned.isEmpty) fsRelation.location.refresh()
    listedFiles
  }

  /**
   * [[currentFiles]], for an index whose newest entry is `entry`: for a table format, the table's
   * files found from those the entry records (at the table version it records) and the log's
   * commits since, when the log still holds them all — the cost of the change, not of the table —
   * else listed; with how they were found (for messages and tests).
   */
  def currentFilesSince(entry: LogEntry): (Seq[FileKey], FilesFound) = versioned match {
    case None => (currentFiles, FilesFound(fromLog = false, ""))
    case Some(table) =>
      val tableId = entry.extra.get(FileSource.TableIdKey)
      val since = io.hyperspace.rules.TableVersions.versionOf(entry)
        .toRight("the index does not record the table version it was built from")
      // After a quick refresh the entry's version is newer than the files its data holds. A format
      // whose scans of added files need what the commits adding them say reads the log from the
      // version of the indexed files, so that every file to index is one a commit read here added.
      val fromIndexed = FileSource.indexedVersion(entry).filter(_ => table.scansAddedFilesFromLog)
        .map(v => table.filesFromLog(v, tableId, entry.source.files.map(_.key)))
        .filter(_.isRight)
      fromIndexed.getOrElse(
        since.flatMap(v => table.filesFromLog(v, tableId, entry.source.currentFiles.map(_.key)))) match {
        case Right(c) =>
          (c.files,
            FilesFound(fromLog = true,
              s"from ${c.commits} commit(s) of the ${table.format} log " +
                (if (c.commits == 0) s"(none after version ${c.to})" else s"(versions ${c.from} to ${c.to})")))
        case Left(why) => (currentFiles, FilesFound(fromLog = false, s"listed from the table's snapshot: $why"))
      }
  }

  /**
   * Fails, naming the index, when no index may stand in for this table's scans
   * ([[VersionedTable.unservable]]).
   */
  def requireServable(indexName: String): Unit =
    versioned.flatMap(_.unservable).foreach { why =>
      throw new HyperspaceException(s"Cannot create or refresh index '$indexName': $why.")
    }

  /** What the log entry of an index over this source records besides the source (the table's id). */
  def entryExtra: Map[String, String] = versioned.flatMap(_.tableId).map(FileSource.TableIdKey -> _).toMap

  /**
   * A scan of only the files of this source in `paths` (partition values, schema and options
   * kept), with fresh attributes so it can sit beside this source in one plan; for a table format,
   * as [[VersionedTable.restrictedTo]] reads them (not always a file scan).
   */
  def restrictedTo(paths: Set[String]): LogicalPlan = versioned.map(_.restrictedTo(paths)).getOrElse {
    FileRelation.withLocation(relation, fsRelation, new SelectedFilesIndex(fsRelation.location, paths),
      keepTable = false).newInstance()
  }

  /**
   * The glob patterns of the [[HyperspaceConf.GLOBBING_PATTERN_OPTION]] reader option, qualified,
   * when the source was read with it; an error when they do not match every directory read.
   */
  def globPatterns: Option[Seq[String]] =
    readOptions.collectFirst { case (k, v) if k.equalsIgnoreCase(HyperspaceConf.GLOBBING_PATTERN_OPTION) => v }
      .map { option =>
        val conf = fsRelation.sparkSession.sessionState.newHadoopConf()
        val patterns = option.split(",").map(_.trim).filter(_.nonEmpty).toSeq.map { p =>
          val path = new Path(p)
          val fs = path.getFileSystem(conf)
          path.makeQualified(fs.getUri, fs.getWorkingDirectory)
        }
        val matched = patterns.flatMap(p => Option(p.getFileSystem(conf).globStatus(p)).toSeq.flatten)
          .map(_.getPath).toSet
        val unmatched = fsRelation.location.rootPaths.filterNot(matched.contains)
        if (patterns.isEmpty || unmatched.nonEmpty) {
          throw new HyperspaceException(
            s"The glob pattern(s) '$option' of the ${HyperspaceConf.GLOBBING_PATTERN_OPTION} option do " +
              s"not match every path the source reads (${unmatched.mkString(", ")}): give the same " +
              "patterns to the option and to load().")
        }
        patterns.map(_.toString)
      }

  /** The log's description of this source, files numbered 0, 1, ... in path order. */
  def describe(): Source = Source(
    format = format,
    // Glob patterns, when declared, so that refresh lists the directories matching them then.
    rootPaths = versioned.map(t => Seq(t.root))
      .getOrElse(globPatterns.getOrElse(fsRelation.location.rootPaths.map(_.toString))),
    options = readOptions,
    schema = fsRelation.dataSchema.json,
    partitionSchema = fsRelation.partitionSchema.json,
    table = table,
    files = SourceChanges(currentFiles, Nil).appendedAsSourceFiles(0L),
    appendedFiles = Nil,
    deletedFiles = Nil)

  /**
   * The signature of an index over this source covering `files`: the table version for a table
   * format (what time travel queries are matched against), else the digest of the files.
   */
  def signature(files: Seq[SourceFile]): Signature = versioned.map(_.signature).getOrElse(Signature.of(files))
}

/**
 * How a source's current files were found: from a table format's log commits since the index's
 * version (`fromLog`), or by listing; `detail` says which commits, or why they could not be used.
 */
final case class FilesFound(fromLog: Boolean, detail: String)

object FileSource {

  /** The log entry's `extra` key recording a table format's table id ([[VersionedTable.tableId]]). */
  val TableIdKey = "sourceTableId"

  /**
   * The log entry's `extra` key recording, for an entry with pending changes (a quick refresh),
   * the table version of the files its index data holds (`source.files`): older than the
   * entry's own version (its signature), which includes the pending changes.
   */
  val IndexedVersionKey = "sourceIndexedVersion"

  /** The table version of the files `entry`'s index data holds, when the entry tells. */
  def indexedVersion(entry: LogEntry): Option[Long] =
    if (!entry.source.hasPendingChanges) io.hyperspace.rules.TableVersions.versionOf(entry)
    else entry.extra.get(IndexedVersionKey).flatMap(_.toLongOption)

  // Reader options that say where files are found, not how their rows are read: partition
  // discovery's base directory, and the declaration of glob patterns.
  private val locationOptions = Set("basepath", HyperspaceConf.GLOBBING_PATTERN_OPTION.toLowerCase)

  /**
   * `options` without those that only locate files (`basePath`, the glob pattern option): two
   * reads with equal such options give the same rows for the same file. (Partition columns a
   * different `basePath` finds are compared by name and type where they are used.)
   */
  def dataOptions(options: Map[String, String]): Map[String, String] =
    options.filter { case (k, _) => !locationOptions.contains(k.toLowerCase) }

  /**
   * The formats a log entry may name: file formats only, read through Spark's file source, and the
   * table formats Delta and Iceberg, read by their root path through their own sources
   * (`HadoopFsRelation`). A log entry is data in the lake that anyone with write access there can
   * edit; it must never make this library open a JDBC connection or any other non-file source.
   */
  val LoadableFormats: Set[String] = Set("parquet", "csv", "json", "orc", "text", "avro", "delta", "iceberg")

  // Options that would make the read go elsewhere than the recorded root paths.
  private val RedirectingOptions = Set("path", "paths")

  // Catalog table providers whose scans are file scans (`hive`: Hive serde tables Spark reads as files).
  private val LoadableProviders = LoadableFormats + "hive"

  /**
   * The source an index was built from, read again now: its catalog table, or its format,
   * read options and paths with the schema recorded at creation (so types do not drift with
   * schema inference). The error names the index when the source can no longer be read. Only
   * file formats ([[LoadableFormats]]) are read, and the stored options may not redirect the read.
   * Whether an index may serve the table is not asked here ([[requireServable]]): a refresh asks
   * once it has found the table's files, which a format may then answer from its log's changes
   * rather than from every file of the table.
   */
  def load(spark: SparkSession, stored: Source, indexName: String): FileSource = {
    def refuse(why: String): Nothing =
      throw new HyperspaceException(s"Cannot read the source of index '$indexName': $why " +
        s"Hyperspace reads only file sources (${LoadableFormats.toSeq.sorted.mkString(", ")}) " +
        "from an index log; the log entry may have been edited. Recreate the index.")
    val format = Option(stored.format).getOrElse("").toLowerCase(java.util.Locale.ROOT)
    stored.table match {
      case Some(t) =>
        val provider = scala.util.Try {
          val ident = spark.sessionState.sqlParser.parseTableIdentifier(t)
          spark.sessionState.catalog.getTableMetadata(ident).provider.map(_.toLowerCase(java.util.Locale.ROOT))
        }
        provider.toOption.flatten.foreach { p =>
          if (!LoadableProviders.contains(p)) refuse(s"its table $t has provider '$p', not a file format.")
        }
      case None =>
        if (!LoadableFormats.contains(format)) {
          refuse(s"its log entry names format '${stored.format}', which is not a file format.")
        }
    }
    stored.options.keys.find(k => RedirectingOptions.contains(k.toLowerCase(java.util.Locale.ROOT)))
      .foreach(k =>
        refuse(s"its log entry has read option '$k', which would read other paths than " +
          s"its root paths (${stored.rootPaths.mkString(", ")})."))
    val df = try {
      stored.table match {
        case Some(t) => spark.table(t)
        case None if TableFormats.isTableFormat(format) =>
          // The table's own log gives its schema (at its newest version).
          TableFormats.provider(format).getOrElse(refuse(s"the library of its format '$format' is not on the " +
              "class path.")).load(spark, stored.rootPaths.head)
        case None =>
          val data = DataType.fromJson(stored.schema).asInstanceOf[StructType]
          val partitions = DataType.fromJson(stored.partitionSchema).asInstanceOf[StructType]
          spark.read.format(format).options(stored.options)
            .schema(StructType(data.fields ++ partitions.fields))
            .load(stored.rootPaths: _*)
      }
    } catch {
      case e: AnalysisException =>
        throw new HyperspaceException(
          s"Cannot read the source of index '$indexName' " +
            s"(${stored.table.getOrElse(stored.rootPaths.mkString(", "))}): ${e.getMessage}", e)
      case scala.util.control.NonFatal(e) =>
        throw new HyperspaceException(
          s"Cannot read the source of index '$indexName' " +
            s"(${stored.table.getOrElse(stored.rootPaths.mkString(", "))}): ${e.getClass.getSimpleName}: " +
            s"${e.getMessage}", e)
    }
    scanOf(df, indexName)
  }

  // Iceberg is named only where this jar has its provider (lines with an Iceberg runtime).
  private val supported = {
    val iceberg = io.hyperspace.BuildInfo.icebergVersion.isDefined
    "Supported: spark.read.<format>(paths) for file formats (parquet, csv, json, orc, ...), " +
      "with or without hive-partitioned directories, spark.read.format(\"delta\").load(path) " +
      "(optionally with versionAsOf), " + (if (iceberg) "spark.read.format(\"iceberg\").load(path), " else "") +
      "and spark.table(name) for file-based, Delta" + (if (iceberg) " or Iceberg" else "") + " catalog tables, " +
      "with no further transformation (choose the index's columns in its IndexConfig instead of " +
      "with select/filter)."
  }

  /** The file scan `df` is, or an error saying what is supported or why no index may serve it. */
  def of(df: DataFrame, indexName: String): FileSource = {
    val source = scanOf(df, indexName)
    source.requireServable(indexName)
    source
  }

  private def scanOf(df: DataFrame, indexName: String): FileSource = {
    if (df.isStreaming) {
      throw new HyperspaceException(
        s"Cannot create index '$indexName' over a streaming DataFrame. $supported")
    }
    unwrap(df.queryExecution.analyzed) match {
      case Some(source) if source.versioned.isEmpty && TableFormats.readsThroughTableFormat(source.fsRelation) =>
        // Its files are not its rows (the format's log removes files and masks rows).
        throw new HyperspaceException(
          s"Cannot create index '$indexName': the DataFrame reads a table format's files " +
            s"(${source.fsRelation.location.getClass.getSimpleName}) otherwise than as a whole table. $supported")
      case Some(source) => source
      case None =>
        throw new HyperspaceException(
          s"Cannot create index '$indexName': the DataFrame is not a plain scan of files " +
            s"(its plan is ${describePlan(df.queryExecution.analyzed)}). $supported")
    }
  }

  private def unwrap(plan: LogicalPlan): Option[FileSource] = plan match {
    case SubqueryAlias(_, child) => unwrap(child)
    case l: LogicalRelation =>
      l.relation match {
        case fs: HadoopFsRelation => Some(FileSource(l, fs))
        case _ => None
      }
    case leaf => TableFormats.asFileScan(leaf).flatMap(unwrap)
  }

  private def describePlan(plan: LogicalPlan): String =
    plan.collectLeaves().headOption.map(leaf => s"${plan.nodeName} over ${leaf.nodeName}")
      .getOrElse(plan.nodeName)
}
