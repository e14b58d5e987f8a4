package io.hyperspace.index.dataskipping

import com.example.sketches.LengthRangeSketch
import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

import io.hyperspace.HyperspaceException

/** A sketch defined outside the library works end to end: log round trip, build, translate. */
class CustomSketchSuite extends SketchTestSupport {

  private val schema = StructType(Seq(StructField("name", StringType), StructField("n", IntegerType)))

  private lazy val source = writeFiles(schema,
    Seq(
      Seq(Row("ab", 1), Row("abc", 2)),
      Seq(Row("abcdefgh", 3), Row("abcdefghij", 4)),
      Seq(Row(null, 5))))

  test("round-trips through the index log by class name") {
    val props = DataSkippingIndex.properties(Seq(LengthRangeSketch("name"), MinMaxSketch("n")))
    assert(props(DataSkippingIndex.SketchesProperty).contains("\"kind\":\"com.example.sketches.LengthRangeSketch\""))
    assert(DataSkippingIndex.sketchesOf(props) == Seq(LengthRangeSketch("name"), MinMaxSketch("n")))
  }

  test("builds and translates length filters and equality") {
    val built = build(source, LengthRangeSketch("name"))
    // File 2 holds only NULLs: its lengths are NULL, so the conditions are NULL and it is kept.
    assertSkips(built, "length(name) > 5", 0)
    assertSkips(built, "char_length(name) <= 3", 1)
    assertSkips(built, "name = 'abcdefghi'", 0)
    assertSkips(built, "name IN ('a', 'abcdefghijkl')", 0, 1)
    assertSkips(built, "upper(name) = 'AB'")
  }

  test("combines with built-in sketches") {
    val built = build(source, LengthRangeSketch("name"), MinMaxSketch("n"))
    assertSkips(built, "length(name) > 5 OR n = 5", 0)
    assertSkips(built, "length(name) > 5 AND n < 4", 0, 2)
  }

  test("its type check names the index, sketch and expression") {
    val e = intercept[HyperspaceException](build(source, LengthRangeSketch("n")))
    assert(e.getMessage.contains("com.example.sketches.LengthRangeSketch(n)") &&
      e.getMessage.contains("test_index") && e.getMessage.contains("needs a string, not int"))
  }
}
