package io.hyperspace.rules

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.Resolver
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.StructType

import io.hyperspace.index.{BoundedCache, CatalogRoot, CatalogVersion, IndexCatalog, IndexDataFiles, IndexKinds, RewriteFamily, StoredSchemas}
import io.hyperspace.index.covering.IndexScan
import io.hyperspace.log.{ContentFile, IndexLogManager, LogEntry, States}
import io.hyperspace.sources.{FileKey, FileSource, SelectedFilesIndex, SourceChanges, SourceSubset, TableFormats}

/**
 * The ACTIVE indexes of a session (covering and data skipping), and which covering indexes can
 * serve a relation ([[DataSkippingRule]] picks data skipping indexes itself).
 */
object CandidateIndexes extends Logging {

  // An entry is immutable, but its id is not unique for good: an index deleted, vacuumed and
  // created again under the same name starts again at id 0, and may write an entry file of the
  // same length in the same second (stores with coarse file times). So a parsed entry is cached
  // under a digest of its stored text, which holds the incarnation (a random id every create
  // draws, [[LogEntry.identity]]): reading the small file is cheap, parsing a large source file
  // list is not. Caches of what derives from an entry are keyed by its identity (root,
  // incarnation, id). The list of active entries per system path is reused while the path's
  // catalog version token is unchanged (every committed operation, in any process, replaces it).
  // Every cache is bounded by entries and, where values grow with the source, by the number of
  // file records they hold (about 200 bytes each).
  private val MaxCachedFileRecords = 2000000L
  private val entryCache = new BoundedCache[EntryTextKey, LogEntry](256, MaxCachedFileRecords, fileRecords)
  private val activeCache = new BoundedCache[String, (String, Seq[LogEntry])](16)
  private val indexedFilesCache =
    new BoundedCache[(String, String, Long), Set[FileKey]](256, MaxCachedFileRecords, _.size.toLong)

  /** Entry `id` of the index at `root`, as stored (its text's SHA-256). */
  private final case class EntryTextKey(root: String, id: Long, digest: String)

  private object EntryTextKey {
    def of(root: String, id: Long, text: String): EntryTextKey = {
      val sha = java.security.MessageDigest.getInstance("SHA-256")
        .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8))
      EntryTextKey(root, id, sha.map("%02x".format(_)).mkString)
    }
  }

  private def fileRecords(e: LogEntry): Long =
    1L + e.source.files.size + e.source.appendedFiles.size + e.source.deletedFiles.size + e.content.files.size

  /** The ACTIVE indexes under the session's system path, of kinds this version can use (unreadable ones skipped). */
  def active(spark: SparkSession): Seq[LogEntry] = active(new IndexCatalog(spark))

  /** [[active]] of `catalog`'s session, with its Hadoop configuration. */
  def active(catalog: IndexCatalog): Seq[LogEntry] = {
    val conf = catalog.hadoopConf
    val root = catalog.systemPath
    activeAt(root.toString, CatalogVersion.read(root, conf), loadActive(catalog, conf))
  }

  /**
   * [[active]] as the optimizer rule asks for it, once per fixed-point pass of every query:
   * `root` is the session's system path resolved earlier ([[CatalogRoot]]) and `token` its
   * current token, which the pass read, so a pass whose token is unchanged reads one small file
   * and copies no Hadoop configuration.
   */
  def active(spark: SparkSession, root: CatalogRoot, token: Option[String]): Seq[LogEntry] =
    activeAt(root.path.toString, token, loadActive(new IndexCatalog(spark), root.conf))

  private def activeAt(root: String, token: Option[String], load: => Seq[LogEntry]): Seq[LogEntry] =
    token match {
      case None => Nil // no operation has ever run here: there are no indexes
      case Some(version) =>
        activeCache.get(root).filter(_._1 == version).map(_._2).getOrElse {
          val loaded = load
          activeCache.put(root, (version, loaded))
          loaded
        }
    }

  /**
   * Whether any of `indexes` may serve a scan of `plan`: one whose source may overlap a scan's
   * directories by path ([[SourceSubset.mayOverlap]], no file system call). A rewrite only ever
   * replaces or prunes a scan of an index's own source, so when this is false no rewrite applies
   * and the rule need not try them.
   */
  def mayServeAny(indexes: Seq[LogEntry], plan: LogicalPlan): Boolean = indexes.nonEmpty && {
    val scans = plan.collect { case r: LogicalRelation => sourceScan(r) }.flatten
      .map(fs => SourceSubset.ScanPaths(fs.location.rootPaths))
    indexes.exists(SourceSubset.mayOverlap(_, scans))
  }

  /**
   * Drops what is cached of `entry`'s index: its data turned out to be missing, so the cached
   * entry may be one of an earlier incarnation. The next query reads the log again.
   */
  def forget(entry: LogEntry): Unit = {
    // By directory name: the log's path and the entry's recorded root may be spelled differently.
    val dirName = new Path(entry.content.root).getName
    entryCache.removeIf(k => new Path(k.root).getName == dirName)
    activeCache.clear()
  }

  private def loadActive(catalog: IndexCatalog, conf: org.apache.hadoop.conf.Configuration): Seq[LogEntry] = {
    catalog.directoryNames.flatMap { dir =>
      try {
        val log = new IndexLogManager(new Path(catalog.systemPath, dir), conf)
        log.latestStableId.flatMap { id =>
          log.entryText(id).flatMap { text =>
            val key = EntryTextKey.of(log.indexPath.toString, id, text)
            entryCache.get(key).orElse {
              val loaded = Some(log.parseEntry(id, text)).filter(_.isStable)
              loaded.foreach(e => entryCache.put(key, e))
              loaded
            }
          }.orElse(log.latestStable)
        }.filter(e => e.state == States.ACTIVE && e.enabled && ofKnownKind(e))
      } catch {
        case NonFatal(e) =>
          logWarning(s"Hyperspace ignores index '$dir' for this query: ${e.getMessage}")
          None
      }
    }
  }

  // An index of a kind this JVM does not know is listed by indexes() with the reason; queries do without it.
  private def ofKnownKind(entry: LogEntry): Boolean = {
    val known = IndexKinds.find(entry.index.kind).isDefined
    if (!known) {
      val why = IndexKinds.unknown(entry.index.kind, entry.name).getMessage
      logWarning(s"Hyperspace ignores index '${entry.name}' for queries: $why")
    }
    known
  }

  /**
   * The file scan under a relation node, unless it already reads an index, is the appended
   * files' side of a hybrid scan, or lists its files otherwise than plainly ([[FileListings]])
   * without being a scan of a whole table-format table ([[TableFormats]]).
   */
  def sourceScan(relation: LogicalRelation): Option[HadoopFsRelation] = relation.relation match {
    case fs: HadoopFsRelation
        if !IndexScan.isIndexScan(relation) && !relation.isStreaming &&
          !fs.location.isInstanceOf[SelectedFilesIndex] &&
          (FileListings.isPlain(fs.location) || TableFormats.tableOf(relation, fs).isDefined) => Some(fs)
    case _ => None
  }

  /** The files an entry was built from; entries are immutable. */
  def indexedFiles(entry: LogEntry): Set[FileKey] =
    if (entry.isHypothetical) entry.source.files.map(_.key).toSet
    else indexedFilesCache.getOrElseUpdate(entry.identity, entry.source.files.map(_.key).toSet)

  /**
   * Whether `source` reads its files as `entry`'s source was read: same format and options,
   * except those that only locate files (`basePath`, glob patterns; [[FileSource.dataOptions]]).
   */
  def sameReader(entry: LogEntry, source: FileSource): Boolean =
    source.format == entry.source.format &&
      FileSource.dataOptions(source.readOptions) == FileSource.dataOptions(entry.source.options) &&
      // A table is its root: an index of another table shares no file with it, whatever the
      // hybrid scan ratios would allow.
      source.versioned.forall(t => entry.source.rootPaths == Seq(t.root))

  /**
   * Whether `entry` was built from exactly the data `source` reads: same format and read
   * options, and the same files (path, size and modification time). `listed` is the source's
   * file set, listed once by the caller for all candidates.
   */
  def sourceMatches(entry: LogEntry, source: FileSource, listed: => Set[FileKey]): Boolean =
    sameReader(entry, source) && listed == indexedFiles(entry)

  /**
   * How `entry` can serve a scan whose files are `listed` (same reader assumed): Right with the
   * changes hybrid scan must make up for (none when the index is up to date), or Left with the
   * reason it cannot. An index whose quick refresh recorded exactly the changes seen now uses the
   * recorded lists, whatever the hybrid scan settings; otherwise a stale index needs hybrid scan
   * on, lineage when files were deleted, and changes within the configured byte ratios.
   */
  def changesToServe(
      spark: SparkSession,
      entry: LogEntry,
      listed: Set[FileKey]): Either[Reason, SourceChanges] = {
    val indexed = indexedFiles(entry)
    if (listed == indexed) Right(SourceChanges(Nil, Nil))
    else if (entry.source.hasPendingChanges && listed == entry.source.currentFiles.map(_.key).toSet) {
      Right(SourceChanges(entry.source.appendedFiles.map(_.key), entry.source.deletedFiles))
    } else {
      val changes = SourceChanges.between(entry.source.files, listed.toSeq)
      hybridScanAllows(spark, entry, changes, listed.iterator.map(_.size).sum, entry.source.sizeInBytes, "")
    }
  }

  // The session's settings are read only for an index that is stale, as the policy's reasons say.
  private def hybridScanAllows(spark: SparkSession, entry: LogEntry, changes: SourceChanges, listedBytes: Long,
      indexedBytes: Long, where: String): Either[Reason, SourceChanges] =
    if (changes.isEmpty) Right(changes)
    else HybridScanPolicy.of(spark).allows(entry, changes, listedBytes, indexedBytes, where)

  /**
   * How `entry` can serve a scan of `source` whose files are `listed` (same reader assumed):
   * Right with the candidate, or Left with the reason it cannot. A scan of some directories
   * inside the index's source ([[SourceSubset]]) is compared with the index's files under those
   * directories, and the index's rows are scoped to them; any other scan with all the index's
   * files ([[changesToServe]]).
   */
  def serve(
      spark: SparkSession,
      entry: LogEntry,
      source: FileSource,
      listed: Set[FileKey]): Either[Reason, IndexCandidate] =
    SourceSubset.directoriesWithin(entry, source) match {
      case None => changesToServe(spark, entry, listed).map(IndexCandidate(entry, _))
      case Some(dirs) =>
        def reading(why: String) = Reason.PartOfSource(dirs.map(_.toString), entry.source.rootPaths, why)
        val scoped = SourceSubset.filesUnder(entry, dirs)
        if (scoped.isEmpty) Left(reading(", where the index covers no file"))
        else {
          val changes = SourceChanges.between(scoped, listed.toSeq)
          for {
            allowed <- hybridScanAllows(spark, entry, changes, listed.iterator.map(_.size).sum,
              scoped.map(_.size).sum, s" under ${dirs.mkString(", ")}").left.map(why => reading(s"; ${why.describe}"))
            deleted = allowed.deleted.map(_.id).toSet
            scope <- SourceSubset.scope(entry, source, scoped.filterNot(f => deleted.contains(f.id)))
              .left.map(why => reading(s"; $why"))
          } yield IndexCandidate(entry, allowed, Some(scope))
        }
    }

  /**
   * Why `entry`'s data cannot be read, if it cannot: a data file it lists is missing or has
   * another size (removed or overwritten by hand, by a storage lifecycle rule, or vacuumed by
   * another process). One listing per data version directory the entry uses, so callers check
   * an index once per query that would read it, not per optimizer pass or per file. `reads`:
   * the data files the query reads, when its scan chose them at planning (a Z-order range); only
   * those are checked, each by itself when they are a few
   * ([[IndexDataFiles.MaxFilesCheckedOneByOne]]).
   */
  def missingData(spark: SparkSession, entry: LogEntry,
      conf: Option[org.apache.hadoop.conf.Configuration] = None,
      reads: Option[Seq[ContentFile]] = None): Option[String] =
    if (entry.isHypothetical) None
    else {
      val missing = reads match {
        case Some(files) if files.size <= IndexDataFiles.MaxFilesCheckedOneByOne =>
          IndexDataFiles.missingAmong(spark, entry, files, conf)
        case Some(files) =>
          val read = files.map(_.path).toSet
          IndexDataFiles.missing(spark, entry, conf).filter(f => read.contains(f.path))
        case None => IndexDataFiles.missing(spark, entry, conf)
      }
      missing match {
        case Seq() => None
        case _ =>
          Some(s"${missing.size} of its ${entry.content.files.size} data file(s) are missing or were " +
            s"changed (e.g. ${entry.content.pathOf(missing.head)}); refresh it in full mode or recreate it")
      }
    }

  /** The index columns (indexed, then included) with their types. */
  private def indexSchema(entry: LogEntry): StructType =
    StoredSchemas.parse(entry.index.schema)

  /** Whether every attribute in `needed` is an index column of the same type. */
  def coversColumns(entry: LogEntry, needed: Seq[Attribute], resolver: Resolver): Boolean =
    uncovered(entry, needed, resolver).isEmpty

  /** The attributes of `needed` that are no index column of the same type. */
  def uncovered(entry: LogEntry, needed: Seq[Attribute], resolver: Resolver): Seq[Attribute] = {
    val fields = indexSchema(entry).fields
    needed.filterNot(a => fields.exists(f => resolver(f.name, a.name) && f.dataType == a.dataType))
  }

  /** Whether `entry`'s indexed columns are exactly `keys` (as a set): it is bucketed on them. */
  def keyedOn(entry: LogEntry, keys: Seq[Attribute], resolver: Resolver): Boolean =
    entry.index.indexedColumns.size == keys.map(_.exprId).distinct.size &&
      entry.index.indexedColumns.forall(c => keys.exists(k => resolver(k.name, c)))

  /**
   * The usable indexes for `relation` among those whose kind offers one of `families` (by
   * default the covering indexes that joins and aggregations can read): ACTIVE, covering `needed`, built from its data
   * read the same way, and either up to date or servable with hybrid scan. A relation whose
   * file list data skipping pruned is compared by its full listing. Why each index of the
   * relation's data is turned down goes to `log`.
   */
  def forRelation(
      spark: SparkSession,
      indexes: Seq[LogEntry],
      relation: LogicalRelation,
      needed: Seq[Attribute],
      log: DecisionLog = DecisionLog.Discard,
      families: Set[RewriteFamily] = Set(RewriteFamily.CoveringScan)): Seq[IndexCandidate] =
    sourceScan(relation) match {
      case None => Nil
      case Some(fs) =>
        val resolver = spark.sessionState.conf.resolver
        val source = FileSource(relation, fs)
        lazy val listed = source.listedFiles.toSet
        // Only indexes of this relation's data have a reason to give about it.
        def reject(e: LogEntry, reason: => Reason): Unit =
          if (log.recording && SourceSubset.overlaps(e, source)) log.reject(e, reason)
        def candidate(e: LogEntry): Option[IndexCandidate] =
          if (!coversColumns(e, needed, resolver)) {
            reject(e, Reason.ColumnsNotCovered(uncovered(e, needed, resolver).map(_.name)))
            None
          } else if (!sameReader(e, source)) {
            reject(e, Reason.OtherReader(source.format, source.readOptions, e.source.format, e.source.options))
            None
          } else serve(spark, e, source, listed) match {
            case Left(why) => reject(e, why); None
            case Right(c) => Some(c)
          }
        // Whether a table's rows are what its files give is asked only when an index is of that table.
        lazy val unservable = source.versioned.flatMap(_.unservable)
        // A time travel scan of a version the table erased is left to the format, which fails it.
        lazy val erased = TableVersions.erasure(spark, source.versioned)
        def ofThisTable(e: LogEntry) = source.versioned.exists(t => e.source.rootPaths == Seq(t.root))
        indexes.filter(e => families.exists(IndexKinds.offers(e, _))).flatMap { latest =>
          if (ofThisTable(latest) && unservable.isDefined) {
            reject(latest, Reason.TableNotServable(unservable.get))
            None
          } else if (erased.isDefined) {
            reject(latest, erased.get)
            None
          } else {
            // A scan of an older table version is served by the index version built from it.
            TableVersions.entryFor(spark, latest, source.versioned) match {
              case Left(why) => reject(latest, why); None
              case Right(e) =>
                // An index whose columns are other columns of the table now (Iceberg field ids).
                source.versioned.filter(_ => ofThisTable(e))
                  .flatMap(_.schemaChange(e.source.schema, TableFormats.columnsHeld(e))) match {
                  case Some(change) => reject(e, Reason.TableSchemaChanged(change)); None
                  case None => candidate(e)
                }
            }
          }
        }
    }
}
