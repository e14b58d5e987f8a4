package io.hyperspace.actions

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.covering.CoveringIndex
import io.hyperspace.index.dataskipping.{DataSkippingIndex, DataSkippingIndexData}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}

/**
 * What differs between index kinds in the actions: how data is written, rewritten without the
 * rows of deleted source files, and compacted. The commit protocol, states and log are shared.
 */
private[actions] object IndexData {

  /** The index kinds this version builds and maintains. */
  val knownKinds: Set[String] = Set(CoveringIndex.Kind, DataSkippingIndex.Kind)

  /** Fails unless `definition` is of a kind in [[knownKinds]]. */
  def requireKnownKind(definition: IndexDefinition, indexName: String, operation: String): Unit =
    if (!knownKinds.contains(definition.kind)) {
      throw new HyperspaceException(
        s"Cannot ${operation.toLowerCase} index '$indexName': indexes of kind ${definition.kind} are not " +
          "supported by this Hyperspace version.")
    }

  private def isSkipping(definition: IndexDefinition) = definition.kind == DataSkippingIndex.Kind

  /** Writes the index data of `df` (a scan of exactly the source files `files`) into `dataPath`. */
  def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode = SaveMode.ErrorIfExists): Unit =
    if (isSkipping(definition)) DataSkippingIndexData.write(df, definition, indexName, files, dataPath, mode)
    else CoveringIndex.write(df, definition, files, dataPath, mode)

  /**
   * Whether rows of deleted source files can be removed from the index data without reading
   * the source: covering indexes need lineage; a sketch table is keyed by file id.
   */
  def canDropDeletedFiles(definition: IndexDefinition): Boolean =
    isSkipping(definition) || definition.lineage

  /** Rewrites `files` of `entry` into `dataPath` without the rows of source files `dropIds`. */
  def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path, dropIds: Set[Long])
      : Unit =
    if (isSkipping(entry.index)) DataSkippingIndexData.rewrite(spark, entry, files, dataPath, dropIds)
    else CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds, oneFilePerBucket = false)

  /**
   * The index files an optimize in `quick` (`quickOnly`) or full mode merges: per bucket for a
   * covering index, all of them into one file for a sketch table. Groups of fewer than two
   * files are left alone.
   */
  def filesToMerge(spark: SparkSession, entry: LogEntry, quickOnly: Boolean): Seq[ContentFile] = {
    val threshold = HyperspaceConf.optimizeFileSizeThreshold(spark)
    val groups: Seq[Seq[ContentFile]] =
      if (isSkipping(entry.index)) Seq(entry.content.files)
      else entry.content.files.groupBy(CoveringIndex.bucketOf).toSeq.collect { case (Some(_), fs) => fs }
    groups.flatMap { files =>
      val candidates = if (quickOnly) files.filter(_.size < threshold) else files
      if (candidates.size >= 2) candidates else Nil
    }.sortBy(_.path)
  }

  /** Merges `files` of `entry` into `dataPath`: one file per bucket, or one sketch file. */
  def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    if (isSkipping(entry.index)) DataSkippingIndexData.rewrite(spark, entry, files, dataPath, Set.empty)
    else CoveringIndex.rewrite(spark, entry, files, dataPath, dropIds = Set.empty, oneFilePerBucket = true)

  /** The data files of a written version directory (relative to the index root). */
  def listDataFiles(spark: SparkSession, dataPath: Path): Seq[ContentFile] =
    CoveringIndex.listDataFiles(spark, dataPath)
}
