package io.hyperspace.sources

import org.apache.spark.sql.execution.datasources.FileIndex

/**
 * The files of `delegate` (a source's own listing) whose paths are in `paths`: a scan of some
 * files of a source that keeps the source's partition values, schema and read options — what
 * hybrid scan reads for appended files and refresh reads for the files it indexes.
 */
class SelectedFilesIndex(delegate: FileIndex, val paths: Set[String]) extends FilteredFileIndex(delegate) {

  override protected def keeps(path: String): Boolean = paths.contains(path)

  // By what it lists, so two scans of the same appended files canonicalize alike and Spark
  // reuses one's exchange for the other (ExchangeReuseSuite).
  override def equals(other: Any): Boolean = other match {
    case o: SelectedFilesIndex => o.getClass == getClass && o.delegate == delegate && o.paths == paths
    case _ => false
  }

  override def hashCode(): Int = (delegate, paths).hashCode()

  override def toString: String = s"SelectedFilesIndex(${paths.size} of ${delegate.rootPaths.mkString(", ")})"
}
