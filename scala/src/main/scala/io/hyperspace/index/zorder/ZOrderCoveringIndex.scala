package io.hyperspace.index.zorder

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SaveMode, SparkSession}

import io.hyperspace.HyperspaceException
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{FileRanges, IndexKind, IndexKindConfig, IndexKinds, KindSummary, RewriteFamily}
import io.hyperspace.index.covering.{CoveringIndex, CoveringIndexKind}
import io.hyperspace.log.{ContentFile, IndexDefinition, LogEntry, SourceFile}
import io.hyperspace.sources.FileSource

/**
 * The Z-order covering index: the columns of a covering index (indexed + included, and the
 * lineage column when it has one, so deletes and refreshes work as for covering indexes), not
 * hash-bucketed but laid out along a Z-order curve over the indexed columns ([[ZOrderLayout]]),
 * with each file's range of every indexed column in the log ([[FileRanges]]). A filter with
 * ranges or equalities on any indexed column reads only the files whose ranges can match; it
 * takes part in filter rewrites only ([[RewriteFamily.FilterScan]]), since joins and
 * aggregations rely on a covering index's buckets.
 */
object ZOrderCoveringIndex extends IndexKind {
  val Kind = "ZOrderCoveringIndex"
  val KindVersion = 1

  override val name: String = Kind
  override val abbreviation: String = "ZCI"

  override def configFromJson(json: String): IndexKindConfig = ZOrderCoveringIndexConfig.fromJson(json)

  /**
   * Columns are checked as for a covering index; an indexed column must also be of a type whose
   * per-file ranges the log records, else the layout would buy nothing for it.
   */
  override def define(spark: SparkSession, config: IndexKindConfig, source: FileSource): IndexDefinition = {
    val c = configAs[ZOrderCoveringIndexConfig](config)
    val definition = CoveringIndex.define(spark, c.name, source, c.indexedColumns, c.includedColumns,
      numBuckets = 0, lineage = c.lineage.getOrElse(HyperspaceConf.lineageEnabled(spark)))
    val schema = CoveringIndex.storedSchema(definition)
    CoveringIndex.columnsOf(definition)._1.foreach { column =>
      val t = schema(column.storedName).dataType
      if (!FileRanges.supported(t)) {
        throw new HyperspaceException(
          s"Column '${column.name}' of type ${t.simpleString} cannot be an indexed column of Z-order covering " +
            s"index '${c.name}': its per-file ranges cannot be recorded. Indexed columns of a Z-order index must " +
            "be numbers, decimals, booleans, dates, timestamps or strings (UTF-8 binary collation); include " +
            "the column instead.")
      }
    }
    definition.copy(kind = Kind, kindVersion = KindVersion)
  }

  private def indexedStored(definition: IndexDefinition): Seq[String] = CoveringIndex.storedIndexedColumns(definition)

  override def write(df: DataFrame, definition: IndexDefinition, indexName: String, files: Seq[SourceFile],
      dataPath: Path, mode: SaveMode): Unit = {
    val data = CoveringIndex.indexRows(df, definition, files)
    val spark = data.sparkSession
    ZOrderLayout.write(data, indexedStored(definition), HyperspaceConf.zorderTargetFileSize(spark),
      HyperspaceConf.zorderPageRows(spark), dataPath, mode)
  }

  override def describeFiles(spark: SparkSession, definition: IndexDefinition, dataPath: Path,
      files: Seq[ContentFile]): Seq[ContentFile] =
    FileRanges.describe(spark, CoveringIndex.storedSchema(definition), indexedStored(definition), dataPath, files)

  override def canDropDeletedFiles(definition: IndexDefinition): Boolean = definition.lineage

  /** The kept rows are laid out again, so the files stay sorted stretches of one curve. */
  override def dropRows(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit = relayout(spark, entry, files, dataPath, dropIds)

  /**
   * A build or a full refresh writes one layout into one data version; each incremental refresh
   * adds another. Optimize merges the layouts into one: it has work only when the files lie in
   * more than one data version.
   */
  override def mergeGroups(entry: LogEntry): Seq[Seq[ContentFile]] =
    if (entry.content.files.map(_.dataVersion).distinct.size > 1) Seq(entry.content.files) else Nil

  override def merge(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path): Unit =
    relayout(spark, entry, files, dataPath, Set.empty)

  private def relayout(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile], dataPath: Path,
      dropIds: Set[Long]): Unit = {
    val all = spark.read.schema(CoveringIndex.storedSchema(entry.index)).parquet(files.map(entry.content.pathOf): _*)
    val kept = IndexKind.withoutSourceFiles(all, CoveringIndex.LineageColumn, dropIds)
    ZOrderLayout.write(kept, indexedStored(entry.index), HyperspaceConf.zorderTargetFileSize(spark),
      HyperspaceConf.zorderPageRows(spark), dataPath, SaveMode.ErrorIfExists)
  }

  override def coveredColumns(definition: IndexDefinition): Seq[String] = CoveringIndexKind.coveredColumns(definition)

  /** A covering index's summary, with the layout in place of a bucket count. */
  override def summary(definition: IndexDefinition): KindSummary = {
    val covering = CoveringIndexKind.summary(definition)
    covering.copy(additionalStats = covering.additionalStats - "numBuckets" +
      ("layout" -> s"Z-order over ${definition.indexedColumns.mkString(", ")}"))
  }

  override def rewrites: RewriteFamily = RewriteFamily.FilterScan

  /** The stored names of the indexed columns, whose per-file ranges the log records. */
  def rangedColumns(definition: IndexDefinition): Seq[String] = indexedStored(definition)

  /** Whether `entry` is a Z-order covering index. */
  def isZOrder(entry: LogEntry): Boolean = IndexKinds.find(entry.index.kind).contains(this)
}
