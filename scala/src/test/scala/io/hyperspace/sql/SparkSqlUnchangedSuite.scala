package io.hyperspace.sql

import org.apache.spark.sql.Row

import io.hyperspace.{HyperspaceException, HyperspaceSuite}
import io.hyperspace.config.HyperspaceConf

/**
 * With the extension installed, Spark's own SQL answers as it does without it: parameterized
 * statements, statements that start with many spaces or comments, and tables whose names are
 * Hyperspace's words. And a statement that takes workload texts never runs one.
 */
class SparkSqlUnchangedSuite extends HyperspaceSuite {

  private def value(sqlText: String, args: Map[String, Any]): Any = spark.sql(sqlText, args).head().get(0)

  test("named and positional parameters reach Spark's parser") {
    assert(value("SELECT :x AS v", Map("x" -> 70)) == 70)
    assert(spark.sql("SELECT ? AS v", Array[Any](41)).head().getInt(0) == 41)
    assert(spark.sql("SELECT :a + :b AS v", Map("a" -> 1, "b" -> 2)).head().getInt(0) == 3)
    assert(spark.sql("EXECUTE IMMEDIATE 'SELECT ? * 2' USING 21").head().getInt(0) == 42)
    assert(spark.sql("EXECUTE IMMEDIATE 'SELECT :n + 1' USING 69 AS n").head().getInt(0) == 70)
    assert(spark.sql("EXECUTE IMMEDIATE 'SELECT :x AS v' USING :p AS x", Map("p" -> 70)).head().getInt(0) == 70)
  }

  test("a statement led by thousands of spaces or comment lines parses as Spark's does") {
    assert(spark.sql(" " * 20000 + "SELECT 1").head().getInt(0) == 1)
    assert(spark.sql("-- a comment\n" * 5000 + "SELECT 2").head().getInt(0) == 2)
    assert(spark.sql("/* c */ " * 5000 + "SELECT 3").head().getInt(0) == 3)
    // Hyperspace's own statements are found behind the same prefixes.
    assert(spark.sql(" " * 20000 + "SHOW HYPERSPACE INDEXES").schema == hs.indexes.schema)
    assert(spark.sql("-- a comment\n" * 5000 + "SHOW HYPERSPACE INDEXES").schema == hs.indexes.schema)
  }

  test("tables named indexed and hyperspace are Spark's tables") {
    spark.sql("CREATE TABLE indexed (id INT, `index` INT) USING parquet")
    spark.sql("CREATE TABLE hyperspace (id INT, `index` INT) USING parquet")
    spark.sql("CREATE TABLE hs_src USING parquet AS SELECT 1 AS id, 2 AS `index`")
    try {
      spark.sql("INSERT INTO indexed TABLE hs_src")
      spark.sql("INSERT INTO hyperspace TABLE hs_src")
      assert(spark.sql("SELECT * FROM indexed").collect().toSeq == Seq(Row(1, 2)))
      assert(spark.sql("DESCRIBE hyperspace index").head().getString(1) == "index")
      assert(spark.sql("DESCRIBE hyperspace index;").head().getString(1) == "index")
      assert(spark.sql("DESC indexed index").head().getString(1) == "index")
      // Hyperspace's statements still parse beside them.
      assert(spark.sql("SHOW INDEXED TABLES").columns.nonEmpty)
      assert(intercept[HyperspaceException](spark.sql("DESCRIBE HYPERSPACE INDEX nothing_here").collect())
          .getMessage.contains("nothing_here"))
    } finally Seq("indexed", "hyperspace", "hs_src").foreach(t => spark.sql(s"DROP TABLE IF EXISTS $t"))
  }

  test("workload texts are queries: a command given as one is refused and never runs") {
    val path = writeSource("victimSource")
    spark.sql(s"CREATE TABLE victim USING parquet AS SELECT id, name FROM parquet.`$path`")
    val systemPath = spark.conf.get(HyperspaceConf.SYSTEM_PATH.key)
    try {
      hs.createIndex(spark.read.parquet(path), io.hyperspace.index.IndexConfig("keep", Seq("id"), Seq("name")))
      val commands = Seq(
        "DROP TABLE victim",
        "INSERT INTO victim VALUES (9999, 'x')",
        s"SET ${HyperspaceConf.SYSTEM_PATH.key}=/tmp/elsewhere",
        "DROP HYPERSPACE INDEX keep",
        "CACHE TABLE victim")
      commands.foreach { command =>
        val quoted = command.replace("'", "\\'")
        val viaSql = intercept[HyperspaceException](spark.sql(s"SHOW HYPERSPACE RECOMMENDATIONS FOR '$quoted'"))
        assert(viaSql.getMessage.contains("is not a query"), viaSql.getMessage)
        val viaApi = intercept[HyperspaceException](hs.recommendSql(command))
        assert(viaApi.getMessage.contains(command), viaApi.getMessage)
      }
      assert(spark.table("victim").count() == 200)
      assert(spark.conf.get(HyperspaceConf.SYSTEM_PATH.key) == systemPath)
      assert(hs.index("keep").count() == 1)
      assert(!spark.catalog.isCached("victim"))
      // A query is still read, and a text that is no SQL at all gets the parser's reason.
      assert(spark.sql("SHOW HYPERSPACE RECOMMENDATIONS FOR 'SELECT name FROM victim WHERE id = 3'").columns.nonEmpty)
      val garbled = intercept[HyperspaceException](hs.recommendSql("SELEC name FROM victim"))
      assert(garbled.getMessage.contains("cannot be parsed"), garbled.getMessage)
    } finally {
      spark.sql("DROP TABLE IF EXISTS victim")
      scala.util.Try(hs.deleteIndex("keep")); scala.util.Try(hs.vacuumIndex("keep"))
    }
  }
}
