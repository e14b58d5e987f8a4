package io.hyperspace.index.dataskipping

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

class MinMaxSketchSuite extends SketchTestSupport {

  private val schema = StructType(Seq(
      StructField("a", IntegerType), StructField("d", DoubleType), StructField("s", StringType)))

  // 0: 1..10; 1: 11..20 with NaN; 2: all NULL; 3: empty; 4: 21..30 and a NULL, -0.0 and 0.0,
  // non-ASCII strings; 5 and 6: strings that UTF-16 and UTF-8 order differently.
  private lazy val built = {
    val f0 = (1 to 10).map(i => Row(i, i.toDouble, Seq("apple", "apricot", "banana")(i % 3)))
    val f1 = (11 to 20).map(i => Row(i, if (i == 11) Double.NaN else 15.0, Seq("cherry", "citrus")(i % 2)))
    val f2 = Seq.fill(3)(Row(null, null, null))
    val f4 = (21 to 30).map(i => Row(i, if (i % 2 == 0) -0.0 else 0.0, Seq("éclair", "zebra", "日本")(i % 3))) :+
      Row(null, null, null)
    val f5 = Seq(Row(40, 40.0, "\uD83D\uDE00")) // U+1F600: UTF-8 F0 9F 98 80, UTF-16 D83D DE00
    val f6 = Seq(Row(41, 41.0, "\uFF5A")) // U+FF5A: UTF-8 EF BD 9A, UTF-16 FF5A
    build(writeFiles(schema, Seq(f0, f1, f2, Nil, f4, f5, f6)),
      MinMaxSketch("a"), MinMaxSketch("d"), MinMaxSketch("s"))
  }

  test("one row per non-empty file, with min, max and row count") {
    val rows = built.table.collect().map(r => r.getAs[Long](DataSkippingIndex.FileIdColumn) -> r).toMap
    assert(rows.size == 6)
    assert(!rows.contains(built.idOf(3)), "the empty file has no row")
    val f0 = rows(built.idOf(0))
    assert(f0.getAs[Int]("s0_min") == 1 && f0.getAs[Int]("s0_max") == 10)
    assert(f0.getAs[Long](DataSkippingIndex.RowCountColumn) == 10L)
    val f2 = rows(built.idOf(2))
    assert(f2.isNullAt(f2.fieldIndex("s0_min")) && f2.getAs[Long](DataSkippingIndex.RowCountColumn) == 3L)
  }

  test("comparisons with the literal on either side") {
    assertSkips(built, "a = 5", 1, 2, 4, 5, 6)
    assertSkips(built, "a > 15", 0, 2)
    assertSkips(built, "15 < a", 0, 2)
    assertSkips(built, "a >= 21", 0, 1, 2)
    assertSkips(built, "a < 11", 1, 2, 4, 5, 6)
    assertSkips(built, "a <= 10", 1, 2, 4, 5, 6)
    assertSkips(built, "a <=> 12", 0, 2, 4, 5, 6)
  }

  test("BETWEEN, IN and IS NOT NULL") {
    assertSkips(built, "a BETWEEN 12 AND 14", 0, 2, 4, 5, 6)
    assertSkips(built, "a IN (3, 25)", 1, 2, 5, 6)
    assertSkips(built, s"a IN (${(100 to 200).mkString(", ")})", 0, 1, 2, 4, 5, 6)
    assertSkips(built, "a IS NOT NULL", 2)
  }

  test("negations keep three-valued logic") {
    assertSkips(built, "NOT (a > 10)", 1, 2, 4, 5, 6)
    assertSkips(built, "NOT (a <= 10)", 0, 2)
    assertSkips(built, "NOT (a > 10 OR a < 5)", 1, 2, 4, 5, 6)
    assertSkips(built, "NOT (a = 40)", 2, 5)
    assertSkips(built, "a != 41", 2, 6)
    assertSkips(built, "a NOT IN (40, 41)", 2, 5, 6)
    // NOT IN a list holding NULL is never TRUE: every file can be skipped.
    assertSkips(built, "a NOT IN (1, NULL)", 0, 1, 2, 4, 5, 6)
    // NOT (a <=> 40) is TRUE on NULL rows, which min and max do not describe.
    assertSkips(built, "NOT (a <=> 40)")
  }

  test("comparisons with NULL are never TRUE") {
    assertSkips(built, "a = NULL", 0, 1, 2, 4, 5, 6)
    assertSkips(built, "a > CAST(NULL AS INT)", 0, 1, 2, 4, 5, 6)
  }

  test("order-preserving casts") {
    assertSkips(built, "CAST(a AS BIGINT) > 15", 0, 2)
    assertSkips(built, "CAST(a AS DOUBLE) > 15.5", 0, 2)
    assertSkips(built, "CAST(a AS BIGINT) IN (5, 12)", 2, 4, 5, 6)
    // A cast that does not preserve order (int to string) only tells the value is not NULL.
    assertSkips(built, "CAST(a AS STRING) = '5'", 2)
  }

  test("NaN is the largest double and -0.0 equals 0.0") {
    assertSkips(built, "d > 16", 0, 2, 4)
    assertSkips(built, "d = 0.0", 0, 1, 2, 5, 6)
    assertSkips(built, "d = CAST('NaN' AS DOUBLE)", 0, 2, 4, 5, 6)
    assertSkips(built, "d < 0.0", 0, 1, 2, 4, 5, 6)
  }

  test("strings compare in UTF-8 binary order, untruncated") {
    assertSkips(built, "s > 'd'", 0, 1, 2)
    assertSkips(built, "s < 'f'", 2, 4, 5, 6)
    // U+1F600 sorts after U+FF5A in UTF-8 (Spark's order) but before it in UTF-16.
    assertSkips(built, "s > '\uFF5A'", 0, 1, 2, 4, 6)
    assertSkips(built, "s = 'apricots'", 1, 2, 4, 5, 6)
  }

  test("prefix predicates on strings") {
    assertSkips(built, "s LIKE 'ap%'", 1, 2, 4, 5, 6)
    assertSkips(built, "startswith(s, 'ci')", 0, 2, 4, 5, 6)
    assertSkips(built, "s LIKE '\u00e9%'", 0, 1, 2, 5, 6)
    assertSkips(built, "s LIKE 'ba_ana'", 1, 2, 4, 5, 6)
    // No literal prefix: only that some value is not NULL.
    assertSkips(built, "s LIKE '%a'", 2)
  }

  test("unknown shapes: only files where they are always NULL are skipped") {
    assertSkips(built, "a + 1 > 15", 2)
    assertSkips(built, "a + 1 > 15 OR a IS NULL")
    assertSkips(built, "coalesce(a, 0) = 0")
    assertSkips(built, "a > 15 OR s = 'zz'", 0, 2)
    assertSkips(built, "a > 15 OR d > 100", 0, 2)
  }
}
