package io.hyperspace.indexed

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}

import io.hyperspace._

/**
 * Indexed tables from SQL: CACHE INDEXED TABLE, INSERT INTO INDEXED TABLE, UNCACHE INDEXED
 * TABLE, SHOW INDEXED TABLES; the table is then queried by name and lookups and joins use the
 * index, with the rows of the same queries over a plain table.
 */
class IndexedSqlSuite extends SparkSessionSuite {

  private def rows(df: DataFrame): Seq[String] =
    df.collect().map((r: Row) => r.toSeq.map(String.valueOf).mkString("|")).toSeq.sorted

  private def executedNodes(df: DataFrame): Seq[SparkPlan] = {
    def flatten(p: SparkPlan): Seq[SparkPlan] = p match {
      case a: AdaptiveSparkPlanExec => flatten(a.executedPlan)
      case q: QueryStageExec => flatten(q.plan)
      case other => other +: other.children.flatMap(flatten)
    }
    df.collect()
    flatten(df.queryExecution.executedPlan)
  }

  private val sourceSql =
    "SELECT CASE WHEN id % 97 = 0 THEN NULL ELSE id % 500 END AS k, concat('s', id) AS s FROM range(3000)"

  test("LOOKUP INDEXED TABLE returns the rows of a filter, for every version, with typed keys") {
    spark.sql(s"CREATE OR REPLACE TEMPORARY VIEW lk_plain AS $sourceSql")
    spark.sql(s"CACHE INDEXED TABLE lk ON (k) PARTITIONS 4 AS $sourceSql")
    try {
      def same(keys: String, condition: String): Unit =
        assert(rows(spark.sql(s"LOOKUP INDEXED TABLE lk KEYS ($keys)")) ==
            rows(spark.sql(s"SELECT * FROM lk_plain WHERE $condition")), keys)
      same("42", "k = 42")
      same("1, 2, 2, 499, 7777, NULL", "k IN (1, 2, 499)")
      same("CAST(3 AS SMALLINT), 4L", "k IN (3, 4)")
      same("7.5", "k = 7.5")
      assert(spark.sql("LOOKUP INDEXED TABLE lk KEYS (NULL)").collect().isEmpty)
      assert(spark.sql("LOOKUP INDEXED TABLE lk KEYS (1)").schema.fieldNames.toSeq == Seq("k", "s"))
      spark.sql("INSERT INTO INDEXED TABLE lk SELECT 42L AS k, 'new' AS s")
      spark.sql(s"CREATE OR REPLACE TEMPORARY VIEW lk_plain AS $sourceSql UNION ALL SELECT 42L, 'new'")
      same("42, 43", "k IN (42, 43)")

      val missing = intercept[Exception](spark.sql("LOOKUP INDEXED TABLE nope KEYS (1)").collect())
      assert(missing.getMessage.contains("'nope'") && missing.getMessage.contains("lk"), missing.getMessage)
      val notValues = intercept[HyperspaceException](spark.sql("LOOKUP INDEXED TABLE lk KEYS (1 FROM lk_plain)"))
      assert(notValues.getMessage.contains("'lk'"), notValues.getMessage)
      val badValue = intercept[HyperspaceException](spark.sql("LOOKUP INDEXED TABLE lk KEYS ('seven')").collect())
      assert(badValue.getMessage.contains("'k'"), badValue.getMessage)
    } finally spark.sql("UNCACHE INDEXED TABLE IF EXISTS lk")

    spark.sql("CACHE INDEXED TABLE lk_dates ON (d) PARTITIONS 3 AS " +
      "SELECT date_add(DATE '2024-01-01', CAST(id % 30 AS INT)) AS d, CAST(id % 11 AS DECIMAL(8, 2)) AS a, " +
      "concat('v', id % 40) AS v FROM range(500)")
    spark.sql("CACHE INDEXED TABLE lk_dec ON (a) PARTITIONS 3 AS SELECT * FROM lk_dates")
    spark.sql("CACHE INDEXED TABLE lk_str ON (v) PARTITIONS 3 AS SELECT * FROM lk_dates")
    try {
      Seq(
        "lk_dates" -> ("DATE '2024-01-07', DATE '1999-01-01'", "d IN (DATE '2024-01-07')"),
        "lk_dec" -> ("3.00, 4", "a IN (3, 4)"),
        "lk_str" -> ("'v7', 'nope'", "v = 'v7'")).foreach { case (table, (keys, condition)) =>
        val found = rows(spark.sql(s"LOOKUP INDEXED TABLE $table KEYS ($keys)"))
        assert(found.nonEmpty && found == rows(spark.sql(s"SELECT * FROM lk_dates WHERE $condition")), table)
      }
    } finally Seq("lk_dates", "lk_dec", "lk_str").foreach(t => spark.sql(s"UNCACHE INDEXED TABLE IF EXISTS $t"))
  }

  test("cache, query, append, show and uncache an indexed table from SQL") {
    spark.sql(s"CREATE OR REPLACE TEMPORARY VIEW plain_src AS $sourceSql")
    val created = spark.sql(s"CACHE INDEXED TABLE edges ON (k) PARTITIONS 4 AS $sourceSql").collect()
    assert(created.toSeq == Seq(Row("edges", "k", 0, 4, 3000L, 4L)))
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW probe AS SELECT id * 3 AS pk FROM range(100)")

    def check(q: String): Seq[SparkPlan] = {
      val indexed = spark.sql(q.replace("%s", "edges"))
      assert(rows(indexed) == rows(spark.sql(q.replace("%s", "plain_src"))), q)
      executedNodes(indexed)
    }
    assert(check("SELECT * FROM %s WHERE k = 42").exists(_.isInstanceOf[IndexedLookupExec]))
    assert(check("SELECT * FROM %s WHERE k IN (1, 2, 499)").exists(_.isInstanceOf[IndexedLookupExec]))
    assert(check("SELECT e.s, p.pk FROM probe p JOIN %s e ON e.k = p.pk")
        .exists(_.isInstanceOf[IndexedJoinExec]))
    assert(executedNodes(spark.table("edges").filter("k = 7")).exists(_.isInstanceOf[IndexedLookupExec]))

    val appended = spark.sql("INSERT INTO INDEXED TABLE edges SELECT 42L AS k, 'new' AS s").collect()
    assert(appended.toSeq == Seq(Row("edges", "k", 1, 4, 3001L, 4L)))
    spark.sql(s"CREATE OR REPLACE TEMPORARY VIEW plain_src AS $sourceSql UNION ALL SELECT 42L, 'new'")
    assert(check("SELECT * FROM %s WHERE k = 42").exists(_.isInstanceOf[IndexedLookupExec]))
    // The previous version's blocks are released; only the newest version stays cached.
    val cachedVersions = spark.sparkContext.getPersistentRDDs.values.count(_.name.contains("IndexedDataFrame"))
    assert(cachedVersions == 1, spark.sparkContext.getPersistentRDDs.values.map(_.name))

    assert(spark.sql("SHOW INDEXED TABLES").collect().map(_.getString(0)).toSeq == Seq("edges"))
    spark.sql("UNCACHE INDEXED TABLE edges")
    assert(spark.sql("SHOW INDEXED TABLES").collect().isEmpty)
    assert(!spark.catalog.tableExists("edges"))
    assert(!spark.sparkContext.getPersistentRDDs.values.exists(_.name.contains("IndexedDataFrame")))
    val e = intercept[HyperspaceException](spark.sql("UNCACHE INDEXED TABLE edges"))
    assert(e.getMessage.contains("'edges'"), e.getMessage)
    spark.sql("UNCACHE INDEXED TABLE IF EXISTS edges")
  }

  test("CACHE INDEXED TABLE without AS indexes the table or view of that name") {
    spark.sql(s"CREATE OR REPLACE TEMPORARY VIEW users AS $sourceSql")
    val expected = rows(spark.sql("SELECT * FROM users WHERE k = 3"))
    spark.sql("CACHE INDEXED TABLE users ON (k)")
    try {
      val found = spark.sql("SELECT * FROM users WHERE k = 3")
      assert(rows(found) == expected)
      assert(executedNodes(found).exists(_.isInstanceOf[IndexedLookupExec]))
      assert(IndexedTables.find(spark, "users").exists(_.numPartitions == 4))
    } finally spark.sql("UNCACHE INDEXED TABLE users")
  }

  test("bad statements fail with the table or column named, and change nothing") {
    val unknown = intercept[HyperspaceException](
      spark.sql(s"CACHE INDEXED TABLE bad ON (nope) AS $sourceSql"))
    assert(unknown.getMessage.contains("'nope'"), unknown.getMessage)
    assert(!spark.catalog.tableExists("bad"))
    val two = intercept[HyperspaceException](spark.sql(s"CACHE INDEXED TABLE bad ON (k, s) AS $sourceSql"))
    assert(two.getMessage.contains("'bad'") && two.getMessage.contains("one key column"))
    spark.sql(s"CACHE INDEXED TABLE once ON (k) AS $sourceSql")
    try {
      val again = intercept[HyperspaceException](spark.sql(s"CACHE INDEXED TABLE once ON (k) AS $sourceSql"))
      assert(again.getMessage.contains("'once'"), again.getMessage)
      val badRows = intercept[HyperspaceException](
        spark.sql("INSERT INTO INDEXED TABLE once SELECT 'x' AS other"))
      assert(badRows.getMessage.contains("'other'"), badRows.getMessage)
      assert(IndexedTables.find(spark, "once").exists(_.version == 0))
    } finally spark.sql("UNCACHE INDEXED TABLE once")
    val missing = intercept[HyperspaceException](spark.sql("INSERT INTO INDEXED TABLE nothing SELECT 1"))
    assert(missing.getMessage.contains("'nothing'"), missing.getMessage)
    val syntax = intercept[HyperspaceException](spark.sql("CACHE INDEXED TABLE x (k)"))
    assert(syntax.getMessage.contains("ON"), syntax.getMessage)
    // Spark's own CACHE TABLE and INSERT INTO are untouched.
    spark.sql("CACHE TABLE plain_cached AS SELECT 1 AS a")
    assert(spark.table("plain_cached").count() == 1)
    spark.sql("UNCACHE TABLE plain_cached")
  }
}
