package io.hyperspace.sources

import scala.annotation.nowarn
import scala.util.Try

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}

import io.hyperspace.index.StoredSchemas
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.index.dataskipping.RelationSkippingStats
import io.hyperspace.log.{LogEntry, Signature}

/**
 * A table kept by a table format (Delta Lake; Iceberg next), as one scan reads it: at one version
 * of the table's log. Its files come from that log, never from a directory listing: a table's
 * directory holds files its log removed, and the log may mask rows of a file it keeps.
 */
trait VersionedTable {

  /** The format's name, as the log entry records it (`delta`). */
  def format: String

  /** The table's identity: its root path, fully qualified. */
  def root: String

  /** The version of the table's log the scan reads. */
  def version: Long

  /**
   * The table's name in a catalog, when the scan read it by name (Iceberg): how the index's
   * source is read again (refresh). None when read by path, or by a catalog table Spark knows.
   */
  def name: Option[String] = None

  /** Whether the scan reads a version chosen by the query (time travel) rather than the newest. */
  def isTimeTravel: Boolean

  /**
   * The files of the table at [[version]], from its log, sorted by path; a file whose rows the
   * log masks (a deletion vector) carries the mask's identity in its key.
   */
  def files: Seq[FileKey]

  /**
   * A scan of only the table's files at [[version]] whose paths are in `paths`, their masks
   * applied by the format as its own scans apply them, with fresh attributes: a file scan, or the
   * format's own scan (Iceberg files with delete files) with its table's columns followed by a
   * `_metadata` struct column whose `file_path` names each row's file as a file scan's does.
   */
  def restrictedTo(paths: Set[String]): LogicalPlan

  /** The signature of an index built from this table at [[version]]. */
  def signature: Signature = Signature(s"${format.capitalize}Version", version.toString)

  /**
   * Why no index may stand in for this scan at all, if so: files a scan of them would read
   * otherwise than the format does. A refresh asks after [[filesFromLog]]: a format may answer
   * from what that read of its log found rather than from every file of the table (the cost of
   * the change, not of the table).
   */
  def unservable: Option[String] = None

  /**
   * How the table's columns named `columns` (top-level names) now differ from those of `recorded`
   * (the data schema, as JSON, an index recorded when it was built) such that the index's columns
   * would be other columns, if they do.
   */
  def schemaChange(recorded: String, columns: Set[String]): Option[String] = None

  /**
   * What tells this table from another one created later at the same root (Delta's table id),
   * when the format has it: the log's commits describe the changes of one table only.
   */
  def tableId: Option[String] = None

  /**
   * The table's files at [[version]] (as [[files]] gives them), from its files at the older
   * version `since` (`filesThen`, of the table with id `tableIdThen`) and the commits of the
   * log in between, without listing the table: the cost of the change, not of the table. Left
   * with the reason when the log cannot tell (its commits were cleaned up, the table was created
   * again); the caller then lists the table.
   */
  @nowarn("cat=unused-params") // a format without a readable log has no use for them
  def filesFromLog(since: Long, tableIdThen: Option[String], filesThen: Seq[FileKey]): Either[String, LogChanges] =
    Left(s"the $format provider does not read the changes from its log")

  /**
   * Whether [[restrictedTo]] reads files a commit added through what that commit says of them
   * (Delta: partition values and deletion vector descriptors, which the index's log entry does not
   * keep), which a read of the log that saw those commits ([[filesFromLog]]) has at hand and
   * anything else has to find in every file of the table. A refresh after a quick refresh then
   * reads the log from the version of the files the index holds, not from the newer version the
   * quick refresh recorded.
   */
  def scansAddedFilesFromLog: Boolean = false

  /**
   * The format's own file pruning for `filters` (deterministic conjuncts over the scan's
   * output): partition values and the statistics its log keeps per file. None when the format
   * does not report it; data skipping indexes then leave the table's scans alone.
   */
  @nowarn("cat=unused-params") // a format that does not report its pruning has no use for them
  def pruning(filters: Seq[Expression]): Option[FormatScan] = None

  /**
   * Why a scan of fewer of the table's files, read as plain files, would not read what the
   * format's scan reads, if so (Iceberg delete files): data skipping indexes then leave the scan
   * alone, although covering indexes may serve it (they read such files through the format).
   */
  def unprunable: Option[String] = None

  /** Top-level columns whose per-file min/max the format's log keeps (and prunes files by). */
  def minMaxColumns: Set[String] = Set.empty
}

/**
 * The files of a table at a version, found from an older version's files and the commits in
 * between ([[VersionedTable.filesFromLog]]).
 *
 * @param files   the table's files at the newer version
 * @param commits the number of commits read
 * @param from    the first version read
 * @param to      the last version read
 */
final case class LogChanges(files: Seq[FileKey], commits: Int, from: Long, to: Long)

/** A table format's own file pruning of one scan ([[VersionedTable.pruning]]). */
trait FormatScan {

  /** The files (paths as [[VersionedTable.files]] spells them) the format's own pruning keeps. */
  def kept: Set[String]

  /**
   * The scan reading the files the format keeps except `skipped`, row masks applied as the
   * format applies them; its file index is a
   * [[io.hyperspace.index.dataskipping.SkippedFilesIndex]] reporting `entries` and `stats`, made
   * by join pruning at run time when `forJoin`.
   */
  def without(skipped: Set[String], entries: Seq[LogEntry], stats: RelationSkippingStats, forJoin: Boolean)
      : LogicalRelation
}

/** Recognises scans of one table format's tables. */
trait TableFormatProvider {

  /** The format's name (`delta`). */
  def format: String

  /**
   * The table `relation` scans, when it is a plain scan of a whole table of this format (not a
   * file selection a command of the format reads while rewriting the table).
   */
  def tableOf(relation: LogicalRelation, fs: HadoopFsRelation): Option[VersionedTable]

  /** A scan of the newest version of the table at `root`. */
  def load(spark: SparkSession, root: String): DataFrame

  /**
   * For a format whose scans are DataSource V2 scans (Iceberg): the file scan that reads exactly
   * what the V2 scan `plan` reads, with its output attributes, over a [[TableScanListing]]; None
   * when `plan` is no such scan.
   */
  def asFileScan(plan: LogicalPlan): Option[LogicalRelation] = None

  /**
   * For join pruning at run time: the file index of the whole table, at the version `fs` reads,
   * that [[tableOf]] recognises, when `fs`'s file index is this format's table narrowed while the
   * query was planned (by data skipping indexes, or by the format's own optimizer rules for
   * `filters`, the conjuncts the plan applies above the scan); None when it is no such index, or
   * the narrowing may hold more than those filters.
   */
  @nowarn("cat=unused-params") // a format without prepared scans has no use for them
  def wholeTable(fs: HadoopFsRelation, filters: Seq[Expression]): Option[FileIndex] = None
}

/**
 * The table format providers this JVM can use. A format's library is optional at run time
 * (delta-spark is a provided dependency): its provider is instantiated by name, and only when
 * the format's own classes are on the class path, so no class of an absent library is ever
 * loaded and this jar works without it.
 */
object TableFormats {

  // (a class of the format's library, the provider class that uses that library)
  // Each provider is compiled only for the Spark lines with a release of its library (build.sbt:
  // scala-delta, scala-iceberg): absent from the others' jars, where the library is never found.
  private val known = Seq(
    "org.apache.spark.sql.delta.files.TahoeLogFileIndex" -> "io.hyperspace.sources.delta.DeltaProvider",
    "org.apache.iceberg.spark.source.SparkTable" -> "io.hyperspace.sources.iceberg.IcebergProvider")

  // Looked up through the loader of this jar, which is the one that will link the provider to the
  // library: with `spark.jars` / `spark.jars.packages` both jars are in Spark's own class loader,
  // which is not the context class loader of every thread that plans a query (py4j's are not).
  private lazy val providers: Seq[TableFormatProvider] = known.flatMap { case (library, provider) =>
    val loader = getClass.getClassLoader
    if (Try(Class.forName(library, false, loader)).isFailure) None
    else Try(Class.forName(provider, true, loader)).toOption
      .map(_.getDeclaredConstructor().newInstance().asInstanceOf[TableFormatProvider])
  }

  /** The table `relation` scans, when one of the available formats recognises it. */
  def tableOf(relation: LogicalRelation, fs: HadoopFsRelation): Option[VersionedTable] =
    providers.iterator.flatMap(_.tableOf(relation, fs)).nextOption()

  /** The file scan standing in for the V2 scan `plan` of a table-format table, when there is one. */
  def asFileScan(plan: LogicalPlan): Option[LogicalRelation] =
    providers.iterator.flatMap(_.asFileScan(plan)).nextOption()

  /** The whole table a format's narrowed scan `fs` reads, for join pruning ([[TableFormatProvider.wholeTable]]). */
  def wholeTable(fs: HadoopFsRelation, filters: Seq[Expression]): Option[FileIndex] =
    providers.iterator.flatMap(_.wholeTable(fs, filters)).nextOption()

  /** The provider of `format`, when that format's library is on the class path. */
  def provider(format: String): Option[TableFormatProvider] = providers.find(_.format.equalsIgnoreCase(format))

  /** Whether `fs` reads its files through a table format's file format (then only a provider knows its rows). */
  def readsThroughTableFormat(fs: HadoopFsRelation): Boolean =
    fs.fileFormat.getClass.getName.startsWith("org.apache.spark.sql.delta.")

  /**
   * The top-level source columns whose meaning `entry`'s index depends on, for
   * [[VersionedTable.schemaChange]]: a covering index's indexed and included columns, else every
   * column of its source.
   */
  def columnsHeld(entry: LogEntry): Set[String] =
    if (entry.index.kind == CoveringIndex.Kind) {
      val (indexed, included) = CoveringIndex.columnsOf(entry.index)
      (indexed ++ included).map(_.path.head).toSet
    } else scala.util.Try(StoredSchemas.parse(entry.source.schema).fieldNames.toSet)
      .getOrElse(Set.empty)

  /** Whether `format` names a table format (whether or not its library is available). */
  def isTableFormat(format: String): Boolean = Set("delta", "iceberg").contains(format.toLowerCase)
}
