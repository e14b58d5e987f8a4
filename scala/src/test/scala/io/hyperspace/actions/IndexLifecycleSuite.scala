package io.hyperspace.actions

import java.io.File

import org.apache.spark.sql.execution.datasources.BucketingUtils
import org.apache.spark.sql.functions.{col, input_file_name, udf}

import io.hyperspace.{HyperspaceException, HyperspaceIndexNotFoundException, HyperspaceSuite}
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.{Signature, States}

class IndexLifecycleSuite extends HyperspaceSuite {

  test("create writes a bucketed, sorted Parquet index and an ACTIVE log entry") {
    val path = writeSource("create")
    hs.createIndex(spark.read.parquet(path), IndexConfig("byName", Seq("name"), Seq("amount")))

    assert(states("byName") == Seq(States.CREATING, States.ACTIVE))
    val entry = logOf("byName").latestStable.get
    assert(entry.operation == Operations.CREATE && entry.enabled)
    assert(entry.index.indexedColumns == Seq("name") && entry.index.includedColumns == Seq("amount"))
    assert(entry.index.numBuckets == 4 && !entry.index.lineage)
    assert(entry.source.format == "parquet" && entry.source.files.size == 3)
    assert(entry.source.files.map(_.id) == Seq(0L, 1L, 2L))
    assert(entry.signature == Signature.of(entry.source.files))
    assert(entry.content.dataVersion == 0 && versionDirs("byName") == Seq("v__=0"))

    // One file per bucket, each holding exactly its bucket's rows, sorted by the indexed column.
    val files = entry.content.files.map(_.path)
    assert(files.size == 4)
    assert(files.flatMap(BucketingUtils.getBucketId).sorted == Seq(0, 1, 2, 3))
    val bucketOf = udf((p: String) => BucketingUtils.getBucketId(new org.apache.hadoop.fs.Path(p).getName).get)
    val data = readIndexData("byName")
      .select(col("name"), col("amount"), bucketOf(input_file_name()).as("file_bucket"))
      .selectExpr("*", "hyperspace_bucket_id(4, name) AS bucket")
    assert(data.count() == 200)
    assert(data.where("bucket != file_bucket").count() == 0)
    val perFile = data.collect().groupBy(_.getAs[Int]("file_bucket"))
    perFile.values.foreach { rows =>
      val names = rows.map(_.getAs[String]("name")).toSeq
      assert(names == names.sorted, "rows must be sorted by the indexed column within a bucket")
    }
    assert(data.drop("file_bucket", "bucket").collect().toSet ==
      spark.read.parquet(path).select("name", "amount").collect().toSet)
  }

  test("indexes() and index(name) report the index") {
    val path = writeSource("report")
    hs.createIndex(spark.read.parquet(path), IndexConfig("reported", Seq("id"), Seq("name")))
    val row = hs.indexes.where("name = 'reported'").collect().head
    assert(hs.indexes.columns.toSeq == Seq("name", "kind", "indexedColumns", "includedColumns",
      "numBuckets", "state", "indexLocation", "sizeInBytes", "numIndexFiles", "numSourceFiles",
      "appendedFiles", "deletedFiles", "lastModified", "stateReason", "indexRoot", "additionalStats"))
    assert(row.getAs[String]("kind") == "CoveringIndex")
    assert(row.getSeq[String](row.fieldIndex("indexedColumns")) == Seq("id"))
    assert(row.getSeq[String](row.fieldIndex("includedColumns")) == Seq("name"))
    assert(row.getAs[Int]("numBuckets") == 4)
    assert(row.getAs[String]("state") == "ACTIVE")
    assert(row.getAs[String]("indexRoot").endsWith("/indexes/reported"))
    assert(row.getAs[String]("indexLocation").endsWith("/indexes/reported/v__=0"))
    val dataFiles = new File(indexDir("reported"), "v__=0").listFiles().filter(_.getName.endsWith(".parquet"))
    assert(row.getAs[Long]("sizeInBytes") == dataFiles.map(_.length()).sum)
    assert(row.getAs[Int]("numIndexFiles") == dataFiles.length)
    assert(row.getAs[Int]("numSourceFiles") == 3)

    val extended = indexRow("reported")
    assert(extended.getAs[Int]("dataVersion") == 0)
    assert(extended.getAs[Long]("logVersion") == 1L)
    assert(extended.getAs[String]("sourceFormat") == "parquet")
    assert(!extended.getAs[Boolean]("lineage"))
    assert(extended.getAs[String]("signature").length == 32)
  }

  test("delete, restore and vacuum walk the state machine") {
    val path = writeSource("walk")
    hs.createIndex(spark.read.parquet(path), IndexConfig("walk", Seq("id")))
    hs.deleteIndex("walk")
    assert(states("walk").takeRight(2) == Seq(States.DELETING, States.DELETED))
    assert(!logOf("walk").latestStable.get.enabled)
    assert(indexRow("walk").getAs[String]("state") == "DELETED")
    assert(versionDirs("walk") == Seq("v__=0"), "a soft delete keeps the data")

    hs.restoreIndex("walk")
    assert(states("walk").takeRight(2) == Seq(States.RESTORING, States.ACTIVE))
    assert(logOf("walk").latestStable.get.enabled)

    hs.deleteIndex("walk")
    vacuumNow("walk")
    assert(!indexDir("walk").exists(), "vacuuming a deleted index removes it entirely")
    assert(hs.indexes.where("name = 'walk'").count() == 0)
    // The name is free again.
    hs.createIndex(spark.read.parquet(path), IndexConfig("walk", Seq("name")))
    assert(logOf("walk").latestStable.get.index.indexedColumns == Seq("name"))
  }

  test("vacuum of an ACTIVE index removes data versions it does not use") {
    val path = writeSource("vacuum-active")
    hs.createIndex(spark.read.parquet(path), IndexConfig("va", Seq("id")))
    // What a killed refresh that was cancelled may leave behind: a data directory only its
    // transient entry names (no query ever read it, so it goes at once, whatever the retention).
    val log = logOf("va")
    val base = log.latestStable.get
    val stuck = base.next(States.REFRESHING, Operations.REFRESH)
    assert(log.tryAppend(stuck.copy(content = stuck.content.copy(dataVersion = 7))))
    val rolledBack = base.copy(id = stuck.id + 1, operation = Operations.CANCEL)
    assert(log.tryAppend(rolledBack))
    log.setLatestStable(rolledBack.id)
    val orphan = new File(indexDir("va"), "v__=7")
    orphan.mkdirs()
    new File(orphan, "part-00000_00000.c000.snappy.parquet").createNewFile()
    // A version directory no entry names is not the index's: it stays.
    val foreign = new File(indexDir("va"), "v__=8")
    foreign.mkdirs()
    hs.vacuumIndex("va")
    assert(versionDirs("va") == Seq("v__=0", "v__=8"))
    assert(states("va").takeRight(2) == Seq(States.VACUUMING, States.ACTIVE))
    assert(readIndexData("va").count() == 200, "the index itself is untouched")
  }

  test("numBuckets and lineage are taken from the session at creation and stored") {
    val path = writeSource("stored")
    spark.conf.set("spark.hyperspace.index.numBuckets", "3")
    spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
    try hs.createIndex(spark.read.parquet(path), IndexConfig("stored", Seq("id")))
    finally {
      spark.conf.set("spark.hyperspace.index.numBuckets", "4")
      spark.conf.unset("spark.hyperspace.index.lineage.enabled")
    }
    val entry = logOf("stored").latestStable.get
    assert(entry.index.numBuckets == 3 && entry.index.lineage)
    assert(entry.content.files.size == 3)
    hs.createIndex(spark.read.parquet(path),
      IndexConfig("explicit", Seq("id"), numBuckets = Some(2), lineage = Some(false)))
    assert(logOf("explicit").latestStable.get.index.numBuckets == 2)
  }

  test("lineage records each row's source file id") {
    val path = writeSource("lineage", rows = 300, files = 4)
    hs.createIndex(spark.read.parquet(path), IndexConfig("lin", Seq("id"), Seq("name"), lineage = Some(true)))
    val entry = logOf("lin").latestStable.get
    val idOfFile = entry.source.files.map(f => f.path -> f.id).toMap
    val expected = spark.read.parquet(path).select(col("id"), col("_metadata.file_path").as("f"))
      .collect().map(r => r.getLong(0) -> idOfFile(r.getString(1))).toMap
    val actual = readIndexData("lin").select("id", "_data_file_id").collect()
      .map(r => r.getLong(0) -> r.getLong(1)).toMap
    assert(actual.size == 300 && actual == expected)
    assert(entry.index.schema.contains("_data_file_id"))
  }

  test("csv, json and orc sources, hive partitions and catalog tables can be indexed") {
    val base = newDir("formats").getAbsolutePath
    val df = spark.range(0, 60).selectExpr("id", "CAST(id % 3 AS STRING) AS part", "CONCAT('v', id) AS v")
    df.write.option("header", "true").csv(s"$base/csv")
    df.write.json(s"$base/json")
    df.write.orc(s"$base/orc")
    df.write.partitionBy("part").parquet(s"$base/partitioned")
    df.write.saveAsTable("catalog_source")

    hs.createIndex(spark.read.option("header", "true").csv(s"$base/csv"), IndexConfig("csvIdx", Seq("id"), Seq("v")))
    hs.createIndex(spark.read.json(s"$base/json"), IndexConfig("jsonIdx", Seq("v")))
    hs.createIndex(spark.read.orc(s"$base/orc"), IndexConfig("orcIdx", Seq("id")))
    hs.createIndex(spark.read.parquet(s"$base/partitioned"), IndexConfig("partIdx", Seq("id"), Seq("part")))
    hs.createIndex(spark.table("catalog_source"), IndexConfig("tableIdx", Seq("id"), Seq("v")))

    assert(logOf("csvIdx").latestStable.get.source.options.get("header").contains("true"))
    assert(logOf("jsonIdx").latestStable.get.source.format == "json")
    assert(logOf("orcIdx").latestStable.get.source.format == "orc")
    val part = logOf("partIdx").latestStable.get
    assert(part.source.partitionSchema.contains("part"))
    assert(readIndexData("partIdx").select("id", "part").collect().toSet ==
        spark.read.parquet(s"$base/partitioned").select("id", "part").collect().toSet,
      "partition column values must be indexed correctly")
    val table = logOf("tableIdx").latestStable.get
    assert(table.source.table.exists(_.endsWith("catalog_source")))
    assert(readIndexData("tableIdx").count() == 60)
    assert(readIndexData("csvIdx").count() == 60)
  }

  test("columns are matched by the session's case sensitivity and stored as the source spells them") {
    val path = writeSource("case")
    hs.createIndex(spark.read.parquet(path), IndexConfig("caseIdx", Seq("NAME"), Seq("Amount")))
    assert(logOf("caseIdx").latestStable.get.index.indexedColumns == Seq("name"))
    spark.conf.set("spark.sql.caseSensitive", "true")
    try {
      val e = intercept[HyperspaceException](
        hs.createIndex(spark.read.parquet(path), IndexConfig("caseIdx2", Seq("NAME"))))
      assert(e.getMessage.contains("Column 'NAME' of index 'caseIdx2' is not in the source"))
    } finally spark.conf.set("spark.sql.caseSensitive", "false")
  }

  private def assertRejected(config: IndexConfig, message: String, df: => org.apache.spark.sql.DataFrame = null)
      : Unit = {
    val source = Option(df).getOrElse(spark.read.parquet(writeSource("bad")))
    val before = Option(systemPath.list()).map(_.toSet).getOrElse(Set.empty)
    val e = intercept[HyperspaceException](hs.createIndex(source, config))
    assert(e.getMessage.contains(message), e.getMessage)
    val after = Option(systemPath.list()).map(_.toSet).getOrElse(Set.empty)
    assert(after == before, s"nothing may be written for a rejected index: ${after -- before}")
  }

  test("bad names are rejected before anything is written") {
    assertRejected(IndexConfig("", Seq("id")), "the name is empty")
    assertRejected(IndexConfig("a/b", Seq("id")), "path separator")
    assertRejected(IndexConfig("a\\b", Seq("id")), "path separator")
    assertRejected(IndexConfig("..", Seq("id")), "'..'")
    assertRejected(IndexConfig("x..y", Seq("id")), "'..'")
    assertRejected(IndexConfig("bad\u0001name", Seq("id")), "control characters")
    assertRejected(IndexConfig("n" * 256, Seq("id")), "at most 255")
    assertRejected(IndexConfig(".hidden", Seq("id")), "starts with '.' or '_'")
  }

  test("bad columns, types, sources and bucket counts are rejected before anything is written") {
    assertRejected(IndexConfig("c1", Seq("nope")),
      "Column 'nope' of index 'c1' is not in the source; its columns are id, name, amount, day")
    assertRejected(IndexConfig("c2", Nil), "needs at least one indexed column")
    assertRejected(IndexConfig("c3", Seq("id"), Seq("ID")), "Column 'id' appears more than once")
    assertRejected(IndexConfig("c4", Seq("id", "id")), "appears more than once")
    assertRejected(IndexConfig("c5", Seq("id"), numBuckets = Some(0)),
      "spark.hyperspace.index.numBuckets: must be between 1 and 100000")
    val nested = newDir("nested").getAbsolutePath + "/data"
    spark.range(3).selectExpr("id", "array(id) AS arr", "map('k', id) AS m").write.parquet(nested)
    assertRejected(IndexConfig("c6", Seq("arr")), "Column 'arr' of type array<bigint> cannot be an indexed column",
      spark.read.parquet(nested))
    assertRejected(IndexConfig("c7", Seq("id"), Seq("arr.x")), "'arr' is an array, not a struct",
      spark.read.parquet(nested))
    assertRejected(IndexConfig("c8", Seq("id")), "not a plain scan of files",
      spark.read.parquet(nested).where("id > 1"))
    assertRejected(IndexConfig("c9", Seq("id")), "not a plain scan of files", spark.range(10).toDF())
    assertRejected(IndexConfig("c10", Seq("id")), "catalog tables, with no further transformation",
      spark.range(10).toDF())
  }

  test("an existing name is rejected, case-insensitively") {
    val path = writeSource("dup")
    hs.createIndex(spark.read.parquet(path), IndexConfig("Dup", Seq("id")))
    val e1 = intercept[HyperspaceException](hs.createIndex(spark.read.parquet(path), IndexConfig("Dup", Seq("id"))))
    assert(e1.getMessage == "Index 'Dup' already exists (state ACTIVE).")
    val e2 = intercept[HyperspaceException](hs.createIndex(spark.read.parquet(path), IndexConfig("dUP", Seq("id"))))
    assert(e2.getMessage.contains("already exists as 'Dup'"))
    hs.deleteIndex("Dup")
    val e3 = intercept[HyperspaceException](hs.createIndex(spark.read.parquet(path), IndexConfig("Dup", Seq("id"))))
    assert(e3.getMessage.contains("is DELETED: restore it"))
    assert(states("Dup") == Seq(States.CREATING, States.ACTIVE, States.DELETING, States.DELETED))
  }

  test("unknown indexes and forbidden transitions give clear errors and write nothing") {
    val path = writeSource("forbidden")
    for (op <- Seq[String => Unit](hs.deleteIndex, hs.restoreIndex, (n: String) => { hs.vacuumIndex(n); () })) {
      val e = intercept[HyperspaceIndexNotFoundException](op("ghost"))
      assert(e.getMessage.startsWith("Index 'ghost' does not exist"))
    }
    intercept[HyperspaceIndexNotFoundException](hs.index("ghost"))
    intercept[HyperspaceIndexNotFoundException](hs.cancel("ghost"))

    hs.createIndex(spark.read.parquet(path), IndexConfig("fb", Seq("id")))
    val active = entries("fb").size
    val restoreActive = intercept[HyperspaceException](hs.restoreIndex("fb"))
    assert(
      restoreActive.getMessage == "Cannot restore index 'fb': it is ACTIVE; restore needs DELETED. It is not deleted.")
    val cancelStable = intercept[HyperspaceException](hs.cancel("fb"))
    assert(cancelStable.getMessage == "Index 'fb' has no unfinished operation to cancel (it is ACTIVE).")
    assert(entries("fb").size == active)

    hs.deleteIndex("fb")
    val deleted = entries("fb").size
    val deleteTwice = intercept[HyperspaceException](hs.deleteIndex("fb"))
    assert(
      deleteTwice.getMessage == "Cannot delete index 'fb': it is DELETED; delete needs ACTIVE. It is already deleted.")
    assert(entries("fb").size == deleted)
  }

  test("a failed build rolls back to the previous state and removes its data") {
    val path = writeSource("failing")
    val df = spark.read.parquet(path)
    // A source file that is not Parquet makes the data write fail after the CREATING entry.
    val failing = IndexConfig("failing", Seq("id"))
    val victim = new File(path).listFiles().filter(_.getName.endsWith(".parquet")).head
    java.nio.file.Files.write(victim.toPath, "not parquet at all".getBytes)
    intercept[Exception](hs.createIndex(df, failing))
    assert(states("failing") == Seq(States.CREATING, States.DOESNOTEXIST))
    assert(versionDirs("failing").isEmpty)
    assert(hs.indexes.where("name = 'failing'").count() == 0)
    assert(logOf("failing").entry(1).get.extra.contains("failure"))
    // The name is usable.
    hs.createIndex(spark.read.parquet(writeSource("failing2")), failing)
    assert(logOf("failing").latestStable.get.state == States.ACTIVE)
    assert(versionDirs("failing") == Seq("v__=1"), "a new build never reuses a failed build's version")
  }
}
