package io.hyperspace.rules

import org.apache.spark.sql.execution.datasources.FileIndex

import io.hyperspace.index.dataskipping.DataSkippingFileIndex
import io.hyperspace.shims.FileListing

/**
 * Which file scans an index may stand in for: those whose rows are exactly the rows of the
 * files they list — Spark's own directory listings (paths, catalog tables, a file sink's
 * output), possibly already pruned by data skipping.
 *
 * Anything else is left alone, because an index built from the listed files would not give
 * its rows: a table format's file index (Delta's) applies its log on top of the files
 * (deletion vectors, column mapping), and the file selections its commands read while
 * rewriting a table (DELETE / UPDATE / MERGE / OPTIMIZE read exactly the files they replace)
 * must be read as they are.
 */
object FileListings {

  /** Whether `location` is a plain listing of files whose rows a scan reads unchanged. */
  def isPlain(location: FileIndex): Boolean = FileListing.isSparkListing(DataSkippingFileIndex.unwrap(location))
}
