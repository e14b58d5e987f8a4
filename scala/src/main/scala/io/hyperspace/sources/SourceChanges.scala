package io.hyperspace.sources

import io.hyperspace.log.SourceFile

/**
 * How a source's files differ from the files an index covers. Identity is (path, size,
 * modification time): a file rewritten in place is in both lists, deleted and appended.
 *
 * @param appended files listed now that the index does not cover
 * @param deleted  files the index covers that are no longer listed (with their lineage ids)
 */
case class SourceChanges(appended: Seq[FileKey], deleted: Seq[SourceFile]) {

  /** Whether the source is exactly what the index covers. */
  def isEmpty: Boolean = appended.isEmpty && deleted.isEmpty

  /** Bytes of the appended files. */
  def appendedBytes: Long = appended.map(_.size).sum

  /** Bytes of the deleted files. */
  def deletedBytes: Long = deleted.map(_.size).sum

  /** The appended files as log records, numbered from `firstId` in path order. */
  def appendedAsSourceFiles(firstId: Long): Seq[SourceFile] =
    appended.sortBy(_.path).zipWithIndex.map { case (f, i) =>
      SourceFile(f.path, f.size, f.modificationTime, firstId + i, f.deletionVector)
    }

  /** "3 file(s) appended or rewritten, 1 deleted" (for messages). */
  def describe: String = s"${appended.size} file(s) appended or rewritten, ${deleted.size} deleted"
}

object SourceChanges {

  /** The changes from `indexed` (the files an index covers) to `listed` (the source now). */
  def between(indexed: Seq[SourceFile], listed: Seq[FileKey]): SourceChanges = {
    val indexedKeys = indexed.map(_.key).toSet
    val listedKeys = listed.toSet
    SourceChanges(
      appended = listed.filterNot(indexedKeys.contains).sortBy(_.path),
      deleted = indexed.filterNot(f => listedKeys.contains(f.key)).sortBy(_.path))
  }
}
