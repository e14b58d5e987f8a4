package io.hyperspace.log

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.hyperspace.HyperspaceException
import io.hyperspace.index.IndexNames

/**
 * Index names are case-insensitive, but directories on most filesystems are not: two processes
 * creating `X` and `x` at once would each make a directory and each win its own entry 0. So a
 * create first claims the case-folded name with the log's own atomic put-if-absent:
 * `<system path>/_hyperspace_names/<lower-case name>`, holding the spelling of the directory
 * that owns the name. Of racing creators exactly one claim is written; every process then uses
 * that directory, whose entry 0 decides the race as for two creates of the same spelling.
 *
 * A claim is never removed. It only names a directory, so it is harmless when that directory is
 * gone (a crash between claim and create, or a vacuumed index): the next create of any spelling
 * reuses it. Removing claims would reopen the race (a create reading a claim another process is
 * deleting), for no gain but a few bytes per name ever used.
 */
object NameClaims {
  val DirName = "_hyperspace_names"

  private def path(systemPath: Path, name: String): Path =
    new Path(new Path(systemPath, DirName), IndexNames.key(name))

  /** The directory name that owns `name`'s claim, if it was claimed. */
  def read(systemPath: Path, name: String, conf: Configuration): Option[String] = {
    val at = path(systemPath, name)
    LogStore.forPath(systemPath, conf).read(at).map(_.trim).map { owner =>
      if (!IndexNames.key(owner).equals(IndexNames.key(name)) ||
        scala.util.Try(IndexNames.validate(owner)).isFailure) {
        throw new HyperspaceException(
          s"The name claim $at of index '$name' is damaged (it holds '${owner.take(300)}'). " +
            "Remove that file if no index directory of this name exists under the system path.")
      }
      owner
    }
  }

  /**
   * Claims `name` (for the directory `name`) unless a claim exists; returns the directory name
   * that owns it — `name` or the spelling of whoever claimed it first.
   */
  def claim(systemPath: Path, name: String, conf: Configuration): String = {
    IndexNames.validate(name)
    if (LogStore.forPath(systemPath, conf).putIfAbsent(path(systemPath, name), name)) name
    else read(systemPath, name, conf).getOrElse(
      throw new HyperspaceException(s"Cannot claim index name '$name' under $systemPath."))
  }
}
