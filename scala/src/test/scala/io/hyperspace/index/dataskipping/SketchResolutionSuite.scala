package io.hyperspace.index.dataskipping

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

import io.hyperspace.HyperspaceException

/** Resolving sketches against a source: expressions, UDFs and the errors users see. */
class SketchResolutionSuite extends SketchTestSupport {

  private val schema = StructType(Seq(
      StructField("Email", StringType), StructField("n", IntegerType),
      StructField("m", MapType(StringType, IntegerType)),
      StructField("ts", TimestampType)))

  private lazy val source = writeFiles(schema,
    Seq(
      Seq(Row("A@x.com", 1, Map("k" -> 1), java.sql.Timestamp.valueOf("2020-05-01 10:00:00"))),
      Seq(Row("b@Y.com", 2, Map("k" -> 2), java.sql.Timestamp.valueOf("2023-05-01 10:00:00")))))

  private def error(sketches: Sketch*): String =
    intercept[HyperspaceException](
      DataSkippingIndex.resolveSketches(spark, "idx", sketches, source.queryExecution.analyzed)).getMessage

  test("columns resolve by the session's case sensitivity; expressions by semantics") {
    val built = build(source, ValueListSketch("lower(email)"), MinMaxSketch("year(TS)"))
    assertSkips(built, "lower(Email) = 'b@y.com'", 0)
    assertSkips(built, "year(ts) >= 2021", 0)
    assertSkips(built, "year(ts) = 2020 AND lower(email) LIKE 'a%'", 1)
  }

  test("registered UDFs") {
    spark.udf.register("domain", (s: String) => if (s == null) null else s.substring(s.indexOf('@') + 1).toLowerCase)
    val built = build(source, ValueListSketch("domain(email)"))
    assertSkips(built, "domain(email) = 'y.com'", 0)
  }

  test("unknown columns name the index, sketch and source columns") {
    val msg = error(MinMaxSketch("nope"))
    assert(msg.contains("'nope'") && msg.contains("MinMax(nope)") && msg.contains("'idx'") &&
      msg.contains("Email, n, m, ts"))
  }

  test("unsupported types") {
    val msg = error(MinMaxSketch("m"))
    assert(msg.contains("MinMax(m)") && msg.contains("map<string,int>") && msg.contains("'idx'"))
    assert(error(PrefixSketch("n", 2)).contains("needs a string"))
    assert(error(BloomFilterSketch("m")).contains("BloomFilter(m"))
  }

  test("non-deterministic, aggregate and invalid expressions") {
    assert(error(MinMaxSketch("n + rand()")).contains("not deterministic"))
    assert(error(MinMaxSketch("max(n)")).contains("per-row expression"))
    assert(error(MinMaxSketch("n +")).contains("not valid SQL"))
  }

  test("the same sketch twice, even spelled differently") {
    assert(error(MinMaxSketch("n"), MinMaxSketch("N")).contains("the same sketch twice"))
  }

  test("bad parameters fail when the sketch is made") {
    assert(intercept[HyperspaceException](BloomFilterSketch("n", fpp = 0)).getMessage.contains(
        "fpp must be between 0 and 1"))
    assert(intercept[HyperspaceException](BloomFilterSketch("n", expectedDistinct = Some(0))).getMessage
        .contains("expectedDistinct must be between"))
    assert(intercept[HyperspaceException](PrefixSketch("s", 0)).getMessage.contains("Prefix(s, length=0)"))
    assert(intercept[HyperspaceException](ValueListSketch("s", maxValues = -1)).getMessage.contains("maxValues"))
  }
}
