package io.hyperspace.index.split

import java.nio.charset.StandardCharsets
import java.util.zip.CRC32

import scala.collection.mutable

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.HyperspaceException
import io.hyperspace.index.BoundedCache
import io.hyperspace.log.{Content, LogEntry}

/**
 * One Parquet row group of a source file, as its footer gives it.
 *
 * @param fileId   the source file's lineage id
 * @param ordinal  the row group's ordinal in the file
 * @param firstRow the file's row index of its first row
 * @param rows     its number of rows
 * @param start    its first byte
 * @param bytes    its compressed size
 */
case class RowGroupInfo(fileId: Long, ordinal: Int, firstRow: Long, rows: Long, start: Long, bytes: Long)

/**
 * What a directory's [[RowGroupTable]] lists: its row groups by (file id, ordinal), and the
 * [[SourceFingerprint]] of each source file they lie in by file id (none in a table written before
 * fingerprints: those files are trusted on their identity alone).
 */
case class RowGroupTableContent(groups: Map[(Long, Int), RowGroupInfo], fingerprints: Map[Long, Long]) {
  def ++(other: RowGroupTableContent): RowGroupTableContent =
    RowGroupTableContent(groups ++ other.groups, fingerprints ++ other.fingerprints)

  def without(fileIds: Set[Long]): RowGroupTableContent =
    RowGroupTableContent(groups.filterNot(g => fileIds.contains(g._1._1)),
      fingerprints.filterNot(f => fileIds.contains(f._1)))
}

object RowGroupTableContent {
  val empty: RowGroupTableContent = RowGroupTableContent(Map.empty, Map.empty)
}

/**
 * The row groups a split index of kind version 3 points into, one small text file per data
 * version directory (`_split_row_groups`): what is the same for every row of a row group is
 * stored once instead of in each index row. A directory's table lists at least every row group
 * its index files' rows name (a build or refresh lists the files it read, a rewrite carries the
 * entry's), so an entry's row groups are the union over the directories it uses. The name starts
 * with `_`, so listings of index data files and vacuum's accounting skip it like `_SUCCESS`.
 *
 * Lines: the header [[Header]]; a line per row group (`fileId ordinal firstRow rows start bytes`);
 * a line per source file `f fileId fingerprint` ([[SourceFingerprint]], hex); last, `crc32 X`, the
 * CRC32 (hex) of every byte before that line. The checksum is the file's own, so a damaged table is
 * seen on object stores too, where no Hadoop `.crc` file exists: reading it then fails, naming
 * the file, and a seek falls back to the plain scan. A table without the header (written before
 * it) has row group lines only and is read unverified.
 */
object RowGroupTable {
  val FileName = "_split_row_groups"
  val Header = "# hyperspace split row groups 2"
  private val ChecksumPrefix = "crc32 "

  /**
   * Adds `groups` and the source files' `fingerprints` to the table of `dir` (merged with what it
   * lists already: a refresh may write twice).
   */
  def add(spark: SparkSession, dir: Path, groups: Seq[RowGroupInfo], fingerprints: Map[Long, Long]): Unit = {
    val before = read(spark, Seq(dir))
    val all = (before.groups.values ++ groups).toSeq.distinct.sortBy(g => (g.fileId, g.ordinal))
    val prints = (before.fingerprints ++ fingerprints).toSeq.sorted
    val body = new StringBuilder(Header).append('\n')
    all.foreach(g => body.append(s"${g.fileId} ${g.ordinal} ${g.firstRow} ${g.rows} ${g.start} ${g.bytes}\n"))
    prints.foreach { case (id, print) => body.append(s"f $id ${java.lang.Long.toHexString(print)}\n") }
    val bytes = body.toString.getBytes(StandardCharsets.UTF_8)
    val path = new Path(dir, FileName)
    val fs = path.getFileSystem(spark.sessionState.newHadoopConf())
    val out = fs.create(path, true)
    try {
      out.write(bytes)
      out.write(
        s"$ChecksumPrefix${java.lang.Long.toHexString(crc(bytes, bytes.length))}\n".getBytes(StandardCharsets.UTF_8))
    } finally out.close()
  }

  private def crc(bytes: Array[Byte], length: Int): Long = {
    val c = new CRC32
    c.update(bytes, 0, length)
    c.getValue
  }

  /** What the tables of `dirs` list (a directory without one lists nothing). */
  def read(spark: SparkSession, dirs: Seq[Path]): RowGroupTableContent = {
    val conf = spark.sessionState.newHadoopConf()
    dirs.foldLeft(RowGroupTableContent.empty) { (content, dir) =>
      val path = new Path(dir, FileName)
      val fs = path.getFileSystem(conf)
      if (!fs.exists(path)) content
      else {
        val in = fs.open(path)
        val bytes = try in.readAllBytes()
        finally in.close()
        content ++ parse(path, bytes)
      }
    }
  }

  private def damaged(path: Path, why: String) =
    new HyperspaceException(s"Split index row group table $path is damaged: $why.")

  private[split] def parse(path: Path, bytes: Array[Byte]): RowGroupTableContent = {
    val text = new String(bytes, StandardCharsets.UTF_8)
    val verified = text.startsWith(Header + "\n")
    val body = if (!verified) text
    else {
      // The checksum line is the last one; it covers every byte in front of it.
      val end = text.lastIndexOf("\n" + ChecksumPrefix)
      if (end < 0 || !text.endsWith("\n")) throw damaged(path, "its checksum line is missing (the file is cut short)")
      val covered = text.substring(0, end + 1)
      val recorded = text.substring(end + 1 + ChecksumPrefix.length, text.length - 1)
      val coveredBytes = covered.getBytes(StandardCharsets.UTF_8)
      if (recorded != java.lang.Long.toHexString(crc(coveredBytes, coveredBytes.length))) {
        throw damaged(path, "its content does not match its checksum")
      }
      covered.substring(Header.length + 1)
    }
    val groups = mutable.Map.empty[(Long, Int), RowGroupInfo]
    val prints = mutable.Map.empty[Long, Long]
    body.split('\n').iterator.filter(_.nonEmpty).foreach { line =>
      val f = line.split(' ')
      try {
        if (verified && f.length == 3 && f(0) == "f") prints(f(1).toLong) = java.lang.Long.parseUnsignedLong(f(2), 16)
        else if (f.length == 6) {
          val g = RowGroupInfo(f(0).toLong, f(1).toInt, f(2).toLong, f(3).toLong, f(4).toLong, f(5).toLong)
          groups((g.fileId, g.ordinal)) = g
        } else throw damaged(path, s"unreadable line '$line'")
      } catch {
        case _: NumberFormatException => throw damaged(path, s"unreadable line '$line'")
      }
    }
    RowGroupTableContent(groups.toMap, prints.toMap)
  }

  /** The row groups of `entry`'s data versions, by (file id, ordinal). */
  def ofEntry(spark: SparkSession, entry: LogEntry): Map[(Long, Int), RowGroupInfo] = contentOf(spark, entry).groups

  /** What the tables of `entry`'s data versions list, cached by the entry's identity (a log entry never changes). */
  def contentOf(spark: SparkSession, entry: LogEntry): RowGroupTableContent =
    cache.getOrElseUpdate(entry.identity,
      read(spark,
        entry.content.versionsUsed.toSeq.sorted.map(v =>
          new Path(entry.content.root, Content.versionDirName(v)))))

  private val cache =
    new BoundedCache[(String, String, Long), RowGroupTableContent](16, 4000000L,
      c => c.groups.size.toLong + c.fingerprints.size + 1)
}
