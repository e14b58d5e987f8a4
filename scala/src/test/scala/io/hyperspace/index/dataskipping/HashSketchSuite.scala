package io.hyperspace.index.dataskipping

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

import io.hyperspace.index.dataskipping.expressions.BloomFilterBits

/** Bloom filter and value list (hybrid) sketches over real files. */
class HashSketchSuite extends SketchTestSupport {

  private val schema = StructType(Seq(
      StructField("id", LongType), StructField("c", StringType), StructField("d", DoubleType)))

  // 0: ids 0..99, countries us/ca; 1: ids 100..199, fr/de/NULL, -0.0 and NaN; 2: 1500 ids and
  // 1500 distinct countries (past the value list's 1000); 3: only "us"; 4: empty.
  private lazy val source = {
    val f0 = (0 until 100).map(i => Row(i.toLong, if (i % 2 == 0) "us" else "ca", 1.0))
    val f1 = (100 until 200).map(i =>
      Row(i.toLong, Seq("fr", "de", null)(i % 3), if (i % 2 == 0) -0.0 else Double.NaN))
    val f2 = (1000 until 2500).map(i => Row(i.toLong, s"c$i", i.toDouble))
    val f3 = Seq(Row(7L, "us", 2.0))
    writeFiles(schema, Seq(f0, f1, f2, f3, Nil))
  }

  private lazy val bloom = build(source, BloomFilterSketch("id"), BloomFilterSketch("d"), BloomFilterSketch("c"))
  private lazy val values = build(source, ValueListSketch("c"))

  test("Bloom filter: =, IN, <=> and injective casts") {
    assertSkips(bloom, "id = 150", 0, 2, 3)
    assertSkips(bloom, "150 = id", 0, 2, 3)
    assertSkips(bloom, "id IN (5, 1200)", 1, 3)
    assertSkips(bloom, "id <=> 7", 1, 2)
    assertSkips(bloom, "CAST(id AS DECIMAL(30, 0)) = 150", 0, 2, 3)
    assertSkips(bloom, "id = 100000", 0, 1, 2, 3)
    assertSkips(bloom, "c = 'de'", 0, 2, 3)
  }

  test("Bloom filter: -0.0 finds 0.0 and NaN finds NaN") {
    assertSkips(bloom, "d = 0.0", 0, 2, 3)
    assertSkips(bloom, "d = CAST('NaN' AS DOUBLE)", 0, 2, 3)
  }

  test("Bloom filter: ranges and negations are not served") {
    assertSkips(bloom, "id > 150")
    assertSkips(bloom, "id != 7")
  }

  test("Bloom filter: each file's filter is sized for its own distinct count") {
    val sizes = bloom.table.collect().map { r =>
      bloom.positionOf(r.getAs[Long](DataSkippingIndex.FileIdColumn)) ->
        BloomFilterBits.fromBytes(r.getAs[Array[Byte]]("s0_bloom")).numBits
    }.toMap
    assert(sizes(3) == 64L)
    assert(sizes(0) == sizes(1) && sizes(0) < 1100L)
    assert(sizes(2) >= BloomFilterBits.optimalBits(1500, 0.01) && sizes(2) <= 16 * sizes(0))
  }

  test("value list: equality, IN and ranges over the values") {
    assertSkips(values, "c = 'fr'", 0, 2, 3)
    assertSkips(values, "c IN ('us', 'xx')", 1, 2)
    assertSkips(values, "c < 'd'", 1, 3)
    assertSkips(values, "c BETWEEN 'd' AND 'e'", 0, 3)
  }

  test("value list: a whole AND is evaluated per value") {
    assertSkips(values, "c = 'us' AND c = 'ca'", 0, 1, 2, 3)
  }

  test("value list: !=, NOT IN and NULL") {
    assertSkips(values, "c != 'us'", 3)
    // fr, de and NULL: NOT IN ('fr', 'de') is FALSE or NULL on every row.
    assertSkips(values, "c NOT IN ('fr', 'de')", 1)
    assertSkips(values, "c IS NULL", 0, 3)
    assertSkips(values, "c IS NOT NULL")
    assertSkips(values, "NOT (c <=> 'us')", 3)
  }

  test("value list: LIKE and functions of the value") {
    assertSkips(values, "c LIKE 'f%'", 0, 3)
    assertSkips(values, "c LIKE '%e'", 0, 3)
    assertSkips(values, "upper(c) = 'CA'", 1, 3)
    assertSkips(values, "coalesce(c, 'none') = 'none'", 0, 3)
  }

  test("value list: above maxValues the file's Bloom filter serves = and IN") {
    val row =
      values.table.collect().find(r => values.positionOf(r.getAs[Long](DataSkippingIndex.FileIdColumn)) == 2).get
    assert(row.isNullAt(row.fieldIndex("s0_values")) && !row.isNullAt(row.fieldIndex("s0_bloom")))
    assertSkips(values, "c = 'c1234'", 0, 1, 3)
    assertSkips(values, "c = 'zz'", 0, 1, 2, 3)
  }

  test("a sketch on another expression of the column is not used") {
    assertSkips(build(source, ValueListSketch("lower(c)")), "c = 'fr'")
    assertSkips(build(source, ValueListSketch("lower(c)")), "lower(c) = 'fr'", 0, 2, 3)
  }
}
