package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.IndexKinds
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}

/**
 * The actions' calls into an index's kind ([[io.hyperspace.index.IndexKind]]): how data is
 * written, rewritten without the rows of deleted source files, and compacted. The commit
 * protocol, states and log are shared; an index of a kind this JVM does not know fails every
 * call with an error naming the index, its kind and the kinds registered.
 */
private[actions] object IndexData {

  /** Writes the index data of `df` (a scan of exactly the source files `files`) into `dataPath`. */
  def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode = SaveMode.ErrorIfExists): Unit =
    IndexKinds.of(definition, indexName).write(df, definition, indexName, files, dataPath, mode)

  /** Whether rows of deleted source files can be removed from the index data without reading the source. */
  def canDropDeletedFiles(definition: IndexDefinition, indexName: String): Boolean =
    IndexKinds.of(definition, indexName).canDropDeletedFiles(definition)

  /** Rewrites `files` of `entry` into `dataPath` without the rows of source files `dropIds`. */
  def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path, dropIds: Set[Long])
      : Unit = IndexKinds.of(entry).dropRows(spark, entry, files, dataPath, dropIds)

  /** The source files of `entry` its kind finds rewritten in place since the build. */
  def changedInPlace(spark: SparkSession, entry: LogEntry): Seq[String] =
    IndexKinds.of(entry).changedInPlace(spark, entry)

  /**
   * The index files an optimize in `quick` (`quickOnly`) or full mode merges: of each group the
   * kind lets merge, the small files (quick) or all. Groups of fewer than two files are left alone.
   */
  def filesToMerge(spark: SparkSession, entry: LogEntry, quickOnly: Boolean): Seq[ContentFile] = {
    val threshold = HyperspaceConf.optimizeFileSizeThreshold(spark)
    IndexKinds.of(entry).mergeGroups(entry).flatMap { files =>
      val candidates = if (quickOnly) files.filter(_.size < threshold) else files
      if (candidates.size >= 2) candidates else Nil
    }.sortBy(_.path)
  }

  /** Merges `files` of `entry` into `dataPath`, as its kind lays them out. */
  def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    IndexKinds.of(entry).merge(spark, entry, files, dataPath)

  /**
   * The data files of a written version directory (relative to the index root), whatever the
   * kind: every file but hidden ones (`_SUCCESS`, `.crc`), as the kind of `definition` (of
   * index `indexName`) describes them for the log.
   */
  def listDataFiles(spark: SparkSession, definition: IndexDefinition, indexName: String, dataPath: Path)
      : Seq[ContentFile] = {
    val fs = dataPath.getFileSystem(spark.sessionState.newHadoopConf())
    val files = if (!fs.exists(dataPath)) Nil
    else fs.listStatus(dataPath).toSeq
      .filter(s => s.isFile && !s.getPath.getName.startsWith("_") && !s.getPath.getName.startsWith("."))
      .map(s => ContentFile(s"${dataPath.getName}/${s.getPath.getName}", s.getLen, s.getModificationTime))
      .sortBy(_.path)
    if (files.isEmpty) files
    else IndexKinds.of(definition, indexName).describeFiles(spark, definition, dataPath, files)
  }
}
