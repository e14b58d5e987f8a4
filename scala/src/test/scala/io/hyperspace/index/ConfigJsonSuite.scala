package io.hyperspace.index

import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.HyperspaceException
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch}
import io.hyperspace.index.split.SplitIndexConfig
import io.hyperspace.index.zorder.ZOrderCoveringIndexConfig

/** Every kind's config JSON is read as strictly as its Scala API: no field ignored, no type guessed. */
class ConfigJsonSuite extends AnyFunSuite {

  private def error(body: => Any): String = intercept[HyperspaceException](body).getMessage

  test("each kind's JSON round-trips its config") {
    assert(IndexConfig.fromJson("""{"name":"c","indexedColumns":["a"],"includedColumns":["b"],"numBuckets":8,
      |"lineage":true}""".stripMargin) == IndexConfig("c", Seq("a"), Seq("b"), Some(8), Some(true)))
    assert(ZOrderCoveringIndexConfig.fromJson("""{"name":"z","indexedColumns":["a","b"],"lineage":null}""") ==
      ZOrderCoveringIndexConfig("z", Seq("a", "b"), Nil, None))
    assert(SplitIndexConfig.fromJson("""{"name":"s","indexedColumns":["k"]}""") == SplitIndexConfig("s", Seq("k")))
    val skipping = DataSkippingIndexConfig("d", MinMaxSketch("a"))
    assert(DataSkippingIndexConfig.fromJson(skipping.toJson) == skipping)
  }

  test("a field the kind does not know is refused, naming it and the kind's fields") {
    val covering = error(IndexConfig.fromJson("""{"name":"c","indexedColumns":["a"],"numBucket":4}"""))
    assert(covering.contains("IndexConfig has no field 'numBucket'") && covering.contains("numBuckets, lineage"),
      covering)
    // A covering index's field is not a Z-order or split index's.
    assert(error(ZOrderCoveringIndexConfig.fromJson("""{"name":"z","indexedColumns":["a"],"numBuckets":4}"""))
        .contains("ZOrderCoveringIndexConfig has no field 'numBuckets'"))
    assert(error(SplitIndexConfig.fromJson("""{"name":"s","indexedColumns":["k"],"includedColumns":["v"]}"""))
        .contains("SplitIndexConfig has no field 'includedColumns'"))
    assert(error(DataSkippingIndexConfig.fromJson("""{"name":"d","sketches":[],"sketch":[]}"""))
        .contains("DataSkippingIndexConfig has no field 'sketch'"))
    val sketch = error(DataSkippingIndexConfig.fromJson(
        """{"name":"d","sketches":[{"kind":"MinMax","expr":"a","param":{}}]}"""))
    assert(sketch.contains("Sketch MinMax(a) has no field 'param'"), sketch)
  }

  test("a field of another type, malformed JSON and a non-object are HyperspaceExceptions") {
    assert(error(IndexConfig.fromJson("""{"name":"c","indexedColumns":["a"],"numBuckets":"4"}"""))
        .contains("IndexConfig.numBuckets must be an integer; got \"4\""))
    assert(error(IndexConfig.fromJson("""{"name":"c","indexedColumns":["a"],"lineage":"true"}"""))
        .contains("IndexConfig.lineage must be a boolean"))
    assert(error(SplitIndexConfig.fromJson("""{"name":7,"indexedColumns":["k"]}"""))
        .contains("SplitIndexConfig.name must be a string; got 7"))
    assert(error(ZOrderCoveringIndexConfig.fromJson("""{"name":"z","indexedColumns":"a"}"""))
        .contains("ZOrderCoveringIndexConfig.indexedColumns must be a list"))
    assert(error(IndexConfig.fromJson("""{"name":"c",""")).startsWith("Invalid IndexConfig JSON"))
    assert(error(SplitIndexConfig.fromJson("""["k"]""")).contains("SplitIndexConfig must be a JSON object"))
    assert(error(DataSkippingIndexConfig.fromJson("""{"sketches":[]}""")).contains("name must be a string"))
  }
}
