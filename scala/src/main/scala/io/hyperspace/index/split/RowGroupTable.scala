package io.hyperspace.index.split

import java.io.{BufferedReader, InputStreamReader}
import java.nio.charset.StandardCharsets

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
 * The row groups a split index of kind version 3 points into, one small text file per data
 * version directory (`_split_row_groups`, a line per row group): what is the same for every row
 * of a row group is stored once instead of in each index row. A directory's table lists at least
 * every row group its index files' rows name (a build or refresh lists the files it read, a
 * rewrite carries the entry's), so an entry's row groups are the union over the directories it
 * uses. The name starts with `_`, so listings of index data files and vacuum's accounting skip it
 * like `_SUCCESS`.
 */
object RowGroupTable {
  val FileName = "_split_row_groups"

  /** Adds `groups` to the table of `dir` (merged with what it lists already: a refresh may write twice). */
  def add(spark: SparkSession, dir: Path, groups: Seq[RowGroupInfo]): Unit = {
    val all = (read(spark, Seq(dir)).values ++ groups).toSeq.distinct.sortBy(g => (g.fileId, g.ordinal))
    val path = new Path(dir, FileName)
    val fs = path.getFileSystem(spark.sessionState.newHadoopConf())
    val out = fs.create(path, true)
    try {
      all.foreach(g =>
        out.write(s"${g.fileId} ${g.ordinal} ${g.firstRow} ${g.rows} ${g.start} ${g.bytes}\n"
            .getBytes(StandardCharsets.UTF_8)))
    } finally out.close()
  }

  /** The row groups the tables of `dirs` list (a directory without one lists none), by (file id, ordinal). */
  def read(spark: SparkSession, dirs: Seq[Path]): Map[(Long, Int), RowGroupInfo] = {
    val conf = spark.sessionState.newHadoopConf()
    val groups = mutable.Map.empty[(Long, Int), RowGroupInfo]
    dirs.foreach { dir =>
      val path = new Path(dir, FileName)
      val fs = path.getFileSystem(conf)
      if (fs.exists(path)) {
        val in = new BufferedReader(new InputStreamReader(fs.open(path), StandardCharsets.UTF_8))
        try {
          Iterator.continually(in.readLine()).takeWhile(_ != null).filter(_.nonEmpty).foreach { line =>
            val f = line.split(' ')
            if (f.length != 6) throw new HyperspaceException(s"Split index row group table $path is corrupt: '$line'.")
            val g = RowGroupInfo(f(0).toLong, f(1).toInt, f(2).toLong, f(3).toLong, f(4).toLong, f(5).toLong)
            groups((g.fileId, g.ordinal)) = g
          }
        } finally in.close()
      }
    }
    groups.toMap
  }

  /** The row groups of `entry`'s data versions, cached by the entry's identity (a log entry never changes). */
  def ofEntry(spark: SparkSession, entry: LogEntry): Map[(Long, Int), RowGroupInfo] =
    cache.getOrElseUpdate(entry.identity,
      read(spark,
        entry.content.versionsUsed.toSeq.sorted.map(v =>
          new Path(entry.content.root, Content.versionDirName(v)))))

  private val cache =
    new BoundedCache[(String, String, Long), Map[(Long, Int), RowGroupInfo]](16, 4000000L, _.size.toLong + 1)
}
