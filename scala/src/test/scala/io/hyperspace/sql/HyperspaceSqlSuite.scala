package io.hyperspace.sql

import org.apache.spark.sql.DataFrame

import io.hyperspace.{HyperspaceException, HyperspaceIndexNotFoundException, HyperspaceSuite}
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping._

class HyperspaceSqlSuite extends HyperspaceSuite {

  private def sql(text: String): DataFrame = spark.sql(text)

  private def names(df: DataFrame): Set[String] = df.collect().map(_.getAs[String]("name")).toSet

  private def stateOf(name: String): String = indexRow(name).getAs[String]("state")

  /** Plan text without expression ids, which differ between two plannings of one query. */
  private def withoutIds(text: String): String = text.replaceAll("#\\d+", "#")

  /** The message of the HyperspaceException `body` throws. */
  private def failure(body: => Any): HyperspaceException = intercept[HyperspaceException](body)

  test("Spark's own statements still parse, including ones that start with Hyperspace's verbs") {
    val path = writeSource("plain")
    assert(sql(s"SELECT COUNT(*) FROM parquet.`$path`").head().getLong(0) == 200)
    sql("CREATE TABLE hyperspace (id INT, `index` INT) USING parquet")
    try {
      // A table named hyperspace: DESCRIBE's third word is not INDEX, so the statement is Spark's.
      assert(sql("DESCRIBE hyperspace").collect().map(_.getString(0)).contains("id"))
      assert(sql("DESCRIBE hyperspace index").head().getString(1) == "index")
      assert(sql("SHOW TABLES").collect().map(_.getString(1)).contains("hyperspace"))
    } finally sql("DROP TABLE hyperspace")
    // Spark 4's CREATE INDEX (for DSv2 SupportsIndex tables) is still Spark's: its error, not ours.
    sql(s"CREATE TABLE plain_t USING parquet LOCATION '$path'")
    try {
      val e = intercept[Exception](sql("CREATE INDEX i ON plain_t (id)"))
      assert(!e.isInstanceOf[HyperspaceException], e.toString)
    } finally sql("DROP TABLE plain_t")
  }

  test("the covering index lifecycle in SQL, each statement answering as the Scala API does") {
    val path = writeSource("lifecycle")
    val created = sql(s"CREATE HYPERSPACE INDEX sqlIdx ON parquet.`$path` (id) INCLUDE (name) " +
      "WITH (numBuckets = 2, lineage = true)")
    assert(created.collect().isEmpty && created.columns.isEmpty)

    val listed = sql("SHOW HYPERSPACE INDEXES").collect().find(_.getAs[String]("name") == "sqlIdx").get
    assert(listed.getSeq[String](listed.fieldIndex("indexedColumns")) == Seq("id"))
    assert(listed.getSeq[String](listed.fieldIndex("includedColumns")) == Seq("name"))
    assert(listed.getAs[Int]("numBuckets") == 2)
    assert(sql("SHOW HYPERSPACE INDEXES").schema == hs.indexes.schema)

    val described = sql("DESCRIBE HYPERSPACE INDEX sqlIdx")
    assert(described.schema == hs.index("sqlIdx").schema)
    assert(described.head().getAs[Boolean]("lineage"))

    val query = s"SELECT name FROM parquet.`$path` WHERE id = 7"
    hs.enable()
    try {
      val plan = sql(s"EXPLAIN HYPERSPACE $query").head().getString(0)
      assert(withoutIds(plan) == withoutIds(hs.explain(sql(query))),
        "EXPLAIN HYPERSPACE must be Hyperspace.explain's text")
      assert(plan.contains("sqlIdx"), plan)
      assert(withoutIds(sql(s"EXPLAIN HYPERSPACE VERBOSE $query").head().getString(0)) ==
        withoutIds(hs.explain(sql(query), verbose = true)))
    } finally hs.disable()

    spark.range(500, 520).selectExpr("id", "CONCAT('name-', id % 17) AS name",
      "CAST(id * 1.5 AS DOUBLE) AS amount", "DATE'2024-01-01' AS day").coalesce(1).write.mode("append").parquet(path)
    val refreshed = sql("REFRESH HYPERSPACE INDEX sqlIdx INCREMENTAL").head()
    assert(refreshed.getAs[String]("operation") == "refresh")
    assert(refreshed.getAs[String]("mode") == "incremental")
    assert(refreshed.getAs[Int]("appendedFiles") == 1)
    assert(refreshed.getAs[Boolean]("changed"))
    assert(sql("REFRESH HYPERSPACE INDEX sqlIdx").head().getAs[Boolean]("changed") === false)

    val optimized = sql("OPTIMIZE HYPERSPACE INDEX sqlIdx FULL;").head()
    assert(optimized.getAs[String]("operation") == "optimize" && optimized.getAs[String]("mode") == "full")

    sql("DROP HYPERSPACE INDEX sqlIdx")
    assert(stateOf("sqlIdx") == "DELETED")
    sql("restore hyperspace index sqlIdx")
    assert(stateOf("sqlIdx") == "ACTIVE")
    sql("DROP HYPERSPACE INDEX `sqlIdx`")
    spark.conf.set("spark.hyperspace.index.vacuum.retentionCheck.enabled", "false")
    try {
      val vacuumed = sql("VACUUM HYPERSPACE INDEX sqlIdx RETAIN 0 HOURS").head()
      assert(vacuumed.getAs[String]("operation") == "vacuum")
    } finally spark.conf.unset("spark.hyperspace.index.vacuum.retentionCheck.enabled")
    assert(!names(sql("SHOW HYPERSPACE INDEXES")).contains("sqlIdx"))
  }

  test("a data skipping index takes every built-in sketch, the same sketches the API builds") {
    val path = writeSource("skipping")
    sql(s"CREATE HYPERSPACE INDEX sqlSkip ON parquet.`$path` USING DATASKIPPING (" +
      "MinMax(id), bloomfilter(lower(name), fpp = 0.05, expectedDistinct = 100), " +
      "ValueList(name, maxValues = 10, fpp = 0.02), PREFIX(name, length = 3), SuffixSketch(name, length = 2), " +
      "NullCount(amount), MINMAX(concat(name, ',', 'x)')))")
    val expected = DataSkippingIndexConfig("sqlSkip", MinMaxSketch("id"),
      BloomFilterSketch("lower(name)", 0.05, Some(100L)), ValueListSketch("name", 10, 0.02),
      PrefixSketch("name", 3), SuffixSketch("name", 2), NullCountSketch("amount"),
      MinMaxSketch("concat(name, ',', 'x)')"))
    val stored = logOf("sqlSkip").latestStable.get.index
    assert(stored.kind == DataSkippingIndex.Kind)
    val listed = sql("SHOW HYPERSPACE INDEXES").collect().find(_.getAs[String]("name") == "sqlSkip").get
    assert(listed.getSeq[String](listed.fieldIndex("indexedColumns")) == expected.sketches.map(_.describe), listed)

    hs.enable()
    try {
      val query = s"SELECT * FROM parquet.`$path` WHERE id = 3"
      val rows = sql(s"SHOW HYPERSPACE SKIPPING STATS FOR $query").collect()
      assert(rows.length == 1 && rows.head.getAs[Int]("filesSkipped") == 2, rows.toSeq)
      assert(RelationSkippingStats.toJson(hs.skippingStats(sql(query))) == rows.head.getAs[String]("detail"))
      sql(query).collect()
      assert(sql("SHOW HYPERSPACE SKIPPING STATS").head().getAs[Int]("filesSkipped") == 2)
    } finally hs.disable()
  }

  test("sources: a catalog table, a temporary view over a file scan, and SHOW INDEXES ON") {
    val path = writeSource("tables")
    spark.read.parquet(path).write.saveAsTable("sql_src")
    try {
      sql("CREATE HYPERSPACE INDEX onTable ON sql_src (id)")
      spark.read.parquet(path).createOrReplaceTempView("src_view")
      sql("CREATE HYPERSPACE INDEX onView ON src_view (name) INCLUDE (id) USING COVERING")
      assert(indexRow("onTable").getAs[String]("sourceTable") == "spark_catalog.default.sql_src")
      assert(indexRow("onView").getAs[scala.collection.Seq[String]]("sourceRootPaths").exists(_.endsWith("/data")))
      assert(names(sql("SHOW HYPERSPACE INDEXES ON sql_src")) == Set("onTable"))
      assert(names(sql(s"SHOW HYPERSPACE INDEXES ON parquet.`$path`")) == Set("onView"))
      assert(names(sql("SHOW HYPERSPACE INDEXES ON src_view")) == Set("onView"))
    } finally {
      sql("DROP TABLE sql_src")
      Seq("onTable", "onView").foreach(hs.deleteIndex)
    }
  }

  test("WHY NOT and WHAT IF answer with the API's reports") {
    val path = writeSource("whynot")
    sql(s"CREATE HYPERSPACE INDEX whyIdx ON parquet.`$path` (name)")
    val query = s"SELECT amount FROM parquet.`$path` WHERE id = 1"
    hs.enable()
    try {
      assert(sql(s"EXPLAIN HYPERSPACE WHY NOT $query").head().getString(0) == hs.whyNot(sql(query)))
      assert(sql(s"EXPLAIN HYPERSPACE WHY NOT INDEX whyIdx $query").head().getString(0) ==
        hs.whyNot(sql(query), "whyIdx"))
      val whatIf = sql(s"EXPLAIN HYPERSPACE WHAT IF INDEX hypo (id) INCLUDE (amount) WITH (numBuckets = 4), " +
        s"INDEX hypo2 (name) WITH cte AS ($query) SELECT * FROM cte").head().getString(0)
      assert(whatIf == hs.whatIf(sql(query), IndexConfig("hypo", Seq("id"), Seq("amount"), Some(4)),
        IndexConfig("hypo2", Seq("name"))))
    } finally {
      hs.disable()
      hs.deleteIndex("whyIdx")
    }
  }

  test("status, index kinds and cancel") {
    val status = sql("SHOW HYPERSPACE STATUS").head()
    assert(status.getAs[String]("systemPath") == hs.systemPath)
    assert(status.getAs[String]("version") == hs.version)
    assert(status.getAs[Boolean]("enabled") == hs.isEnabled)
    assert(sql("SHOW HYPERSPACE INDEX KINDS").collect().map(_.getString(0)).toSeq == hs.indexKinds)
    val path = writeSource("cancel")
    sql(s"CREATE HYPERSPACE INDEX cancelIdx ON parquet.`$path` (id)")
    val viaSql = failure(sql("CANCEL HYPERSPACE INDEX cancelIdx FORCE"))
    val viaApi = failure(hs.cancel("cancelIdx", force = true))
    assert(viaSql.getMessage == viaApi.getMessage)
    hs.deleteIndex("cancelIdx")
  }

  test("errors are the API's HyperspaceExceptions, with the same messages") {
    val notFound = intercept[HyperspaceIndexNotFoundException](sql("REFRESH HYPERSPACE INDEX nope"))
    assert(notFound.getMessage == intercept[HyperspaceIndexNotFoundException](hs.refreshIndex("nope")).getMessage)
    assert(failure(sql("OPTIMIZE HYPERSPACE INDEX nope")).getMessage ==
      failure(hs.optimizeIndex("nope")).getMessage)
    val path = writeSource("errors")
    assert(failure(sql(s"CREATE HYPERSPACE INDEX bad ON parquet.`$path` (nosuch)")).getMessage ==
      failure(hs.createIndex(spark.read.parquet(path), IndexConfig("bad", Seq("nosuch")))).getMessage)
    assert(failure(sql(s"CREATE HYPERSPACE INDEX bad ON parquet.`$path` USING DATASKIPPING (BloomFilter(id, fp = 1))"))
      .getMessage == failure(SketchSerde.create("BloomFilter", "id", Map("fp" -> "1"))).getMessage)
  }

  test("syntax errors name the position and what was expected; bad input names the index") {
    val path = writeSource("syntax")
    val missing = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path`"))
    assert(missing.getMessage.contains("expected (indexed columns), USING DATASKIPPING (sketches)"), missing.getMessage)
    val extra = failure(sql("DROP HYPERSPACE INDEX x y"))
    assert(extra.getMessage.contains("expected the end of the statement but found 'y' at position 24"),
      extra.getMessage)
    val option = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` (id) WITH (buckets = 2)"))
    assert(option.getMessage == "Unknown option 'buckets' of index 'x'; known: numBuckets, lineage.")
    val buckets = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` (id) WITH (numBuckets = 'many')"))
    assert(buckets.getMessage == "numBuckets of index 'x' must be a number; got the string 'many'.")
    // As strict as the API: a number written as a string, an option given twice, a config that is
    // not JSON are each refused with the index named.
    val quoted = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` (id) WITH (numBuckets = '4')"))
    assert(quoted.getMessage == "numBuckets of index 'x' must be a number; got the string '4'.")
    val flag = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` (id) WITH (lineage = 'true')"))
    assert(flag.getMessage == "lineage of index 'x' must be true or false; got the string 'true'.")
    val twice = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` (id) WITH (numBuckets = 2, NUMBUCKETS = 4)"))
    assert(twice.getMessage == "The option 'NUMBUCKETS' of index 'x' is given twice; give it once.")
    val param = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` USING DATASKIPPING " +
        "(BloomFilter(id, fpp = 0.01, fpp = 0.1))"))
    assert(param.getMessage.contains("The parameter 'fpp' of sketch BloomFilter(id) is given twice"), param.getMessage)
    val json =
      failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` USING KIND 'CoveringIndex' CONFIG '{not json'"))
    assert(json.getMessage.startsWith("Index 'x': the CONFIG is not a valid CoveringIndex config ({not json):"),
      json.getMessage)
    val unknown = failure(sql(s"CREATE HYPERSPACE INDEX x ON parquet.`$path` USING KIND 'CoveringIndex' " +
        """CONFIG '{"name":"x","indexedColumns":["id"],"numBucket":4}'"""))
    assert(
      unknown.getMessage.contains("Index 'x': the CONFIG is not a valid CoveringIndex config") &&
        unknown.getMessage.contains("IndexConfig has no field 'numBucket'"), unknown.getMessage)
    assert(!indexDir("x").exists())
    val table = failure(sql("CREATE HYPERSPACE INDEX x ON no_such_table (id)"))
    assert(table.getMessage.startsWith("Cannot create index 'x': cannot read its source no_such_table"))
    assert(failure(sql("CREATE HYPERSPACE INDEX x ON t (id) 'unterminated")).getMessage.contains("unterminated string"))
    assert(failure(sql("DROP HYPERSPACE INDEX x /* open")).getMessage.contains("unterminated comment at position 24"))
  }

  test("the EXPLAIN family takes queries only: a command after it is refused, never run") {
    sql("CREATE TABLE keep_me (id INT) USING parquet")
    try {
      intercept[Exception](sql("EXPLAIN HYPERSPACE DROP TABLE keep_me"))
      assert(spark.catalog.tableExists("keep_me"))
    } finally sql("DROP TABLE keep_me")
  }

  test("a CONFIG in a kind's JSON creates an index of any registered kind") {
    val path = writeSource("kind")
    val config = IndexConfig("kindIdx", Seq("id"), Seq("name"))
    val json =
      """{"name":"kindIdx","indexedColumns":["id"],"includedColumns":["name"],"numBuckets":null,"lineage":null}"""
    sql(s"CREATE HYPERSPACE INDEX kindIdx ON parquet.`$path` USING KIND 'CoveringIndex' CONFIG '$json'")
    assert(indexRow("kindIdx").getAs[scala.collection.Seq[String]]("includedColumns") == config.includedColumns)
    val other =
      failure(sql(s"CREATE HYPERSPACE INDEX otherName ON parquet.`$path` USING KIND 'CoveringIndex' CONFIG '$json'"))
    assert(other.getMessage.contains("the CONFIG names another index, 'kindIdx'"))
    hs.deleteIndex("kindIdx")
  }
}
