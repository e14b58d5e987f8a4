package io.hyperspace.shims

import org.apache.spark.sql.execution.datasources.FileIndex
import org.apache.spark.sql.execution.streaming.runtime.MetadataLogFileIndex

/**
 * Matches the listing of a streaming file sink's output: Spark 4.2's and 4.3's `MetadataLogFileIndex`
 * in `org.apache.spark.sql.execution.streaming.runtime` (in
 * `execution.streaming` up to Spark 4.0).
 */
private[shims] object FileSinkListing {
  def unapply(location: FileIndex): Boolean = location.isInstanceOf[MetadataLogFileIndex]
}
