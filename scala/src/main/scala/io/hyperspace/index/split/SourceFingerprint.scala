package io.hyperspace.index.split

import java.io.{ObjectInputStream, ObjectOutputStream}
import java.nio.ByteBuffer
import java.nio.ByteOrder
import java.util.concurrent.ConcurrentHashMap
import java.util.zip.CRC32

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging

/**
 * What a split index's seek relies on in a source file beyond its path, size and modification
 * time (the identity every index kind uses), as a CRC32 recorded at build time in the directory's
 * [[RowGroupTable]] and compared with the file before a seek narrows a read of it. A file
 * rewritten in place with the same identity (rows reordered, other keys) then is read whole
 * instead of at row groups that no longer hold its rows.
 *
 * - Parquet: the file's last `max(`[[TailBytes]]`, footer + 8)` bytes (the whole file when
 *   smaller): the footer (every row group's offsets, sizes, row counts and statistics) and the
 *   page indexes parquet-mr writes in front of it. A rewrite that keeps all of those (rows
 *   permuted only within one page, with equal compressed sizes) is not seen; audit mode is.
 * - CSV and JSON (file-level: a seek reads located files whole): [[Blocks]] blocks of
 *   [[BlockBytes]] at evenly spaced offsets, first and last included (the whole file up to 64 KiB).
 *
 * Changing either reading changes every recorded value: it needs a new table version.
 */
object SourceFingerprint {
  val TailBytes: Int = 64 * 1024
  val Blocks = 8
  val BlockBytes: Int = 8 * 1024

  /** The fingerprint of the file at `path` of `size` bytes: a Parquet tail, or sampled blocks (`fileLevel`). */
  def of(path: Path, size: Long, fileLevel: Boolean, conf: Configuration): Long =
    if (fileLevel) sampled(path, size, conf) else parquetTail(path, size, conf)

  /** Whether the file at `path` still has fingerprint `want`; a file that cannot be read (`failed`) has not. */
  def matches(path: Path, size: Long, fileLevel: Boolean, conf: Configuration, want: Long)(
      failed: java.io.IOException => Unit): Boolean =
    try of(path, size, fileLevel, conf) == want
    catch { case e: java.io.IOException => failed(e); false }

  def parquetTail(path: Path, size: Long, conf: Configuration): Long = {
    val fs = path.getFileSystem(conf)
    val in = fs.open(path)
    try {
      val crc = new CRC32
      val first = math.min(size, TailBytes.toLong).toInt
      val tail = new Array[Byte](first)
      in.readFully(size - first, tail)
      // A Parquet file ends with the footer's length (little-endian int) and "PAR1".
      val footer = if (first >= 8) ByteBuffer.wrap(tail, first - 8, 4).order(ByteOrder.LITTLE_ENDIAN).getInt.toLong
      else 0L
      val wanted = math.min(size, math.max(first.toLong, footer + 8))
      if (wanted > first) {
        val more = new Array[Byte]((wanted - first).toInt)
        in.readFully(size - wanted, more)
        crc.update(more)
      }
      crc.update(tail)
      crc.getValue
    } finally in.close()
  }

  def sampled(path: Path, size: Long, conf: Configuration): Long = {
    val fs = path.getFileSystem(conf)
    val in = fs.open(path)
    try {
      val crc = new CRC32
      val starts =
        if (size <= Blocks.toLong * BlockBytes) Seq(0L)
        else (0 until Blocks).map(i => (size - BlockBytes) * i / (Blocks - 1))
      starts.foreach { start =>
        val block = new Array[Byte](math.min(size - start, if (starts.size == 1) size else BlockBytes.toLong).toInt)
        in.readFully(start, block)
        crc.update(block)
      }
      crc.getValue
    } finally in.close()
  }
}

/**
 * The check of a seek's files against their recorded fingerprints, each file read once per
 * check (a task's or a driver-side read's): `expected` by path as the listing spells it. A
 * Hadoop configuration travels with it (tasks open the files), written as Spark writes its own.
 */
final class FingerprintCheck(
    val indexName: String,
    val expected: Map[String, Long],
    val fileLevel: Boolean,
    @transient private var conf: Configuration,
    consequence: String) extends Serializable with Logging {

  @transient private lazy val verdicts = new ConcurrentHashMap[String, java.lang.Boolean]()

  /** Whether the file at `path` (of `size` bytes) still is the one the index located rows in; true when unrecorded. */
  def current(path: String, size: Long): Boolean = expected.get(path) match {
    case None => true
    case Some(want) =>
      verdicts.computeIfAbsent(path,
        _ => {
          val same = SourceFingerprint.matches(new Path(path), size, fileLevel, conf, want)(e =>
            logWarning(s"Reading source file $path failed: $e"))
          if (!same) {
            logWarning(s"Split index '$indexName': source file $path changed since the index was built (same " +
              s"path, size and modification time, other content): $consequence. Refresh the index in full mode.")
          }
          java.lang.Boolean.valueOf(same)
        }).booleanValue
  }

  private def writeObject(out: ObjectOutputStream): Unit = {
    out.defaultWriteObject()
    conf.write(out)
  }

  private def readObject(in: ObjectInputStream): Unit = {
    in.defaultReadObject()
    conf = new Configuration(false)
    conf.readFields(in)
  }
}
