package io.hyperspace.index.split

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, StandardCopyOption}

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.desc
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}

import io.hyperspace.log.Content
import io.hyperspace.rules.RuleTestSupport

/**
 * Source files rewritten in place under the identity every kind knows them by (path, size and
 * modification time), and damaged row group tables: a split index's seek never loses a row to
 * them. Audit mode is off here, as it is by default, so the fingerprints alone must hold.
 *
 * The rewrites keep the identity exactly: fixed-width columns written uncompressed, without
 * dictionaries or page checksums, give every permutation of a file's rows (or of its values) the
 * same byte size, and the Hadoop `.crc` beside each file is replaced with it, as a job rewriting
 * the file would write it; the modification time is then set back.
 */
class SplitStaleSourceSuite extends RuleTestSupport {

  private val DriverReadKey = "spark.hyperspace.index.split.driverRead.maxBytes"
  private val Rows = 4000
  private val SourceFiles = 4

  // Small row groups (a seek chooses among many), and a file's size a function of its row count.
  private val fixedSize = Map("compression" -> "none", "parquet.enable.dictionary" -> "false",
    "parquet.page.write-checksum.enabled" -> "false", "parquet.block.size" -> "4096",
    "parquet.page.size.row.check.min" -> "10", "parquet.page.size.row.check.max" -> "50",
    "parquet.page.size" -> "1024")

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.hyperspace.audit.sampleRate", "0")
    // A seek is chosen whatever share of the bytes it reads: what it reads is the point here.
    spark.conf.set("spark.hyperspace.index.split.maxReadFraction", "1.0")
  }

  /** `id`; `k` an int key on about two rows each, spread over every file and row group; `x`. */
  private def frame(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).selectExpr(
      "id", "CAST(pmod(hash(id), 1800) AS INT) AS k", "CAST(id AS DOUBLE) * 1.5 AS x")

  /**
   * The source, written from a first copy read back: its columns are then nullable, as those of
   * every rewrite of its files (which reads them back), so a file and its rewrite have one schema.
   */
  private def parquetSource(): String = {
    val first = newDir("first").getAbsolutePath + "/data"
    frame(0, Rows, SourceFiles).write.parquet(first)
    val path = newDir("stale").getAbsolutePath + "/data"
    spark.read.parquet(first).repartition(SourceFiles).write.options(fixedSize).parquet(path)
    path
  }

  private def dataFiles(path: String, suffix: String): Seq[File] =
    new File(path).listFiles().filter(f => f.getName.endsWith(suffix) && !f.getName.startsWith(".")).toSeq
      .sortBy(_.getName)

  private def crcOf(file: File): File = new File(file.getParentFile, s".${file.getName}.crc")

  /**
   * Replaces `target`'s bytes (and its `.crc`) with those of `from`, keeping `target`'s
   * modification time: the same identity, other content.
   */
  private def replaceInPlace(from: File, target: File): Unit = {
    val (size, modified) = (target.length(), target.lastModified())
    assert(from.length() == size, s"the rewrite must keep the size: ${from.length()} vs $size")
    Files.copy(from.toPath, target.toPath, StandardCopyOption.REPLACE_EXISTING)
    Files.copy(crcOf(from).toPath, crcOf(target).toPath, StandardCopyOption.REPLACE_EXISTING)
    assert(target.setLastModified(modified))
  }

  /** `df` written as one Parquet file as the source was, returned. */
  private def rewritten(df: DataFrame): File = {
    val dir = newDir("rewrite").getAbsolutePath + "/out"
    df.coalesce(1).write.options(fixedSize).parquet(dir)
    dataFiles(dir, ".parquet").head
  }

  private def seekScans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[SplitSeekFileIndex] => s
  }

  private def keysIn(path: String, file: File): Seq[Int] =
    spark.read.parquet(path).where(s"_metadata.file_name = '${file.getName}'").select("k").distinct()
      .collect().map(_.getInt(0)).sorted.take(3).toSeq

  /**
   * `filter` over `source` with Hyperspace off and on, by a job and by a driver-side read: equal
   * rows, read by a seek that found `changed` of its located files changed (and then listed every
   * file, skipping none) or none changed.
   */
  private def checkSeek(source: => DataFrame, filter: String, changed: Boolean): Unit =
    Seq("0", "32m").foreach { driverRead =>
      withConf(DriverReadKey -> driverRead) {
        val plan = sameResult(source.where(filter))
        val scans = seekScans(plan)
        if (scans.size != 1) fail(s"$filter: ${plan.treeString}\n${hs.whyNot(source.where(filter))}")
        val location = scans.head.relation.location.asInstanceOf[SplitSeekFileIndex]
        assert(location.changedFiles.nonEmpty == changed, s"$filter: $location")
        if (changed) {
          assert(location.toString.contains("changed since the build: every file read"), location)
          assert(location.stats.filesSkipped == 0 && location.stats.bytesSkipped == 0L, location.stats)
        }
      }
    }

  test("a Parquet file rewritten in place with its rows reversed, or with other keys, is read whole") {
    val path = parquetSource()
    hs.createIndex(spark.read.parquet(path), SplitIndexConfig("stReorder", Seq("k")))
    try {
      val files = dataFiles(path, ".parquet")
      val keys = keysIn(path, files.head)
      def source = spark.read.parquet(path)
      val lookup = s"k IN (${keys.mkString(", ")})"
      checkSeek(source, lookup, changed = false)
      replaceInPlace(rewritten(spark.read.parquet(files.head.getPath).orderBy(desc("id"))), files.head)
      checkSeek(source, lookup, changed = true)
      checkSeek(source, s"k = ${keys.head}", changed = true)
      // Other keys: every value of the second file moved to its neighbour, so a key the index
      // located there now lies in other row groups of it.
      val shifted = rewritten(spark.read.parquet(files(1).getPath).selectExpr("id", "k + 1 AS k", "x"))
      replaceInPlace(shifted, files(1))
      checkSeek(source, s"k IN (${keysIn(path, files(1)).mkString(", ")})", changed = true)
      // A refresh in full mode records the files as they are now: seeks narrow again.
      hs.refreshIndex("stReorder", "full")
      checkSeek(source, lookup, changed = false)
    } finally drop("stReorder")
  }

  test("two Parquet files of one size swapped under their names are read whole") {
    val path = parquetSource()
    hs.createIndex(spark.read.parquet(path), SplitIndexConfig("stSwap", Seq("k")))
    try {
      val Seq(a, b) = dataFiles(path, ".parquet").take(2)
      val keys = keysIn(path, a)
      val (copyA, copyB) = (rewritten(spark.read.parquet(a.getPath)), rewritten(spark.read.parquet(b.getPath)))
      replaceInPlace(copyB, a)
      replaceInPlace(copyA, b)
      checkSeek(spark.read.parquet(path), s"k IN (${keys.mkString(", ")})", changed = true)
    } finally drop("stSwap")
  }

  test("two CSV files of one size swapped under their names are read whole") {
    val path = newDir("stale-csv").getAbsolutePath + "/data"
    // Fixed-width text, so that two files of as many rows have one size.
    def csvFrame(from: Long, until: Long, files: Int) = frame(from, until, files)
      .selectExpr("lpad(CAST(id AS STRING), 6, '0') AS id", "lpad(CAST(k AS STRING), 4, '0') AS k")
    csvFrame(0, Rows, SourceFiles).write.csv(path)
    def source = spark.read.schema("id STRING, k STRING").csv(path)
    hs.createIndex(source, SplitIndexConfig("stCsv", Seq("k")))
    try {
      val Seq(a, b) = dataFiles(path, ".csv").take(2)
      val key = source.where(s"_metadata.file_name = '${a.getName}'").select("k").head().getString(0)
      def copyOf(file: File): File = {
        val dir = newDir("csv-copy")
        val copy = new File(dir, file.getName)
        Files.copy(file.toPath, copy.toPath)
        Files.copy(crcOf(file).toPath, crcOf(copy).toPath)
        copy
      }
      val (copyA, copyB) = (copyOf(a), copyOf(b))
      replaceInPlace(copyB, a)
      replaceInPlace(copyA, b)
      checkSeek(source, s"k = '$key'", changed = true)
    } finally drop("stCsv")
  }

  private def tableOf(name: String): File = {
    val entry = logOf(name).latestStable.get
    val dir = new org.apache.hadoop.fs.Path(entry.content.root, Content.versionDirName(entry.content.dataVersion))
    new File(dir.toUri.getPath, RowGroupTable.FileName)
  }

  /** Writes `text` as the row group table `table` with no `.crc` beside it, as on an object store. */
  private def overwrite(table: File, text: String): Unit = {
    Files.write(table.toPath, text.getBytes(StandardCharsets.UTF_8))
    crcOf(table).delete()
    assert(!crcOf(table).exists())
  }

  test("a damaged or cut-short row group table keeps the plain scan and whyNot names it; an old one is read") {
    val path = parquetSource()
    def source = spark.read.parquet(path)
    val lookup = s"k IN (${keysIn(path, dataFiles(path, ".parquet").head).mkString(", ")})"
    // Each case on an index of its own: a table is read once per index entry (entries never change).
    def withTable(name: String)(damage: String => String)(check: => Unit): Unit = {
      hs.createIndex(source, SplitIndexConfig(name, Seq("k")))
      try {
        val table = tableOf(name)
        val text = new String(Files.readAllBytes(table.toPath), StandardCharsets.UTF_8)
        assert(text.startsWith(RowGroupTable.Header + "\n") && text.contains("\ncrc32 "), text.take(200))
        overwrite(table, damage(text))
        check
      } finally drop(name)
    }
    def isGroupLine(line: String) = !line.startsWith("#") && line.split(' ').length == 6
    def refused(name: String, why: String): Unit = {
      val plan = sameResult(source.where(lookup))
      assert(seekScans(plan).isEmpty, plan.treeString)
      val whyNot = hs.whyNot(source.where(lookup), name)
      assert(whyNot.contains(RowGroupTable.FileName) && whyNot.contains(why), whyNot)
    }
    // A row group's first byte moved (the line keeps its shape): only the checksum tells.
    withTable("stMoved") { text =>
      val lines = text.split('\n')
      val at = lines.indexWhere(isGroupLine)
      val fields = lines(at).split(' ')
      lines.updated(at, fields.updated(4, (fields(4).toLong + 7).toString).mkString(" ")).mkString("", "\n", "\n")
    }(refused("stMoved", "does not match its checksum"))
    withTable("stCut")(text => text.take(text.length / 2))(refused("stCut", "cut short"))
    // The format before the checksum (row group lines only) is read unverified.
    withTable("stOld")(_.split('\n').filter(isGroupLine).mkString("", "\n", "\n")) {
      checkSeek(source, lookup, changed = false)
    }
  }
}
