package io.hyperspace.sources

import java.util.UUID
import java.util.function.BiFunction

import org.apache.iceberg.{Schema, Table}
import org.apache.iceberg.data.{GenericRecord, Record}
import org.apache.iceberg.data.parquet.GenericParquetWriter
import org.apache.iceberg.deletes.EqualityDeleteWriter
import org.apache.iceberg.parquet.{Parquet, ParquetValueWriter}
import org.apache.iceberg.shaded.org.apache.parquet.schema.MessageType
import org.apache.iceberg.spark.Spark3Util
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Iceberg merge-on-read row-level deletes (position delete files written by DELETE, UPDATE and
 * MERGE INTO; equality delete files, which only writers other than Spark's write) under indexes,
 * differentially: a data file with delete files is another file than the one indexed (its key
 * names its deletes), read through Iceberg's own scan of it (deletes applied), so deleted rows never
 * come back through an index while the files without deletes are still read from it. Runs only on
 * Spark lines with an Iceberg runtime (build.sbt).
 */
class IcebergDeletesSuite extends RuleTestSupport {

  override protected def withIceberg: Boolean = true

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.hyperspace.index.numBuckets", "4")
    // Ids 0..59 (all in the table's first data file), and 1000..1009 (new).
    spark.range(0, 60).union(spark.range(1000, 1010))
      .selectExpr("CAST(id AS BIGINT) AS id", "CAST(id AS INT) AS k", "CONCAT('new', id) AS v")
      .createOrReplaceTempView("changes")
  }

  /**
   * A merge-on-read format v2 table `ice.db.<name>` of 4 data files, ids 0..99, 100..199,
   * 200..299 and 300..399 (one file each), k spread over 0..22 in every file.
   */
  private def table(name: String): String = {
    val t = s"ice.db.$name"
    spark.sql(s"CREATE TABLE $t (id BIGINT, k INT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2', " +
      "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')")
    spark.range(0, 400, 1, 4).selectExpr("id", "CAST(pmod(hash(id, 7), 23) AS INT) AS k", "CONCAT('v', id) AS v")
      .writeTo(t).append()
    assert(dataFiles(t) == 4)
    t
  }

  private def iceberg(t: String): Table = Spark3Util.loadIcebergTable(spark, t)

  private def dataFiles(t: String): Long = spark.sql(s"SELECT count(*) FROM $t.data_files").head().getLong(0)

  /** The data files of `t` that delete files apply to, by the table's own metadata. */
  private def filesWithDeletes(t: String): Set[String] =
    spark.sql(s"SELECT DISTINCT file_path FROM $t.position_deletes").collect().map(_.getString(0)).toSet

  /** Runs `sql`, asserting it wrote delete files and left at least one data file without any. */
  private def rowLevel(t: String, sql: String): Unit = {
    spark.sql(sql)
    val summary = iceberg(t).currentSnapshot().summary()
    assert(summary.get("added-delete-files").toInt > 0, s"$sql wrote no delete file: $summary")
    val masked = filesWithDeletes(t)
    assert(masked.nonEmpty && masked.size < dataFiles(t), masked)
  }

  private def createIndex(name: String, t: String, lineage: Boolean): Unit =
    hs.createIndex(spark.table(t), IndexConfig(name, Seq("k"), Seq("v", "id"), lineage = Some(lineage)))

  private def lookup(df: DataFrame): DataFrame = df.where("k = 3").select("id", "v")

  /** A lookup, a range, an aggregation, a self-join on the key. */
  private def queries(df: => DataFrame): Seq[() => DataFrame] = Seq(
    () => lookup(df),
    () => df.where("k > 20").select("k", "id"),
    () => df.groupBy("k").count(),
    () => df.where("k < 3").select("k", "v").join(df.where("k < 3").select("k", "id"), "k"))

  private def icebergScans(plan: SparkPlan): Int = plan.collect { case s: BatchScanExec => s }.size

  /**
   * Every query equal with Hyperspace on and off; on, served by `index` (the unchanged files from
   * it, the files with deletes by Iceberg's scan beside it) when `used`. The plan of the lookup
   * (the first query), for what a caller checks of it.
   */
  private def check(t: String, index: String, used: Boolean, what: String): SparkPlan =
    queries(spark.table(t)).map { q =>
      val plan = sameResult(q())
      assert(indexesUsed(plan) == (if (used) Seq(index) else Nil), s"$what: ${plan.treeString}")
      plan
    }.head

  Seq(true, false).foreach { lineage =>
    test(s"merge-on-read DELETE, UPDATE and MERGE INTO never bring deleted rows back (lineage: $lineage)") {
      val name = if (lineage) "mor_l" else "mor_n"
      val t = table(name)
      createIndex(s"i_$name", t, lineage)
      val changes = Seq(
        "delete" -> s"DELETE FROM $t WHERE id < 30 OR id = 150",
        "update" -> s"UPDATE $t SET v = 'updated' WHERE id BETWEEN 150 AND 160",
        "merge" ->
          (s"MERGE INTO $t USING changes c ON $t.id = c.id " +
            "WHEN MATCHED THEN UPDATE SET v = c.v WHEN NOT MATCHED THEN INSERT *"))
      changes.zipWithIndex.foreach { case ((what, sql), i) =>
        rowLevel(t, sql)
        // Without hybrid scan a stale index is not used.
        check(t, s"i_$name", used = false, s"after $what, no hybrid scan")
        // With it, only with lineage (the indexed versions of the files now with deletes are dropped by it).
        withHybridScan {
          val plan = check(t, s"i_$name", used = lineage, s"after $what, hybrid scan")
          if (lineage) {
            // The files without deletes come from the index: one Iceberg scan reads the others.
            assert(icebergScans(plan) == 1, plan.treeString)
          } else {
            val why = hs.whyNot(lookup(spark.table(t)), s"i_$name")
            assert(why.contains("lineage"), why)
          }
        }
        // Without lineage only a full refresh can drop the rows of the files whose deletes changed.
        val mode = if (lineage) Seq("incremental", "quick", "full")(i) else "full"
        if (!lineage) {
          val e = intercept[io.hyperspace.HyperspaceException](hs.refreshIndex(s"i_$name", "incremental"))
          assert(e.getMessage.contains(s"i_$name") && e.getMessage.contains("lineage"), e.getMessage)
        }
        hs.refreshIndex(s"i_$name", mode)
        // The refreshed entry names each file's deletes as planning the snapshot does.
        assert(
          logOf(s"i_$name").latestStable.get.source.currentFiles.map(_.key).sortBy(_.path) ==
            FileSource.of(spark.table(t), s"i_$name").currentFiles, s"after $what and $mode refresh")
        // A quick refresh records the changes, which the index then serves as hybrid scan does.
        check(t, s"i_$name", used = true, s"after $what and $mode refresh")
      }
    }
  }

  test("an index created over a table with delete files holds none of the deleted rows, and serves it") {
    val t = table("after")
    rowLevel(t, s"DELETE FROM $t WHERE id % 7 = 0 AND id < 100")
    createIndex("i_after", t, lineage = true)
    val entry = logOf("i_after").latestStable.get
    val masked = entry.source.files.filter(_.deletionVector.isDefined)
    assert(
      masked.map(f => new org.apache.hadoop.fs.Path(f.path).toUri.getPath).toSet ==
        filesWithDeletes(t).map(p => new org.apache.hadoop.fs.Path(p).toUri.getPath), entry.source.files)
    // The index data holds exactly the table's live rows.
    val data = spark.read.parquet(entry.content.files.map(entry.content.pathOf): _*)
    assert(data.where("id % 7 = 0 AND id < 100").count() == 0)
    assert(data.count() == spark.table(t).count())
    check(t, "i_after", used = true, "at the indexed snapshot")
    // More deletes on the same file: its deletes changed, it is another file.
    rowLevel(t, s"DELETE FROM $t WHERE id = 50")
    check(t, "i_after", used = false, "after another delete")
    withHybridScan(check(t, "i_after", used = true, "after another delete, hybrid scan"))
    hs.refreshIndex("i_after", "incremental")
    check(t, "i_after", used = true, "after another delete and refresh")
  }

  test("compaction applying delete files: hybrid scan, then refresh, equal results") {
    val t = table("compacted")
    createIndex("i_compacted", t, lineage = true)
    rowLevel(t, s"DELETE FROM $t WHERE id < 40")
    rowLevel(t, s"UPDATE $t SET v = 'updated' WHERE id BETWEEN 320 AND 330")
    // Rewrites only the files with at least one delete file, applying the deletes.
    spark.sql(s"CALL ice.system.rewrite_data_files(table => 'db.compacted', " +
      "options => map('delete-file-threshold', '1', 'min-input-files', '1'))").collect()
    assert(iceberg(t).currentSnapshot().operation() == "replace")
    // Planned, no file has delete files any more (the position_deletes table may still list
    // dangling ones, of files the rewrite removed).
    assert(FileSource.of(spark.table(t), "i_compacted").currentFiles.forall(_.deletionVector.isEmpty))
    check(t, "i_compacted", used = false, "after compaction, no hybrid scan")
    withHybridScan(check(t, "i_compacted", used = true, "after compaction, hybrid scan"))
    hs.refreshIndex("i_compacted", "incremental")
    check(t, "i_compacted", used = true, "after compaction and refresh")
  }

  /**
   * Commits an equality delete file deleting the rows of `t` whose id is one of `ids`, written with
   * Iceberg's generic Parquet writer as engines that write equality deletes (Flink, streaming
   * upserts) do: Spark's Iceberg writes only position deletes and deletion vectors.
   */
  private def equalityDelete(t: String, ids: Seq[Long]): Unit = {
    val table = iceberg(t)
    val schema = table.schema().select("id")
    val out =
      table.io().newOutputFile(table.locationProvider().newDataLocation(s"eq-delete-${UUID.randomUUID()}.parquet"))
    val writerOf = new BiFunction[Schema, MessageType, ParquetValueWriter[_]] {
      override def apply(s: Schema, m: MessageType): ParquetValueWriter[_] = GenericParquetWriter.create(s, m)
    }
    val writer: EqualityDeleteWriter[Record] = Parquet.writeDeletes(out).forTable(table).rowSchema(schema)
      .createWriterFunc(writerOf).overwrite().equalityFieldIds(schema.findField("id").fieldId())
      .withSpec(table.spec()).buildEqualityWriter[Record]()
    try ids.foreach { id =>
        val row = GenericRecord.create(schema)
        row.setField("id", id)
        writer.write(row)
      }
    finally writer.close()
    table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()
    val summary = table.currentSnapshot().summary()
    assert(summary.get("added-equality-delete-files") == "1", summary)
  }

  /** The table's data files with and without delete files, as planning its snapshot gives them. */
  private def withAndWithoutDeletes(t: String): (Seq[FileKey], Seq[FileKey]) =
    FileSource.of(spark.table(t), "planning").currentFiles.partition(_.deletionVector.isDefined)

  test("equality delete files: same rows with the index and without; files without deletes still read from it") {
    val t = table("eq")
    createIndex("i_eq", t, lineage = true)
    // Iceberg applies an equality delete to the older data files whose id bounds overlap the delete
    // file's (5 to 250): the first three files, not the fourth (ids 300 to 399).
    equalityDelete(t, Seq(5L, 17L, 250L))
    assert(spark.table(t).where("id IN (5, 17, 250)").count() == 0)
    val (masked, plain) = withAndWithoutDeletes(t)
    assert(masked.nonEmpty && plain.nonEmpty, (masked, plain))
    check(t, "i_eq", used = false, "after an equality delete, no hybrid scan")
    withHybridScan {
      val plan = check(t, "i_eq", used = true, "after an equality delete, hybrid scan")
      // The files without deletes come from the index: one Iceberg scan reads the others.
      assert(icebergScans(plan) == 1, plan.treeString)
    }
    // A refresh indexes the files with deletes as Iceberg reads them (deletes applied).
    val refreshed = hs.refreshIndex("i_eq", "incremental")
    assert(refreshed.appendedFiles == masked.size && refreshed.deletedFiles == masked.size, refreshed.message)
    check(t, "i_eq", used = true, "after an equality delete and refresh")
    // An index created over the table now holds none of the deleted rows.
    createIndex("i_eq_after", t, lineage = false)
    val entry = logOf("i_eq_after").latestStable.get
    val data = spark.read.parquet(entry.content.files.map(entry.content.pathOf): _*)
    assert(data.where("id IN (5, 17, 250)").count() == 0 && data.count() == spark.table(t).count())
    hs.deleteIndex("i_eq")
    check(t, "i_eq_after", used = true, "an index created after the equality delete")
    // Data appended after the equality delete is not deleted by it, even where its ids match.
    spark.range(5, 6).selectExpr("id", "CAST(pmod(hash(id, 7), 23) AS INT) AS k", "'again' AS v").writeTo(t).append()
    assert(spark.table(t).where("id = 5").count() == 1)
    withHybridScan(queries(spark.table(t)).foreach(q => sameResult(q())))
    hs.refreshIndex("i_eq_after", "full")
    check(t, "i_eq_after", used = true, "after an append and full refresh")
  }

  test("time travel to a snapshot before the deletes is served by the index built then") {
    val t = table("travel")
    val before = iceberg(t).currentSnapshot().snapshotId()
    createIndex("i_travel", t, lineage = true)
    rowLevel(t, s"DELETE FROM $t WHERE id % 3 = 0 AND id >= 300")
    hs.refreshIndex("i_travel", "incremental")
    val old = () => lookup(spark.read.option("versionAsOf", before.toString).table(t))
    val plan = sameResult(old())
    assert(indexesUsed(plan) == Seq("i_travel"), plan.treeString)
    val now = sameResult(lookup(spark.table(t)))
    assert(indexesUsed(now) == Seq("i_travel"), now.treeString)
    assert(entriesUsed(plan) != entriesUsed(now))
  }
}
