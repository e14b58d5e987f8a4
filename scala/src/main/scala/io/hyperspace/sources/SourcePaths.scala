package io.hyperspace.sources

import org.apache.hadoop.fs.Path

/**
 * The two spellings of a source file's path. A listing (and the index log, `SourceFile.path`)
 * spells a file as Hadoop's `Path.toString` does: `file:/lake/a b/x.parquet`. Spark's
 * `_metadata.file_path` and `input_file_name()` spell it as its URI, with the characters URIs
 * escape percent-encoded: `file:/lake/a%20b/x.parquet` (space, `%`, `#`, `"`, `<`, `|`, a
 * backtick, ...). Joining the two needs one turned into the other.
 */
object SourcePaths {

  /** How `_metadata.file_path` spells the file a listing spells `listed`. */
  def asMetadataPath(listed: String): String = new Path(listed).toUri.toString
}
