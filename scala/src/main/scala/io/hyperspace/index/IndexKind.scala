package io.hyperspace.index

import scala.annotation.nowarn

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}
import org.apache.spark.sql.functions.col

import io.hyperspace.HyperspaceException
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.FileSource

/**
 * What a user asks to index, for any kind: `IndexConfig` (covering), `DataSkippingIndexConfig`,
 * or a config class of a kind added through [[IndexKinds]]. The kind turns it into the
 * [[IndexDefinition]] the log records.
 */
trait IndexKindConfig {
  /** The index name. */
  def name: String
  /** The name of the [[IndexKind]] that builds indexes of this config. */
  def kindName: String
}

/** The family of query rewrites an index kind's indexes take part in. */
sealed trait RewriteFamily

object RewriteFamily {
  /** The index data replaces a scan of the source (the filter, join and aggregate rules). */
  case object CoveringScan extends RewriteFamily
  /** The index prunes the file list of a filtered scan of the source (the data skipping rule). */
  case object FileSkipping extends RewriteFamily
  /**
   * The index data replaces a scan of the source under a filter only (the filter rule): the data
   * is not bucketed, so joins and aggregations do not read it.
   */
  case object FilterScan extends RewriteFamily
  /**
   * The index locates the row groups of the source that can hold a filter's rows; the scan reads
   * only those, from the source itself (the split index's seek rule).
   */
  case object RowGroupSeek extends RewriteFamily
  /** No rule reads the index; it exists for its data or statistics. */
  case object NoRewrite extends RewriteFamily
}

/**
 * What `indexes()` shows of an index beyond what every kind has in common (state, size, files,
 * source): the columns it is keyed on and stores, its bucket count, and its kind-specific
 * properties (`additionalStats`).
 */
case class KindSummary(
    indexedColumns: Seq[String],
    includedColumns: Seq[String],
    numBuckets: Int,
    additionalStats: Map[String, String])

object IndexKind {
  /**
   * `rows` of index data without those of the source files with ids `dropIds`, for kinds whose
   * rows carry their source file's id in `fileIdColumn` (how [[IndexKind.dropRows]] applies
   * deletes from the index itself, never reading the source again).
   */
  def withoutSourceFiles(rows: DataFrame, fileIdColumn: String, dropIds: Set[Long]): DataFrame =
    if (dropIds.isEmpty) rows else rows.where(!col(fileIdColumn).isin(dropIds.toSeq: _*))
}

/**
 * One kind of index: everything that differs between kinds. The lifecycle (the log, states,
 * commit protocol, data version directories, vacuum) is shared and never asks for a kind's name;
 * it calls these methods on the kind [[IndexKinds]] finds for an entry's `index.kind`.
 *
 * A kind lives in the log as its [[name]] and the [[IndexDefinition]] its [[define]] returns,
 * whose `properties` hold whatever the kind's config needs beyond the common fields (a kind
 * serializes its config there itself, as JSON or plain strings). To add a kind, implement this
 * trait in a class with a public no-argument constructor and list the class in
 * `META-INF/services/io.hyperspace.index.IndexKind` on the classpath (docs/architecture.md).
 */
trait IndexKind {

  /** The kind string in the log (`IndexDefinition.kind`); unique among the registered kinds. */
  def name: String

  /** The short name plans and `index(name)` show (`kindAbbr`). */
  def abbreviation: String = name

  /** The user config of this kind from its JSON text (how the Python bindings pass configs). */
  def configFromJson(json: String): IndexKindConfig

  /**
   * The definition the log records for `config` over `source`, after checking everything that
   * can be checked before data is written (errors name the index and the column or expression).
   */
  def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition

  /**
   * Writes the index data of `df` (a scan of exactly the source files `files`, whose ids the log
   * records) into `dataPath`: a full build, or the appended files of an incremental refresh.
   * `mode` Append adds to a directory the same operation already wrote into.
   */
  def write(
      df: DataFrame,
      definition: IndexDefinition,
      indexName: String,
      files: Seq[SourceFile],
      dataPath: Path,
      mode: SaveMode): Unit

  /**
   * `files`, just written into `dataPath` by [[write]], [[dropRows]] or [[merge]], with what the
   * kind records of each beside its path and size (`ContentFile.stats`); unchanged by default.
   */
  @nowarn("cat=unused-params") // a kind that records nothing per file has no use for them
  def describeFiles(spark: SparkSession, definition: IndexDefinition, dataPath: Path, files: Seq[ContentFile])
      : Seq[ContentFile] = files

  /** Whether [[dropRows]] can remove the rows of deleted source files without reading the source. */
  def canDropDeletedFiles(definition: IndexDefinition): Boolean

  /** Rewrites `files` of `entry` into `dataPath` without the rows of the source files with ids `dropIds`. */
  def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path, dropIds: Set[Long])
      : Unit

  /**
   * The source files of `entry` (paths) whose content differs from what the build read though
   * their path, size and modification time do not: only a kind that records more of a file than
   * that identity can tell, and a full refresh then rebuilds instead of finding nothing changed.
   */
  @nowarn("cat=unused-params") // a kind that records only the identity has no use for them
  def changedInPlace(spark: SparkSession, entry: LogEntry): Seq[String] = Nil

  /** The groups of `entry`'s data files an optimize may merge, each group into as few files as it can. */
  def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]]

  /** Merges `files` (from one or more of [[mergeGroups]]) of `entry` into `dataPath`. */
  def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit

  /** The source columns the index holds data of (for listings and explanations). */
  def coveredColumns(definition: IndexDefinition): Seq[String]

  /** What `indexes()` shows of an index of this kind. */
  def summary(definition: IndexDefinition): KindSummary

  /** The rewrites this kind's indexes take part in. */
  def rewrites: RewriteFamily

  /**
   * Why an index of this kind does not change a query, when the kind offers no rewrite
   * ([[RewriteFamily.NoRewrite]]); kinds with rewrites are explained by their rules.
   */
  def noRewriteReason: String = s"indexes of kind $name offer no query rewrite"

  /** `config` as this kind's own config class, or a clear error naming the index. */
  protected final def configAs[C <: IndexKindConfig](config: IndexKindConfig)(
      implicit tag: scala.reflect.ClassTag[C]): C =
    config match {
      case c: C => c
      case other =>
        throw new HyperspaceException(
          s"Index '${other.name}': a ${other.getClass.getSimpleName} (kind ${other.kindName}) cannot define an " +
            s"index of kind $name, which takes a ${tag.runtimeClass.getSimpleName}.")
    }
}
