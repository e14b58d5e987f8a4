package io.hyperspace.index.dataskipping

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

/** Prefix and suffix sketches, over columns and expressions. */
class StringSketchSuite extends SketchTestSupport {

  private val schema = StructType(Seq(StructField("email", StringType)))

  // 0: gmail; 1: yahoo; 2: mixed case, one short value and a non-ASCII one; 3: all NULL.
  private lazy val source = writeFiles(schema,
    Seq(
      (1 to 20).map(i => Row(s"alice$i@gmail.com")),
      (1 to 20).map(i => Row(s"bob$i@yahoo.com")),
      Seq(Row("Carol@Example.ORG"), Row("x"), Row("dörte@bücher.日本")),
      Seq(Row(null))))

  private lazy val prefix = build(source, PrefixSketch("lower(email)", 3))
  private lazy val suffix = build(source, SuffixSketch("email", 9))

  test("prefix: LIKE with a literal start, startswith, equality") {
    assertSkips(prefix, "lower(email) LIKE 'ali%'", 1, 2, 3)
    assertSkips(prefix, "lower(email) LIKE 'bob1_@%'", 0, 2, 3)
    assertSkips(prefix, "startswith(lower(email), 'b')", 0, 2, 3)
    assertSkips(prefix, "lower(email) = 'carol@example.org'", 0, 1, 3)
    assertSkips(prefix, "lower(email) IN ('x', 'zed')", 0, 1, 3)
    assertSkips(prefix, "lower(email) LIKE 'dö%'", 0, 1, 3)
    // Shorter than the recorded prefixes: "xy" cannot match the whole value "x".
    assertSkips(prefix, "lower(email) LIKE 'xy%'", 0, 1, 2, 3)
  }

  test("prefix: patterns without a literal start and other expressions keep files") {
    assertSkips(prefix, "lower(email) LIKE '%gmail.com'")
    assertSkips(prefix, "email LIKE 'ali%'")
  }

  test("suffix: LIKE with a literal end, endswith, equality") {
    assertSkips(suffix, "email LIKE '%gmail.com'", 1, 2, 3)
    assertSkips(suffix, "endswith(email, '.com')", 2, 3)
    assertSkips(suffix, "email LIKE 'a%@yahoo.com'", 0, 2, 3)
    assertSkips(suffix, "email LIKE '%.日本'", 0, 1, 3)
    assertSkips(suffix, "email = 'x'", 0, 1, 3)
  }

  test("suffix: escaped wildcards are literal characters") {
    assertSkips(suffix, "email LIKE '%\\\\_com'", 0, 1, 2, 3)
  }
}
