package io.hyperspace.sources

/**
 * What makes a source file the same file: its path, size and modification time, and for a
 * table format that masks rows of a file without rewriting it (Delta deletion vectors, Iceberg
 * delete files) the identity of that mask. A file rewritten in place, or whose mask changed, is
 * another file (an index built from the old rows no longer covers it), so every comparison of an
 * index's files with a listing compares these together.
 */
final case class FileKey(path: String, size: Long, modificationTime: Long, deletionVector: Option[String] = None)
