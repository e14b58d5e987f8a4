package io.hyperspace.sql

import scala.util.Try

import org.apache.spark.sql.execution.SparkSqlParser

import io.hyperspace.HyperspaceSuite

/**
 * The parser entry points Spark 4.3 added reach Spark's parser through the extension's: a
 * multi-statement text is cut as Spark cuts it, and a table name with a time-travel suffix
 * (`t@v3`, `t@<yyyyMMddHHmmssSSS>`) keeps it (the interface's default for it would read the name
 * parts only, and fail on the suffix).
 */
class ParserEntryPoints43Suite extends HyperspaceSuite {

  private lazy val ours = spark.sessionState.sqlParser
  private lazy val sparks = new SparkSqlParser()

  private def outcome[T](parse: => T): String = Try(parse).fold(e => e.getClass.getName, _.toString)

  test("the session parses through Hyperspace's parser") {
    assert(ours.isInstanceOf[HyperspaceSqlParser], ours.getClass.getName)
  }

  test("splitStatements cuts a text as Spark's parser does, Hyperspace statements included") {
    val texts = Seq("SELECT 1; SELECT 2;", "SELECT 'a;b'; SELECT 3", "SHOW HYPERSPACE INDEXES; SELECT 1",
      "SELECT 1; /* unclosed", "-- only a comment", "", "SELECT 1; SELECT")
    for (text <- texts) {
      assert(outcome(ours.splitStatements(text)) == outcome(sparks.splitStatements(text)), text)
    }
    assert(ours.splitStatements("SELECT 1; SELECT 2;").completeStatements.size == 2)
  }

  test("parseTemporalTableIdentifier keeps a time-travel clause as Spark's parser does") {
    val texts = Seq("db.t", "t@v3", "db.t@20260101000000000", "t@v", "t VERSION AS OF 3")
    for (text <- texts) {
      assert(outcome(ours.parseTemporalTableIdentifier(text)) == outcome(sparks.parseTemporalTableIdentifier(text)),
        text)
    }
    val versioned = ours.parseTemporalTableIdentifier("db.t@v3")
    assert(versioned.nameParts == Seq("db", "t"))
    assert(versioned.version.contains("3"), versioned)
    assert(ours.parseTemporalTableIdentifier("db.t@20260101000000000").timestamp.isDefined)
  }
}
