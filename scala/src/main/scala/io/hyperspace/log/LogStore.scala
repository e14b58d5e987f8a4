package io.hyperspace.log

import java.io.{ByteArrayOutputStream, FileNotFoundException, IOException}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{FileAlreadyExistsException, Files, Paths, StandardCopyOption}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException => HadoopFileAlreadyExists, FileContext, FileSystem, Options, Path}

/**
 * Atomic file primitives the index log is built on. `putIfAbsent` is the lock of every
 * operation: of several writers racing for the same path, exactly one succeeds.
 */
trait LogStore {
  /** Writes `content` at `path` unless a file is there; false (and nothing written) if one is. */
  def putIfAbsent(path: Path, content: String): Boolean
  /** Replaces `path` with `content` so that readers see the old or the new text, never neither. */
  def replace(path: Path, content: String): Unit
  /** The text at `path`, or None if there is no file. */
  def read(path: Path): Option[String]
}

object LogStore {
  /**
   * The store for `path`'s filesystem; `path` is the system path (or an index directory's
   * parent), where a store that checks the filesystem first (S3) keeps its probe. Local paths
   * never go through Hadoop's checksummed local filesystem: it renames a file and its `.crc`
   * side file separately, so a losing writer can overwrite the winner's checksum (LogStoreSuite
   * found this) and the entry becomes unreadable.
   */
  def forPath(path: Path, hadoopConf: Configuration): LogStore = {
    val scheme = Option(path.toUri.getScheme)
      .getOrElse(path.getFileSystem(hadoopConf).getUri.getScheme)
    requireSupported(path, scheme)
    if (scheme == "file") new LocalLogStore
    else if (AtomicRenameSchemes.contains(scheme)) new HadoopLogStore(hadoopConf)
    else new S3LogStore(path, hadoopConf)
  }

  /**
   * Refuses a path whose scheme (written in it, or `scheme`) has no log store, before any filesystem
   * is looked up: `s3://` is often no filesystem at all here, and the refusal says what to use.
   */
  def requireSupported(path: Path, scheme: String = null): Unit =
    Option(scheme).orElse(Option(path.toUri.getScheme)).foreach { s =>
      if (s != "file" && s != "s3a" && !AtomicRenameSchemes.contains(s)) {
        throw new io.hyperspace.HyperspaceException(refusal(s, path))
      }
    }

  /** Why Hyperspace keeps no index log on `scheme` (docs/object-stores.md). */
  private def refusal(scheme: String, path: Path): String = {
    val supported =
      s"Supported: local disk, s3a (Spark 4.1+) and ${AtomicRenameSchemes.toSeq.sorted.mkString(", ")}. " +
        "Set spark.hyperspace.system.path to such a location."
    val why = scheme match {
      case "s3" | "s3n" =>
        s"on S3 the index log is kept through Hadoop's S3A connector: write the system path as s3a://${path.toUri.getAuthority}" +
          s"${path.toUri.getPath} (with hadoop-aws on the class path)."
      case "gs" =>
        "its log needs an atomic put-if-absent; on GCS that would be the connector's create without " +
          "overwrite (a generation precondition), which is not supported yet: no test here runs it against GCS."
      case _ =>
        "its log needs an atomic put-if-absent, which Hyperspace builds on a rename that fails when the " +
          "target exists, or on S3's conditional write."
    }
    s"Hyperspace cannot keep an index log on '$scheme' paths ($path): $why $supported"
  }

  /**
   * Filesystems whose rename without overwrite is atomic on the server side (HDFS's NameNode,
   * ADLS Gen2 with a hierarchical namespace). Object stores whose rename is copy + delete are not.
   */
  val AtomicRenameSchemes: Set[String] = Set("hdfs", "viewfs", "abfs", "abfss", "ofs", "o3fs")

  /** The text of the file at `path` on `fs`, or None if there is none. */
  private[log] def readText(fs: FileSystem, path: Path): Option[String] =
    try {
      val in = fs.open(path)
      try {
        val out = new ByteArrayOutputStream()
        in.transferTo(out)
        Some(new String(out.toByteArray, UTF_8))
      } finally in.close()
    } catch {
      case _: FileNotFoundException => None
    }

  /** A new temporary file beside `path`: hidden, and short enough for any target name. */
  private[log] def tempSibling(path: Path): Path = {
    val name = path.getName
    val hint = if (name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= 64) s"$name." else ""
    new Path(path.getParent, s".$hint${UUID.randomUUID()}.tmp")
  }
}

/**
 * Local disk: the entry is written to a temporary file, then hard-linked to its name.
 * `link(2)` fails atomically when the name exists — unlike `File.renameTo`, which would
 * silently overwrite the winner's entry.
 */
class LocalLogStore extends LogStore {
  private def local(path: Path): java.nio.file.Path = Paths.get(path.toUri.getPath)

  /** Writes `content` to a new temporary file beside `path`; returns (target, temporary). */
  private def stage(path: Path, content: String): (java.nio.file.Path, java.nio.file.Path) = {
    val target = local(path)
    val temp = local(LogStore.tempSibling(path))
    Files.createDirectories(target.getParent)
    Files.write(temp, content.getBytes(UTF_8))
    (target, temp)
  }

  override def putIfAbsent(path: Path, content: String): Boolean = {
    val (target, temp) = stage(path, content)
    try {
      Files.createLink(target, temp)
      true
    } catch {
      case _: FileAlreadyExistsException => false
    } finally Files.deleteIfExists(temp)
  }

  override def replace(path: Path, content: String): Unit = {
    val (target, temp) = stage(path, content)
    try Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
    finally Files.deleteIfExists(temp)
  }

  override def read(path: Path): Option[String] = {
    val p = local(path)
    try Some(new String(Files.readAllBytes(p), UTF_8))
    catch {
      case _: java.nio.file.NoSuchFileException => None
    }
  }
}

/**
 * HDFS-like filesystems (HDFS, ABFS with hierarchical namespace): `FileContext.rename` without
 * OVERWRITE fails atomically when the destination exists.
 */
class HadoopLogStore(hadoopConf: Configuration) extends LogStore {

  /** Writes `content` to a new temporary file beside `path`; returns it with the filesystem. */
  private def stage(path: Path, content: String): (FileSystem, Path) = {
    val fs = path.getFileSystem(hadoopConf)
    val temp = LogStore.tempSibling(path)
    fs.mkdirs(path.getParent)
    val out = fs.create(temp, false)
    try out.write(content.getBytes(UTF_8))
    finally out.close()
    (fs, temp)
  }

  override def putIfAbsent(path: Path, content: String): Boolean = {
    val fc = FileContext.getFileContext(path.toUri, hadoopConf)
    val (fs, temp) = stage(path, content)
    try {
      fc.rename(temp, path, Options.Rename.NONE)
      true
    } catch {
      case _: HadoopFileAlreadyExists => false
      case e: IOException
          if fs.exists(path) && e.getMessage != null &&
            e.getMessage.toLowerCase.contains("exist") => false
    } finally {
      if (fs.exists(temp)) fs.delete(temp, false)
    }
  }

  override def replace(path: Path, content: String): Unit = {
    val fc = FileContext.getFileContext(path.toUri, hadoopConf)
    val (fs, temp) = stage(path, content)
    try fc.rename(temp, path, Options.Rename.OVERWRITE)
    finally if (fs.exists(temp)) fs.delete(temp, false)
  }

  override def read(path: Path): Option[String] = LogStore.readText(path.getFileSystem(hadoopConf), path)
}
