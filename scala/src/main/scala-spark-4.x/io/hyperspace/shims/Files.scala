package io.hyperspace.shims

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.execution.datasources.{CatalogFileIndex, FileFormat, FileIndex, FileStatusWithMetadata, HadoopFsRelation, InMemoryFileIndex, PartitionDirectory, PartitionedFile}
import org.apache.spark.sql.types.StructType

/**
 * A `HadoopFsRelation` that Hyperspace defines itself (a subclass, so plans can recognise it),
 * built through this constructor rather than Spark's.
 */
abstract class FileRelationBase(
    location: FileIndex,
    partitionSchema: StructType,
    dataSchema: StructType,
    bucketSpec: Option[BucketSpec],
    fileFormat: FileFormat,
    options: Map[String, String],
    spark: SparkSession)
  extends HadoopFsRelation(location, partitionSchema, dataSchema, bucketSpec, fileFormat, options)(spark)

/** Spark's file listings (`FileIndex`es) and what they return (`PartitionDirectory`s of files). */
object FileListing {

  /**
   * Whether `location` is one of Spark's own directory listings: of paths, of a catalog table,
   * or of a file sink's output.
   */
  def isSparkListing(location: FileIndex): Boolean = location match {
    case _: InMemoryFileIndex | _: CatalogFileIndex => true
    case FileSinkListing() => true
    case _ => false
  }

  /** One directory of `files` with the partition `values` (an empty row when unpartitioned). */
  def directory(values: InternalRow, files: Seq[FileStatus]): PartitionDirectory =
    PartitionDirectory(values, files.map(FileStatusWithMetadata(_)))

  /** The whole of file `status` as one piece a file format's reader reads (no partition values). */
  def partitionedFile(status: FileStatus): PartitionedFile =
    PartitionedFile(InternalRow.empty, SparkPath.fromPath(status.getPath), 0, status.getLen,
      Array.empty[String], status.getModificationTime, status.getLen)

  /** `dir` with only the files whose status `keep` accepts (their metadata kept). */
  def filterFiles(dir: PartitionDirectory)(keep: FileStatus => Boolean): PartitionDirectory =
    dir.copy(files = dir.files.filter(f => keep(f.fileStatus)))
}
