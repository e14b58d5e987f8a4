package io.hyperspace.index

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import io.hyperspace.log.{Content, ContentFile, LogEntry}

/** Whether the data files a log entry lists are really there. */
object IndexDataFiles {

  /**
   * The data files of `entry` that are missing or have another size than the entry records
   * (removed or overwritten by hand, by a storage lifecycle rule, or vacuumed by another
   * process). One directory listing per data version the entry uses — never a call per file.
   */
  def missing(spark: SparkSession, entry: LogEntry, conf: Option[Configuration] = None): Seq[ContentFile] = {
    val fs = new Path(entry.content.root).getFileSystem(conf.getOrElse(spark.sessionState.newHadoopConf()))
    entry.content.files.groupBy(_.dataVersion).toSeq.sortBy(_._1).flatMap { case (version, files) =>
      val dir = version.map(v => new Path(entry.content.root, Content.versionDirName(v)))
        .getOrElse(new Path(entry.content.root))
      val present: Map[String, Long] =
        try fs.listStatus(dir).iterator.map(s => s.getPath.getName -> s.getLen).toMap
        catch { case _: java.io.FileNotFoundException => Map.empty }
      files.filterNot(f => present.get(f.name).contains(f.size))
    }
  }

  /**
   * Up to this many files a scan reads are checked one by one ([[missingAmong]]) rather than by
   * listing their directories: a Z-order range reading 2 of 114 files paid more for the listing
   * (a status per file of the directory) than for the rest of Hyperspace's planning
   * (benchmarks/results/archive/h-18-tiny-seek-profile.notes.md). Kept small, so an object store makes
   * no more requests than a few.
   */
  val MaxFilesCheckedOneByOne = 4

  /** Those of `files` (data files of `entry`) that are missing or have another size than recorded. */
  def missingAmong(spark: SparkSession, entry: LogEntry, files: Seq[ContentFile],
      conf: Option[Configuration] = None): Seq[ContentFile] = {
    val fs = new Path(entry.content.root).getFileSystem(conf.getOrElse(spark.sessionState.newHadoopConf()))
    files.filterNot { f =>
      try fs.getFileStatus(new Path(entry.content.pathOf(f))).getLen == f.size
      catch { case _: java.io.FileNotFoundException => false }
    }
  }
}
