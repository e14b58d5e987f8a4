package io.hyperspace.indexed

import org.apache.spark.sql.{DataFrame, Row}

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
}
