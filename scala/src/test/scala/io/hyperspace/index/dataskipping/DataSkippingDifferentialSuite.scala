package io.hyperspace.index.dataskipping

import scala.util.Random

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BindReferences, Coalesce, CommonExpressionRef, Expression, Literal, Not, RuntimeReplaceable, With}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import io.hyperspace.testing.Fuzz

/**
 * Random data in many small files, random filters: no file holding a row that satisfies a
 * filter may ever be skipped, and on the clustered column selective filters must skip every
 * file without a match. HYPERSPACE_FUZZ_SEED picks the seed (fixed by default),
 * HYPERSPACE_FUZZ_QUERIES the number of filters.
 */
class DataSkippingDifferentialSuite extends SketchTestSupport {

  private val seed = Fuzz.seed(20240611L)
  private val numQueries = Fuzz.queries(300)
  private val numFiles = 40
  private val rowsPerFile = 40
  private val categories = Seq("red", "green", "blue", "Ünïcode", "日本", "")

  private val schema = StructType(Seq(
      StructField("k", IntegerType), // clustered: file i holds [100 i, 100 i + 99]
      StructField("r", IntegerType), // random in [0, 1000), some NULLs
      StructField("s", StringType), // clustered: "key<k>", some NULLs
      StructField("c", StringType), // a few categories, random per row, some NULLs
      StructField("d", DoubleType), // random, with NaN, -0.0 and NULLs
      StructField("t", TimestampType))) // clustered with k

  private def data(rnd: Random): Seq[Seq[Row]] = (0 until numFiles).map { f =>
    if (f % 13 == 5) Nil // a few empty files
    else (0 until rowsPerFile).map { _ =>
      val k = f * 100 + rnd.nextInt(100)
      def maybeNull[T](v: T): Any = if (rnd.nextInt(10) == 0) null else v
      val d = rnd.nextInt(12) match {
        case 0 => Double.NaN
        case 1 => -0.0
        case 2 => 0.0
        case _ => (rnd.nextInt(2000) - 1000) / 10.0
      }
      Row(k, maybeNull(rnd.nextInt(1000)), maybeNull(f"key$k%05d"),
        if (f % 3 == 0) "red" else maybeNull(categories(rnd.nextInt(categories.size))),
        maybeNull(d), new java.sql.Timestamp(1700000000000L + k * 60000L))
    }
  }

  private def sketches: Seq[Sketch] = Seq(
    MinMaxSketch("k"), MinMaxSketch("r"), MinMaxSketch("d"), MinMaxSketch("s"), MinMaxSketch("t"),
    MinMaxSketch("k % 7"), BloomFilterSketch("r"), BloomFilterSketch("d"),
    ValueListSketch("c", maxValues = 4), ValueListSketch("lower(c)"), PrefixSketch("s", 6),
    SuffixSketch("s", 2), NullCountSketch("d"), NullCountSketch("c"))

  /** A random filter over the source columns, as SQL. */
  private class Gen(rnd: Random) {
    private def pick[T](xs: T*): T = xs(rnd.nextInt(xs.size))
    private def kVal: Int = rnd.nextInt(numFiles * 100 + 200) - 100
    private def sVal: String = f"key${rnd.nextInt(numFiles * 100)}%05d"
    private def dVal: String = pick("0.0", "-0.0", "CAST('NaN' AS DOUBLE)", s"${(rnd.nextInt(2000) - 1000) / 10.0}")
    private def cVal: String = s"'${pick(categories: _*)}'"
    private def cmp: String = pick("=", "<", "<=", ">", ">=", "!=", "<=>")

    def clusteredRange: String = {
      val lo = kVal
      pick(s"k = $lo", s"k BETWEEN $lo AND ${lo + rnd.nextInt(150)}", s"k IN ($lo, ${kVal})",
        s"k < ${rnd.nextInt(300)}", s"k >= ${numFiles * 100 - rnd.nextInt(300)}")
    }

    def leaf: String = rnd.nextInt(22) match {
      case 0 | 1 => clusteredRange
      case 2 => s"k $cmp $kVal"
      case 3 => s"${kVal} $cmp k"
      case 4 => s"r $cmp ${rnd.nextInt(1100) - 50}"
      case 5 => s"r IN (${Seq.fill(1 + rnd.nextInt(4))(rnd.nextInt(1000)).mkString(", ")}${pick("", ", NULL")})"
      case 6 => s"r NOT IN (${Seq.fill(1 + rnd.nextInt(3))(rnd.nextInt(1000)).mkString(", ")}${pick("", "", ", NULL")})"
      case 7 => s"d $cmp $dVal"
      case 8 => s"s $cmp '$sVal'"
      case 9 => s"s LIKE '${sVal.take(3 + rnd.nextInt(6))}%'"
      case 10 => s"s LIKE '%${sVal.takeRight(1 + rnd.nextInt(3))}'"
      case 11 => s"startswith(s, '${sVal.take(2 + rnd.nextInt(6))}')"
      case 12 => s"c $cmp $cVal"
      case 13 => s"c IN ($cVal, $cVal)"
      case 14 => s"lower(c) ${pick("=", "!=")} ${cVal.toLowerCase}"
      case 15 => s"c LIKE '${pick("r", "g", "%e", "_l%", "Ü%")}${pick("", "%")}'"
      case 16 => s"${pick("d", "c", "r", "s", "k")} IS ${pick("", "NOT ")}NULL"
      case 17 => s"k % 7 $cmp ${rnd.nextInt(9) - 1}"
      case 18 => s"CAST(k AS BIGINT) $cmp $kVal"
      case 19 => s"t ${pick("<", ">=")} TIMESTAMP '${new java.sql.Timestamp(1700000000000L + kVal * 60000L)}'"
      case 20 => s"d ${pick("=", "<=>")} NULL"
      case _ => s"coalesce(r, 0) $cmp ${rnd.nextInt(1000)}"
    }

    def filter(depth: Int): String =
      if (depth == 0 || rnd.nextInt(3) == 0) leaf
      else rnd.nextInt(4) match {
        case 0 => s"(${filter(depth - 1)}) AND (${filter(depth - 1)})"
        case 1 => s"(${filter(depth - 1)}) OR (${filter(depth - 1)})"
        case 2 => s"NOT (${filter(depth - 1)})"
        case _ => s"NOT ((${filter(depth - 1)}) ${pick("AND", "OR")} (${filter(depth - 1)}))"
      }
  }

  // The analyzed condition with what only the optimizer removes (BETWEEN's With, ...) inlined.
  private def evaluable(e: Expression): Expression = {
    val next = e.transformUp {
      case r: RuntimeReplaceable => r.replacement
      case w: With =>
        val defs = w.defs.map(d => d.id -> d.child).toMap
        w.child.transformUp { case ref: CommonExpressionRef => defs(ref.id) }
    }
    if (next.fastEquals(e)) e else evaluable(next)
  }

  test(s"no file with a matching row is skipped; clustered filters skip the rest (seed $seed)") {
    val rnd = new Random(seed)
    val built = build(writeFiles(schema, data(rnd)), sketches: _*)
    val output = built.table.queryExecution.analyzed.output
    // The sketch table on the driver: each condition is evaluated here, with no Spark job.
    val tableRows: Seq[InternalRow] = built.table.queryExecution.toRdd.map(_.copy()).collect().toSeq
    val fileIdOrdinal = output.indexWhere(_.name == DataSkippingIndex.FileIdColumn)
    def skippedBy(condition: Expression): Set[Long] = {
      val skip = BindReferences.bindReference(Not(Coalesce(Seq(condition, Literal.TrueLiteral))), output)
      tableRows.filter(r => skip.eval(r) == true).map(_.getLong(fileIdOrdinal)).toSet
    }

    val gen = new Gen(rnd)
    val filters = Seq.fill(numQueries / 5)(gen.clusteredRange) ++ Seq.fill(numQueries - numQueries / 5)(gen.filter(3))
    val t0 = System.nanoTime()
    val conditionsOf: Map[String, Seq[Expression]] = filters.distinct.map(f => f -> conditions(built.source, f)).toMap
    val t1 = System.nanoTime()
    // Which files match each filter, evaluated on the driver over all source rows (Spark's own
    // expression semantics, no job per filter); cross-checked below against real queries.
    val sourceWithPath = built.source.select(col("*"), col("_metadata.file_path"))
    val sourceOutput = sourceWithPath.queryExecution.analyzed.output
    val sourceRows = sourceWithPath.queryExecution.toRdd.map(_.copy()).collect().toSeq
    val pathOrdinal = sourceOutput.size - 1
    def matchingOf(f: String): Set[Long] = {
      val condition = BindReferences.bindReference(evaluable(conditionsOf(f).head), sourceOutput)
      sourceRows.filter(r => condition.eval(r) == true).map(r => built.ids(r.getUTF8String(pathOrdinal).toString)).toSet
    }
    val matching: Map[String, Set[Long]] = filters.distinct.map(f => f -> matchingOf(f)).toMap
    filters.take(10).foreach(f => assert(matchingIds(built, f) == matching(f), s"seed $seed: oracles differ on '$f'"))
    val t2 = System.nanoTime()
    var skippedTotal = 0
    filters.foreach { f =>
      conditionsOf(f).zip(Seq("analyzed", "optimized")).foreach { case (c, form) =>
        val skipped = DataSkippingIndex.translate(c, built.sketches, output).map(skippedBy).getOrElse(Set.empty)
        val wrong = skipped intersect matching(f)
        assert(wrong.isEmpty, s"seed $seed: '$f' ($form) skipped files ${wrong.mkString(", ")} with matching rows")
        if (form == "optimized") skippedTotal += skipped.size
      }
    }
    // Effectiveness: a range, IN or = over the clustered column reads the files that match and
    // at most the two files at its ends whose min-max span it touches without a matching row.
    val nonEmpty = tableRows.map(_.getLong(fileIdOrdinal)).toSet
    filters.take(numQueries / 5).foreach { f =>
      val optimized = conditionsOf(f).last
      val skipped = DataSkippingIndex.translate(optimized, built.sketches, output).map(skippedBy).getOrElse(Set.empty)
      val kept = nonEmpty -- skipped
      assert(kept.size <= matching(f).size + 2,
        s"seed $seed: '$f' kept ${kept.size} files, ${matching(f).size} of them matching")
    }
    val t3 = System.nanoTime()
    info(s"${filters.size} filters: planned in ${(t1 - t0) / 1000000} ms, matched in " +
      s"${(t2 - t1) / 1000000} ms, translated and checked in ${(t3 - t2) / 1000000} ms")
    assert(skippedTotal > filters.size * nonEmpty.size / 4, s"only $skippedTotal files skipped in total")
    // The driver-side evaluation above agrees with the Spark job the index will run.
    filters.take(20).foreach { f =>
      val c = conditionsOf(f).last
      DataSkippingIndex.translate(c, built.sketches, output).foreach { cond =>
        assert(DataSkippingIndex.skippedFileIds(built.table, cond) == skippedBy(cond), f)
      }
    }
  }
}
