package io.hyperspace.dataskipping

import scala.util.Random

import io.hyperspace.index.dataskipping._
import io.hyperspace.testing.Fuzz

/**
 * Random predicates over random clustered data in many files, through the optimizer rule: the
 * same rows with and without the index, and no file holding a matching row ever skipped (checked
 * by the audit mode too).
 * `HYPERSPACE_FUZZ_SEED` / `HYPERSPACE_FUZZ_QUERIES` change the seed and the number of queries.
 */
class DataSkippingEndToEndDifferentialSuite extends DataSkippingTestSupport {

  private val seed = Fuzz.seed(20240607L)
  private val queries = Fuzz.queries(40)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    // Audit mode: every file a query skips is read again under its filter; a row there fails it.
    spark.conf.set("spark.hyperspace.audit.sampleRate", "1.0")
  }

  /** A random predicate over the clustered columns, in SQL. */
  private def predicate(r: Random, depth: Int = 0): String = {
    def pick[T](xs: T*): T = xs(r.nextInt(xs.size))
    def id = r.nextInt(2100) - 50
    def name = f"u${r.nextInt(42)}%04d-${r.nextInt(8)}.${pick("com", "org", "net")}"
    def cat = pick("'A'", "'B'", "'E'", "'J'", "'K'", "NULL")
    val leaf = () =>
      pick(
        s"id ${pick("=", "<", "<=", ">", ">=", "!=", "<=>")} $id",
        s"id BETWEEN $id AND ${id + r.nextInt(200)}",
        s"id IN (${Seq.fill(1 + r.nextInt(4))(id).mkString(", ")})",
        s"id NOT IN (${Seq.fill(1 + r.nextInt(3))(id).mkString(", ")})",
        s"ts ${pick("<", ">=")} TIMESTAMP'2024-01-01 00:00:00' + INTERVAL ${r.nextInt(2100)} MINUTES",
        s"cat ${pick("=", "!=", "<", ">")} $cat",
        s"cat IN ($cat, $cat)",
        s"name = '$name'",
        s"name LIKE '${name.take(1 + r.nextInt(6))}%'",
        s"name LIKE '%${name.takeRight(1 + r.nextInt(5))}'",
        s"startswith(name, '${name.take(3 + r.nextInt(3))}')",
        s"lower(cat) = ${cat.toLowerCase}",
        s"score ${pick("=", "<", ">")} ${r.nextInt(50)}",
        s"score IS ${pick("", "NOT ")}NULL",
        s"k = ${r.nextInt(101)}",
        s"(id % 7) = ${r.nextInt(7)}")
    if (depth >= 2 || r.nextInt(3) == 0) leaf()
    else pick(
      s"(${predicate(r, depth + 1)}) AND (${predicate(r, depth + 1)})",
      s"(${predicate(r, depth + 1)}) OR (${predicate(r, depth + 1)})",
      s"NOT (${predicate(r, depth + 1)})",
      leaf())
  }

  test(s"random predicates through the rule: same rows, no matching file skipped (seed $seed, $queries queries)") {
    val r = new Random(seed)
    val dir = clusteredSource("diff", files = 42, rowsPerFile = 50, partitioned = true)
    hs.createIndex(read(dir),
      DataSkippingIndexConfig("ds_diff",
        MinMaxSketch("id"), MinMaxSketch("ts"), ValueListSketch("cat"), ValueListSketch("lower(cat)", maxValues = 2),
        BloomFilterSketch("name"), PrefixSketch("name", 5), SuffixSketch("name", 3), NullCountSketch("score"),
        MinMaxSketch("score")))
    var skippedAny = 0
    (1 to queries).foreach { _ =>
      val p = predicate(r)
      val query = read(dir).where(p)
      val matching = filesWithRows(query)
      sameResult(query) // equal rows with and without the index
      withHyperspace(on = true) {
        pruned(read(dir).where(p)).foreach { index =>
          val wrongly = index.skipped.map(normalize).intersect(matching)
          assert(wrongly.isEmpty, s"'$p' skipped files holding matching rows: $wrongly")
          if (index.skipped.nonEmpty) skippedAny += 1
        }
      }
    }
    // The generator is meant to exercise skipping, not only the no-skip path.
    assert(skippedAny >= queries / 4, s"only $skippedAny of $queries queries skipped files")
  }
}
