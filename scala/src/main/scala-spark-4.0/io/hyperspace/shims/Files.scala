package io.hyperspace.shims

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.sql.execution.datasources.{FileFormat, FileIndex, FileStatusWithMetadata, HadoopFsRelation, PartitionDirectory}
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

/** The listings a `FileIndex` returns (`PartitionDirectory`s of files). */
object FileListing {

  /** One directory of `files` with the partition `values` (an empty row when unpartitioned). */
  def directory(values: InternalRow, files: Seq[FileStatus]): PartitionDirectory =
    PartitionDirectory(values, files.map(FileStatusWithMetadata(_)))

  /** `dir` with only the files whose status `keep` accepts (their metadata kept). */
  def filterFiles(dir: PartitionDirectory)(keep: FileStatus => Boolean): PartitionDirectory =
    dir.copy(files = dir.files.filter(f => keep(f.fileStatus)))
}
