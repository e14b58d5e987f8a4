package io.hyperspace.sources.delta

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.delta.Snapshot
import org.apache.spark.sql.delta.actions.AddFile
import org.apache.spark.sql.delta.files.{TahoeBatchFileIndex, TahoeLogFileIndex}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

import io.hyperspace.index.BoundedCache
import io.hyperspace.shims.FileRelation
import io.hyperspace.sources.{FileKey, TableFormatProvider, VersionedTable}

/**
 * Delta Lake tables. The only class of this jar that names Delta's classes (with [[DeltaTable]]):
 * it is instantiated by [[io.hyperspace.sources.TableFormats]] only when delta-spark is on the
 * class path.
 *
 * A scan of a Delta table is a `HadoopFsRelation` over Delta's `TahoeLogFileIndex` (by path, by
 * catalog name, with or without `versionAsOf` / `timestampAsOf`). Delta's own commands (DELETE,
 * UPDATE, MERGE, OPTIMIZE) read other file indexes of it (a pinned selection of files), which
 * are not recognised here, so no index ever stands in for what a command reads.
 */
class DeltaProvider extends TableFormatProvider {

  override def format: String = "delta"

  override def tableOf(relation: LogicalRelation, fs: HadoopFsRelation): Option[VersionedTable] =
    fs.location match {
      // Partition filters a file index carries itself would narrow the table the log describes.
      case index: TahoeLogFileIndex if index.partitionFilters.isEmpty => Some(new DeltaTable(relation, fs, index))
      case _ => None
    }

  override def load(spark: SparkSession, root: String): DataFrame = spark.read.format("delta").load(root)
}

/** One scan of a Delta table, at the snapshot Delta will scan for it. */
private final class DeltaTable(relation: LogicalRelation, fs: HadoopFsRelation, index: TahoeLogFileIndex)
  extends VersionedTable {

  // What Delta's scan reads: the pinned snapshot of a time travel query, else the newest known.
  private lazy val snapshot: Snapshot = index.getSnapshot

  override def format: String = "delta"
  override def root: String = index.path.toString
  override def version: Long = snapshot.version
  override def isTimeTravel: Boolean = index.isTimeTravelQuery

  private lazy val addFiles: Seq[AddFile] = DeltaTable.addFiles(snapshot)

  private def pathOf(add: AddFile): String = index.absolutePath(add.path).toString

  override lazy val files: Seq[FileKey] = addFiles.map { add =>
    FileKey(pathOf(add), add.size, add.modificationTime, Option(add.deletionVector).map(_.uniqueId))
  }.sortBy(_.path)

  // A pinned selection of the snapshot's files: Delta reads it as its own commands read theirs,
  // applying deletion vectors and column mapping.
  override def restrictedTo(paths: Set[String]): LogicalRelation = {
    val selected = addFiles.filter(a => paths.contains(pathOf(a)))
    val location = new TahoeBatchFileIndex(fs.sparkSession, "hyperspace", selected, index.deltaLog, index.path,
      snapshot)
    FileRelation.withLocation(relation, fs, location, keepTable = false).newInstance()
  }
}

private object DeltaTable {

  // The files of a snapshot are computed by a Spark job over the table's log; a query plans
  // against the same snapshot many times (every optimizer pass, every candidate index). Keyed
  // by the table's id, so a table created again at the same path is another table.
  private val cache = new BoundedCache[(String, String, Long), Seq[AddFile]](64, 2000000L, _.size.toLong)

  def addFiles(snapshot: Snapshot): Seq[AddFile] =
    cache.getOrElseUpdate((snapshot.deltaLog.dataPath.toString, snapshot.metadata.id, snapshot.version),
      snapshot.allFiles.collect().toSeq)
}
