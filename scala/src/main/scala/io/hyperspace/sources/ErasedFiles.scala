package io.hyperspace.sources

import java.io.FileNotFoundException

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Whether the files a source version was made of are still there. A table format erases data by
 * removing the files of its old versions (Delta's VACUUM, Iceberg's orphan file removal after
 * snapshots expire): a read of such a version then fails, and an index must not answer it with
 * the copy of those rows it still holds, nor keep that copy longer than the table kept the rows.
 *
 * One listing per directory, not one request per file: on an object store every request costs.
 */
object ErasedFiles {

  /** The first of `paths` (fully qualified files) that no longer exists, if any. */
  def firstMissing(paths: Seq[String], conf: Configuration): Option[String] =
    paths.map(new Path(_)).groupBy(_.getParent).iterator.flatMap { case (dir, files) =>
      val present =
        try dir.getFileSystem(conf).listStatus(dir).iterator.map(_.getPath.getName).toSet
        catch { case _: FileNotFoundException => Set.empty[String] }
      files.find(f => !present.contains(f.getName)).map(_.toString)
    }.nextOption()
}
