package io.hyperspace.log

import java.io.{FileNotFoundException, IOException}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.language.existentials
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.util.VersionInfo

import io.hyperspace.HyperspaceException

/**
 * S3 (`s3a://`): the put-if-absent is S3's conditional write, a PUT with `If-None-Match: *`
 * that the store refuses with 412 when the key exists, sent through Hadoop S3A's conditional
 * create (Hadoop 3.4.2+, so Spark 4.1+): `createFile(path).overwrite(false)` with the mandatory
 * option `fs.option.create.conditional.overwrite`. No HEAD or LIST goes before it: one PUT.
 *
 * A 412 does not by itself mean another writer won: the reply to an earlier attempt of the same
 * PUT may have been lost and the attempt retried (by the SDK or S3A), finding the key this writer
 * wrote. So every write carries a fresh writer token in the object's user metadata
 * (`x-amz-meta-hyperspace-writer`), and a 412 is followed by a read of it: the write won if the
 * object holds this writer's token. A 409 (S3's ConditionalRequestConflict: another conditional
 * write of the key in flight) is retried.
 *
 * Before its first put under a root (the system path) in this JVM, the store checks that S3A can
 * send the header (its path capability: Hadoop 3.4.2+ with `fs.s3a.create.conditional.enabled`)
 * and that the store honours it: two conditional writes of one key under `_hyperspace_probe/`,
 * of which the second must fail with 412 and leave the first's token. Otherwise every operation
 * that writes the log is refused, naming what is missing; reads (queries through existing
 * indexes) need no put-if-absent and are not refused.
 *
 * `replace` is a plain PUT: S3 replaces an object atomically, so readers see the old or the new.
 */
class S3LogStore(root: Path, hadoopConf: Configuration) extends LogStore {
  import S3LogStore._

  override def putIfAbsent(path: Path, content: String): Boolean = {
    val fs = path.getFileSystem(hadoopConf)
    requireConditionalWrites(fs, root)
    conditionalPut(fs, path, content.getBytes(UTF_8))
  }

  override def replace(path: Path, content: String): Unit = {
    val fs = path.getFileSystem(hadoopConf)
    val builder = fs.createFile(path)
    builder.overwrite(true)
    // No LIST before the PUT (it would only check that no directory has the name).
    builder.opt("fs.s3a.create.performance", "true")
    val out = builder.build()
    try out.write(content.getBytes(UTF_8))
    finally out.close()
  }

  override def read(path: Path): Option[String] = LogStore.readText(path.getFileSystem(hadoopConf), path)
}

object S3LogStore {

  /** S3A's conditional create option and path capability (Hadoop's Options.CreateFileOptionKeys). */
  val ConditionalCreate = "fs.option.create.conditional.overwrite"

  /** S3A's switch of conditional creates (default true in Hadoop 3.4.2+). */
  val ConditionalCreateSwitch = "fs.s3a.create.conditional.enabled"

  /** The user metadata key of the writer token (sent as `x-amz-meta-hyperspace-writer`). */
  val WriterHeader = "hyperspace-writer"

  /** Where the probe writes, under the system path. */
  val ProbeDirName = "_hyperspace_probe"

  /** 409s retried before a put gives up. */
  private val ConflictAttempts = 10

  /** Roots (qualified) whose store was found to honour conditional writes, in this JVM. */
  private val verified = ConcurrentHashMap.newKeySet[String]()

  /**
   * Writes `bytes` at `path` unless an object is there: true if this call's write is the one
   * stored (also when a retried attempt met its own earlier write), false if another writer's is.
   */
  private[log] def conditionalPut(
      fs: FileSystem,
      path: Path,
      bytes: Array[Byte],
      token: String = UUID.randomUUID().toString): Boolean = {
    var attempt = 0
    var result: Option[Boolean] = None
    while (result.isEmpty) {
      attempt += 1
      try {
        write(fs, path, bytes, token)
        result = Some(true)
      } catch {
        case e: IOException if isPreconditionFailed(e) =>
          // Taken: by this writer (a lost reply, retried) or another. A key removed since (vacuum of
          // a whole log) is free again: try anew, as a put arriving after the removal would.
          writerOf(fs, path) match {
            case Some(t) => result = Some(t == token)
            case None if attempt < ConflictAttempts => ()
            case None => throw e
          }
        case e: IOException if isConflict(e) && attempt < ConflictAttempts =>
          Thread.sleep(math.min(2000L, 25L << attempt) + scala.util.Random.nextInt(25))
      }
    }
    result.get
  }

  private def write(fs: FileSystem, path: Path, bytes: Array[Byte], token: String): Unit = {
    val builder = fs.createFile(path)
    builder.overwrite(false)
    builder.must(ConditionalCreate, true)
    builder.opt(s"fs.s3a.create.header.$WriterHeader", token)
    val out = builder.build()
    try out.write(bytes)
    finally out.close()
  }

  /** The writer token stored with the object at `path`; None if there is no object. */
  private def writerOf(fs: FileSystem, path: Path): Option[String] =
    try Some(Option(fs.getXAttr(path, s"header.$WriterHeader")).map(new String(_, UTF_8)).getOrElse(""))
    catch { case _: FileNotFoundException => None }

  /** The HTTP statuses of the S3 errors among `e` and its causes (the SDK's and S3A's `statusCode()`). */
  private def statuses(e: Throwable): Seq[Int] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10).flatMap { t =>
      try t.getClass.getMethod("statusCode").invoke(t) match {
          case i: Integer => Some(i.intValue)
          case _ => None
        }
      catch { case NonFatal(_) => None }
    }.toSeq

  /** 412, which S3A raises as RemoteFileChangedException (S3 Express: a 200 with PreconditionFailed). */
  private[log] def isPreconditionFailed(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10)
      .exists(_.getClass.getName == "org.apache.hadoop.fs.s3a.RemoteFileChangedException") ||
      statuses(e).contains(412)

  /** 409: another conditional write of the key was in flight. */
  private[log] def isConflict(e: Throwable): Boolean = statuses(e).contains(409)

  /**
   * Refuses, naming what is missing, unless S3A sends conditional writes for `root` and the store
   * honours them (checked once per root and JVM; a refusal is checked again at the next put).
   */
  private[log] def requireConditionalWrites(fs: FileSystem, root: Path): Unit = {
    val key = fs.makeQualified(root).toString
    if (!verified.contains(key)) {
      if (!fs.hasPathCapability(root, ConditionalCreate)) throw new HyperspaceException(noCapability(fs, root))
      probe(fs, root)
      verified.add(key)
    }
  }

  private def noCapability(fs: FileSystem, root: Path): String = {
    val hadoop = VersionInfo.getVersion
    val prefix = s"Hyperspace cannot keep an index log at $root: on S3 its put-if-absent is a conditional " +
      "write (If-None-Match), sent through Hadoop S3A's conditional create"
    if (!fs.getClass.getName.endsWith(".S3AFileSystem")) {
      s"$prefix, but s3a:// is served here by ${fs.getClass.getName}, not by S3A (fs.s3a.impl)."
    } else if (olderThan(hadoop, "3.4.2")) {
      s"$prefix, which Hadoop $hadoop does not have (Spark 4.0 bundles Hadoop 3.4.1). Run Spark 4.1 or " +
        "later (Hadoop 3.4.2+), or keep spark.hyperspace.system.path on HDFS, ABFS or local disk."
    } else {
      s"$prefix, which is switched off for this bucket: set $ConditionalCreateSwitch=true (or " +
        s"fs.s3a.bucket.${root.toUri.getAuthority}.create.conditional.enabled)."
    }
  }

  private def olderThan(version: String, than: String): Boolean = {
    def parts(v: String) = v.takeWhile(c => c.isDigit || c == '.').split('.').filter(_.nonEmpty).map(_.toInt).toSeq
    val (a, b) = (parts(version), parts(than))
    a.zipAll(b, 0, 0).find { case (x, y) => x != y }.exists { case (x, y) => x < y }
  }

  /**
   * Two conditional writes of one fresh key: the first must be stored, the second refused with 412
   * leaving the first's token. A store that ignores `If-None-Match` (stores the second) is refused.
   */
  private def probe(fs: FileSystem, root: Path): Unit = {
    val key = new Path(new Path(root, ProbeDirName), UUID.randomUUID().toString)
    def refuse(what: String, cause: Throwable = null): Nothing = throw new HyperspaceException(
      s"Hyperspace cannot keep an index log at $root: the S3 store does not honour conditional writes " +
        s"(If-None-Match: *), its atomic put-if-absent: $what Use a store that does (AWS S3 since " +
        "2024-08, and S3-compatible stores that document it), or keep spark.hyperspace.system.path elsewhere.",
      cause)
    try {
      val firstToken = UUID.randomUUID().toString
      val firstStored =
        try conditionalPut(fs, key, "first".getBytes(UTF_8), firstToken)
        catch {
          case e: IOException if statuses(e).exists(s => s == 400 || s == 501) =>
            refuse(s"a conditional write of $key failed (${e.getMessage}).", e)
        }
      if (!firstStored) refuse(s"a conditional write of the new key $key was refused.")
      if (conditionalPut(fs, key, "second".getBytes(UTF_8)))
        refuse(s"a second conditional write of $key replaced the first.")
      writerOf(fs, key) match {
        case Some(t) if t == firstToken => ()
        case other => refuse(s"after a refused second write, $key holds writer ${other.getOrElse("(none)")}, " +
            "not the first write's (the store must keep the object's user metadata).")
      }
    } finally {
      try fs.delete(key, false)
      catch { case NonFatal(_) => () }
    }
  }
}
