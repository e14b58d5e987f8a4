package io.hyperspace.indexed

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.broadcast

import io.hyperspace.testing.Fuzz

/** Rows of two DataFrames compared as sorted multisets of their printed values. */
private[indexed] trait SameRows {

  protected def rows(df: DataFrame): Seq[String] = df.collect().map(canonical).toSeq.sorted

  // Binary values print as their bytes: an array's own string is its identity.
  private def canonical(r: Row): String = r.toSeq.map {
    case b: Array[Byte] => b.mkString("[", ",", "]")
    case v => String.valueOf(v)
  }.mkString("|")

  protected def assertSameRows(actual: DataFrame, expected: DataFrame, clue: String): Unit = {
    val (a, e) = (rows(actual), rows(expected))
    assert(a == e, s"$clue: ${a.size} rows vs ${e.size}; missing ${e.diff(a).take(3)}, extra ${a.diff(e).take(3)}")
  }

  /**
   * Every join type of an Indexed DataFrame's rows (`indexed`, key `k`) with `probe` (key `pk`)
   * returns the rows of the same join of `plain`: the index on one side per join type in CI (the
   * sides in turn; broadcast when on the right), on both under `make test-full`.
   */
  protected def assertJoinsAgree(indexed: DataFrame, plain: DataFrame, probe: DataFrame, clue: String): Unit = {
    val joinTypes = Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")
    for ((jt, n) <- joinTypes.zipWithIndex; onLeft <- Fuzz.settingsFor(Seq(true, false), n)) {
      if (onLeft) {
        assertSameRows(indexed.join(probe, indexed("k") === probe("pk"), jt),
          plain.join(probe, plain("k") === probe("pk"), jt), s"$clue $jt, index on the left")
      } else {
        assertSameRows(probe.join(broadcast(indexed), probe("pk") === indexed("k"), jt),
          probe.join(plain, probe("pk") === plain("k"), jt), s"$clue $jt, index on the right")
      }
    }
  }
}
