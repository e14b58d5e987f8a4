package io.hyperspace.sources

/**
 * What makes a source file the same file: its path, size and modification time. A file rewritten
 * in place is another file (an index built from the old bytes no longer covers it), so every
 * comparison of an index's files with a listing compares these three together.
 */
final case class FileKey(path: String, size: Long, modificationTime: Long)
