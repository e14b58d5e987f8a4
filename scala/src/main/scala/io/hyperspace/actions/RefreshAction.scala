package io.hyperspace.actions

import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.HyperspaceException
import io.hyperspace.actions.MaintenanceModes.{Full, Incremental, Quick}
import io.hyperspace.index.IndexDataFiles
import io.hyperspace.log.{IndexLogManager, LogEntry, SourceFile, States}
import io.hyperspace.sources.{FileKey, FileSource, FilesFound, SourceChanges, TableFormats}

/**
 * Brings an ACTIVE index up to date with its source (paper Table 2), with the index's own
 * stored settings (columns, buckets, lineage, format and read options):
 *
 *  - `full`: rebuilds the index from the source as listed now, into a new data version;
 *  - `incremental`: indexes only the appended files (and the new halves of rewritten ones) into
 *    a new data version beside the untouched files; rows of deleted files are removed through
 *    the lineage column (a data skipping index: by the sketch table's file id), from the index
 *    data, without reading the source again;
 *  - `quick`: records the appended and deleted files in the log only; queries make up for them
 *    with hybrid scan.
 *
 * A source that matches the index already is a no-op: nothing is written (see [[changes]]). In
 * `full` mode a source file its kind finds rewritten in place under the same identity
 * ([[io.hyperspace.index.IndexKind.changedInPlace]]) is a change.
 */
class RefreshAction(
    spark: SparkSession,
    indexLog: IndexLogManager,
    indexName: String,
    val mode: String) extends Action(spark, indexLog, indexName) {

  override def operation: String = Operations.REFRESH
  override protected def transientState: String = States.REFRESHING
  override protected def finalState: String = States.ACTIVE

  // A refresh that waited for another one looks at the source again rather than assuming.
  override protected def alreadyDone(base: Option[LogEntry]): Boolean = false

  // Fixed in validate, while no other operation can change the index: the source as listed then
  // is exactly what the committed entry will describe.
  private var source: FileSource = _
  private var listing: Seq[FileKey] = Nil
  private var found: SourceChanges = SourceChanges(Nil, Nil)
  private var schemaChange: Option[String] = None
  private var foundBy: FilesFound = FilesFound(fromLog = false, "")

  /** How the source differed from the index data when the run started. */
  def changes: SourceChanges = found

  /** How the source's files were found: from a table format's log commits, or listed (and why). */
  def filesFound: FilesFound = foundBy

  override protected def validate(base: Option[LogEntry]): Unit = {
    val entry = Action.requireActive(indexName, operation, base)
    source = FileSource.load(spark, entry.source, indexName)
    // A table format's files come from the commits since the index's version, when the log has them.
    val (files, how) = source.currentFilesSince(entry)
    listing = files
    foundBy = how
    source.requireServable(indexName)
    // An index over no data would answer every query with nothing: almost always a source moved
    // or emptied by mistake, so say so rather than commit it. An index created over an empty
    // source is no such loss: its refresh finds nothing changed (or the first files).
    if (listing.isEmpty && entry.source.currentFiles.nonEmpty) {
      throw new HyperspaceException(
        s"Cannot refresh index '$indexName': its source (${entry.source.rootPaths.mkString(", ")}) " +
          s"has no files left. Delete the index (deleteIndex('$indexName')) if the data is gone for good.")
    }
    found = SourceChanges.between(entry.source.files, listing)
    // A table whose columns are other columns now (Iceberg field ids) gives rows an index built
    // before cannot be merged with: only a full rebuild indexes the table as it is.
    schemaChange = source.versioned.flatMap(_.schemaChange(entry.source.schema, TableFormats.columnsHeld(entry)))
    schemaChange.filter(_ => mode != Full).foreach { change =>
      throw new HyperspaceException(
        s"Cannot refresh index '$indexName' in $mode mode: the table's schema changed since the index was " +
          s"built ($change). Run a full refresh (refreshIndex('$indexName', 'full')).")
    }
    if (mode != Full && found.deleted.nonEmpty && !IndexData.canDropDeletedFiles(entry.index, indexName)) {
      throw new HyperspaceException(
        s"Cannot refresh index '$indexName' in $mode mode: ${found.deleted.size} of its source " +
          "file(s) were deleted or rewritten, and without lineage the index cannot tell which " +
          s"rows came from them. Run a full refresh (refreshIndex('$indexName', 'full')), or " +
          "recreate the index with lineage (IndexConfig lineage=true, or " +
          "spark.hyperspace.index.lineage.enabled=true).")
    }
  }

  override protected def upToDate(base: Option[LogEntry]): Boolean = {
    val recorded = base.get.source
    if (mode == Quick) recorded.currentFiles.map(_.key).toSet == listing.toSet
    else found.isEmpty && !recorded.hasPendingChanges && schemaChange.isEmpty &&
    (mode != Full || IndexData.changedInPlace(spark, base.get).isEmpty)
  }

  override protected def beginEntry(base: Option[LogEntry], id: Long): LogEntry = {
    val entry = base.get
    val version = if (mode == Quick) entry.content.dataVersion else DataVersions.next(spark, indexLog)
    entry.copy(id = id, content = entry.content.copy(dataVersion = version))
  }

  override protected def op(begin: LogEntry): LogEntry = {
    val definition = begin.index
    val dataPath = indexLog.versionPath(begin.content.dataVersion)
    val indexed = begin.source.files
    lazy val nextId = (indexed.map(_.id) :+ -1L).max + 1
    val refreshed = mode match {
      case Full =>
        val files = SourceChanges(listing, Nil).appendedAsSourceFiles(0L)
        step("writing index data")(IndexData.write(scanOf(files), definition, indexName, files, dataPath))
        begin.copy(
          content = begin.content.copy(files = IndexData.listDataFiles(spark, definition, indexName, dataPath)),
          source = begin.source.copy(files = files, appendedFiles = Nil, deletedFiles = Nil,
            // A table's schema is the one read now (a file source keeps the schema it was created with).
            schema = if (source.versioned.isDefined) source.fsRelation.dataSchema.json else begin.source.schema))

      case Incremental =>
        val appended = found.appendedAsSourceFiles(nextId)
        val deletedIds = found.deleted.map(_.id).toSet
        if (deletedIds.nonEmpty) {
          step("dropping rows of deleted source files") {
            IndexData.dropRows(spark, begin, begin.content.files, dataPath, deletedIds)
          }
        }
        if (appended.nonEmpty) {
          step("indexing appended source files") {
            IndexData.write(scanOf(appended), definition, indexName, appended, dataPath,
              if (deletedIds.nonEmpty) SaveMode.Append else SaveMode.ErrorIfExists)
          }
        }
        val untouched = if (deletedIds.isEmpty) begin.content.files else Nil
        begin.copy(
          content = begin.content.copy(files = untouched ++ IndexData.listDataFiles(spark, definition, indexName,
            dataPath)),
          source = begin.source.copy(
            files = indexed.filterNot(f => deletedIds.contains(f.id)) ++ appended,
            appendedFiles = Nil, deletedFiles = Nil))

      case Quick =>
        begin.copy(source = begin.source.copy(
          appendedFiles = found.appendedAsSourceFiles(nextId), deletedFiles = found.deleted))
    }
    // Incremental refresh keeps files of earlier versions it did not write: if any of them was
    // removed behind the log's back, committing would list data that is not there.
    val missing = if (mode == Quick) Nil else IndexDataFiles.missing(spark, refreshed)
    if (missing.nonEmpty) {
      throw new HyperspaceException(
        s"Cannot refresh index '$indexName' in $mode mode: ${missing.size} of the index data files " +
          s"it would keep are missing or were changed (e.g. ${refreshed.content.pathOf(missing.head)}). " +
          s"Run a full refresh (refreshIndex('$indexName', 'full')) to rebuild the index from its source.")
    }
    // A quick refresh records a newer table version than that of the files the index data holds;
    // the entry keeps the latter, from which the next refresh can read the log (FileSource).
    val indexedVersion = mode match {
      case Quick if source.versioned.isDefined =>
        FileSource.indexedVersion(begin).map(v => FileSource.IndexedVersionKey -> v.toString)
      case _ => None
    }
    refreshed.copy(signature = source.signature(refreshed.source.currentFiles),
      extra = refreshed.extra - FileSource.IndexedVersionKey ++ source.entryExtra ++ indexedVersion)
  }

  override protected def cleanup(begin: LogEntry): Unit =
    if (mode != Quick) DataVersions.delete(spark, indexLog.versionPath(begin.content.dataVersion))

  /** A scan of exactly `files` of the source, partition values and read options kept. */
  private def scanOf(files: Seq[SourceFile]) =
    SparkInternals.ofRows(spark, source.restrictedTo(files.map(_.path).toSet))
}
