package io.hyperspace.index.dataskipping

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.Max
import org.apache.spark.sql.types._

/** How filters are taken apart: negations, AND/OR, several sketches, misbehaving sketches. */
class FilterTranslatorSuite extends SketchTestSupport {

  private val a = AttributeReference("a", IntegerType)()
  private val b = AttributeReference("b", IntegerType)()

  test("negations are pushed to the leaves, keeping three-valued logic") {
    import FilterTranslator.pushNegations
    val five = Literal(5)
    assert(pushNegations(Not(GreaterThan(a, five)), negate = false) == LessThanOrEqual(a, five))
    assert(pushNegations(Not(Not(LessThan(a, five))), negate = false) == LessThan(a, five))
    assert(pushNegations(Not(And(GreaterThan(a, five), IsNull(b))), negate = false) ==
      Or(LessThanOrEqual(a, five), IsNotNull(b)))
    assert(pushNegations(Not(Or(EqualTo(a, five), LessThan(b, five))), negate = false) ==
      And(Not(EqualTo(a, five)), GreaterThanOrEqual(b, five)))
    assert(pushNegations(Not(Literal(true)), negate = false) == Literal(false))
    // NOT (NULL) stays NULL, never TRUE.
    assert(pushNegations(Not(Literal(null, BooleanType)), negate = false) == Not(Literal(null, BooleanType)))
  }

  private val schema = StructType(Seq(StructField("a", IntegerType), StructField("b", IntegerType)))

  // 0: a 1..10, b 100..110; 1: a 11..20, b 0..10; 2: a 21..30, b NULL.
  private lazy val source = writeFiles(schema,
    Seq(
      (1 to 10).map(i => Row(i, 100 + i)), (11 to 20).map(i => Row(i, i - 11)), (21 to 30).map(i => Row(i, null))))

  test("AND and OR across sketches; OR with an unknown side knows nothing") {
    val built = build(source, MinMaxSketch("a"), BloomFilterSketch("b"), NullCountSketch("b"))
    assertSkips(built, "a > 5 AND b = 3", 0, 2)
    assertSkips(built, "a < 5 OR b = 3", 2)
    assertSkips(built, "a < 5 OR b > 3", 2)
    assertSkips(built, "a < 5 OR b + a > 3", 2)
    assertSkips(built, "a < 5 OR a + b > 3", 2)
    assertSkips(built, "a < 5 OR coalesce(b, 0) + a > 3")
    assertSkips(built, "NOT (a > 5 OR b IS NULL)", 1, 2)
    assertSkips(built, "b IS NULL AND a < 25", 0, 1)
  }

  test("constant and never-TRUE filters") {
    val built = build(source, MinMaxSketch("a"))
    assertSkips(built, "a IN (NULL)", 0, 1, 2)
    assertSkips(built, "1 = 1")
    assertSkips(built, "a = 3 AND b IS NULL", 1, 2)
  }

  test("a condition that fails on a file's values keeps the file instead of failing the query") {
    val built = build(source, ValueListSketch("a % 11"))
    // a % 11 is 0 for a = 11 and 22: 10 / 0 fails (ANSI) on that value, never in the query.
    assert(spark.conf.get("spark.sql.ansi.enabled") == "true")
    assertSkips(built, "a % 11 != 0 AND 10 / (a % 11) > 4")
    assertSkips(built, "a % 11 = 0", 0)
  }

  /** Throws for every predicate. */
  case class ThrowingSketch(expr: String) extends Sketch {
    override def columnNames: Seq[String] = Seq("m")
    override def unsupportedType(t: DataType): Option[String] = None
    override def aggregates(value: Expression): Seq[Expression] = Seq(Max(value))
    override def translate(p: Expression, input: SketchInput): Option[Expression] = throw new RuntimeException("bug")
  }

  /** Returns a condition over the source column rather than its own: "a > 100". */
  case class WrongColumnSketch(expr: String) extends Sketch {
    override def columnNames: Seq[String] = Seq("m")
    override def unsupportedType(t: DataType): Option[String] = None
    override def aggregates(value: Expression): Seq[Expression] = Seq(Max(value))
    override def translate(p: Expression, input: SketchInput): Option[Expression] =
      Some(GreaterThan(input.value, Literal(100)))
  }

  test("a sketch that throws or returns a condition over other columns is ignored") {
    val built = build(source, ThrowingSketch("a"), WrongColumnSketch("b"), MinMaxSketch("a"))
    assertSkips(built, "a > 25", 0, 1)
    assertSkips(built, "b > 1000")
  }
}
