package io.hyperspace.index.dataskipping

import com.example.sketches.LengthRangeSketch
import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.HyperspaceException

class SketchSerdeSuite extends AnyFunSuite {

  private val all: Seq[Sketch] = Seq(
    MinMaxSketch("a"), BloomFilterSketch("lower(email)"), BloomFilterSketch("b", 0.001, Some(5000L)),
    ValueListSketch("c"), ValueListSketch("c", maxValues = 10, fpp = 0.05), PrefixSketch("s", 3),
    SuffixSketch("s", 4), NullCountSketch("a"), PartitionSketch("p"), LengthRangeSketch("s"))

  test("every built-in sketch and a user sketch round-trip") {
    assert(SketchSerde.fromJson(SketchSerde.toJson(all)) == all)
  }

  test("the JSON form: kind, expr and string params") {
    assert(SketchSerde.toJson(Seq(BloomFilterSketch("b", 0.001, Some(5000L)))) ==
      """[{"kind":"BloomFilter","expr":"b","params":{"expectedDistinct":"5000","fpp":"0.001"}}]""")
    assert(SketchSerde.toJson(Seq(MinMaxSketch("a"))) == """[{"kind":"MinMax","expr":"a","params":{}}]""")
  }

  test("params may be JSON numbers, omitted or null") {
    assert(
      SketchSerde.fromJson("""[{"kind":"BloomFilter","expr":"b","params":{"fpp":0.05,"expectedDistinct":null}}]""") ==
        Seq(BloomFilterSketch("b", 0.05)))
    assert(SketchSerde.fromJson("""[{"kind":"ValueList","expr":"c"}]""") == Seq(ValueListSketch("c")))
  }

  test("invalid params name the sketch") {
    def error(json: String): String = intercept[HyperspaceException](SketchSerde.fromJson(json)).getMessage
    assert(error("""[{"kind":"BloomFilter","expr":"b","params":{"fpp":"2"}}]""").contains("BloomFilter(b"))
    assert(error("""[{"kind":"BloomFilter","expr":"b","params":{"fpp":"x"}}]""").contains("'fpp' must be a number"))
    assert(error("""[{"kind":"BloomFilter","expr":"b","params":{"fp":"0.1"}}]""").contains("unknown param 'fp'"))
    assert(error("""[{"kind":"Prefix","expr":"s"}]""").contains("'length' is required"))
    assert(error("""[{"kind":"Prefix","expr":"s","params":{"length":"0"}}]""").contains("length must be at least 1"))
    assert(error("""[{"kind":"ValueList","expr":"c","params":{"maxValues":"0"}}]""").contains(
        "maxValues must be at least 1"))
    assert(error("""[{"kind":"MinMax","expr":"a","params":{"x":"1"}}]""").contains("MinMax takes no params"))
    assert(error("""[{"kind":"MinMax"}]""").contains("'expr' must be a string"))
    assert(error("""{"kind":"MinMax"}""").contains("must be a JSON array"))
  }

  test("unknown kinds and classes that are not sketches are refused without being instantiated") {
    def error(kind: String): String =
      intercept[HyperspaceException](SketchSerde.create(kind, "a", Map.empty)).getMessage
    assert(error("NoSuchSketch").contains("Unknown sketch kind 'NoSuchSketch'"))
    assert(error("java.lang.Thread").contains("is not a io.hyperspace.index.dataskipping.Sketch"))
    assert(intercept[HyperspaceException](
        SketchSerde.create(classOf[LengthRangeSketch].getName, "a", Map("x" -> "1"))).getMessage
        .contains("needs a public constructor"))
  }

  test("registered factories") {
    SketchSerde.register("Length", (e, _) => LengthRangeSketch(e))
    assert(SketchSerde.create("Length", "s", Map.empty) == LengthRangeSketch("s"))
    intercept[HyperspaceException](SketchSerde.register("MinMax", (e, _) => MinMaxSketch(e)))
  }

  test("DataSkippingIndexConfig: JSON round trip and validation") {
    val config = DataSkippingIndexConfig("idx", MinMaxSketch("a"), BloomFilterSketch("b"))
    assert(DataSkippingIndexConfig.fromJson(config.toJson) == config)
    assert(DataSkippingIndexConfig.fromJson(
      """{"name":"idx","sketches":[{"kind":"MinMax","expr":"a"},{"kind":"BloomFilter","expr":"b","params":{"fpp":"0.01"}}]}""") ==
      config)
    def error(f: => Any): String = intercept[HyperspaceException](f).getMessage
    assert(error(DataSkippingIndexConfig("idx", Nil)).contains("'idx' needs at least one sketch"))
    assert(error(DataSkippingIndexConfig("", MinMaxSketch("a"))).contains("non-empty index name"))
    assert(error(DataSkippingIndexConfig("idx", MinMaxSketch("a"), MinMaxSketch("a"))).contains(
        "MinMax(a) appears more than once"))
    assert(
      error(DataSkippingIndexConfig.fromJson("""{"name":"idx","sketches":"a"}""")).contains("sketches must be a list"))
    assert(error(DataSkippingIndexConfig.fromJson("""{"sketches":[]}""")).contains("name must be a string"))
  }

  test("the index definition properties hold the sketches") {
    val props = DataSkippingIndex.properties(all)
    assert(DataSkippingIndex.sketchesOf(props) == all)
    assert(intercept[HyperspaceException](DataSkippingIndex.sketchesOf(Map.empty)).getMessage.contains("'sketches'"))
  }
}
