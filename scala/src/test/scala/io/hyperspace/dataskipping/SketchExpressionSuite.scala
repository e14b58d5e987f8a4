package io.hyperspace.dataskipping

import java.io.File

import io.hyperspace.HyperspaceException
import io.hyperspace.index.dataskipping._

/**
 * Sketches over expressions with literals (matched against the optimizer's constant-folded
 * filters), predicates comparing a data column with a partition column, and sketches that
 * cannot describe a file (constants, zero-argument functions).
 */
class SketchExpressionSuite extends DataSkippingTestSupport {

  /** 10 files of 20 contiguous ids each, `a` an int and `id` a bigint. */
  private def source(name: String): File = {
    val dir = new File(newDir(name), "data")
    spark.range(0, 200, 1, 10).selectExpr("id", "CAST(id AS INT) AS a", "CAST(id AS DOUBLE) AS d")
      .write.parquet(dir.getAbsolutePath)
    dir
  }

  // (sketch expression, query predicate, files to read out of 10)
  private val cases = Seq(
    ("a + 1", "a + 1 = 46", 1),
    ("a + 1", "a + 1 > 185", 1),
    ("a * 2", "a * 2 BETWEEN 90 AND 98", 1),
    ("a * 2", "a * 2 IN (10, 390)", 2),
    ("abs(a - 50)", "abs(a - 50) > 140", 1),
    ("abs(a - 50)", "abs(a - 50) < 5", 1),
    ("a % 7", "a % 7 = 9", 0),
    ("id + 1", "id + 1 = 46", 1),
    ("id * 2", "id * 2 < 30", 1),
    ("abs(id - 50)", "abs(id - 50) >= 145", 1),
    ("id % 7", "id % 7 > 6", 0),
    ("d * 2.5", "d * 2.5 > 490", 1),
    ("a + 1L", "a + 1L = 46", 1))

  for (((expr, predicate, files), i) <- cases.zipWithIndex) {
    test(s"MinMax($expr) skips for '$predicate' (same rows)") {
      val dir = source(s"expr-$i")
      hs.createIndex(read(dir), DataSkippingIndexConfig(s"ds_expr_$i", MinMaxSketch(expr)))
      val plan = sameResult(read(dir).where(predicate))
      assert(filesRead(plan) == files, plan.treeString)
      // Written another way (the literal first, other spacing): the same sketch serves it.
      val stats = withHyperspace(on = true)(hs.skippingStats(read(dir).where(predicate)))
      assert(stats.map(_.filesRead) == Seq(files), stats)
      hs.deleteIndex(s"ds_expr_$i")
    }
  }

  test("the DataFrame API's literals (col + lit) match a sketch written in SQL") {
    import org.apache.spark.sql.functions.{abs, col, lit}
    val dir = source("expr-api")
    hs.createIndex(read(dir),
      DataSkippingIndexConfig("ds_expr_api", MinMaxSketch("abs(id - 50)"), MinMaxSketch("a + 1")))
    assert(filesRead(sameResult(read(dir).where(abs(col("id") - 50) > 140))) == 1)
    assert(filesRead(sameResult(read(dir).where(col("a") + 1 === lit(46)))) == 1)
    hs.deleteIndex("ds_expr_api")
  }

  /** Partitioned like the original's test: A = floor(id / 200) * 200 partitions, B = id. */
  private def partitioned(name: String): File = {
    val dir = new File(newDir(name), "data")
    spark.range(0, 1000, 1, 20).selectExpr("CAST(id / 200 AS INT) * 200 AS A", "id AS B", "CAST(id AS INT) AS C")
      .write.partitionBy("A").parquet(dir.getAbsolutePath)
    dir
  }

  test("a partition column compared with a data column (A = B) skips with the MinMax and partition sketches") {
    val dir = partitioned("part-eq")
    val total = read(dir).inputFiles.length
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_part_eq", MinMaxSketch("B"), MinMaxSketch("C")))
    // Per partition, only the file holding B = A can match: one file per partition.
    assert(filesRead(sameResult(read(dir).where("A = B"))) == 5)
    assert(filesRead(sameResult(read(dir).where("B = A"))) == 5)
    // Types differ (int partition, bigint / int columns), expressions over the partition column.
    assert(filesRead(sameResult(read(dir).where("C = A"))) == 5)
    assert(filesRead(sameResult(read(dir).where("B < A + 10"))) == 5)
    assert(filesRead(sameResult(read(dir).where("B > A + 195"))) == 5)
    assert(filesRead(sameResult(read(dir).where("A = 200 OR B = A"))) < total)
    assert(filesRead(sameResult(read(dir).where("B IN (A, 3)"))) <= 6)
    // A partition column that is NULL (the default partition) never equals anything.
    sameResult(read(dir).where("B != A"))
    sameResult(read(dir).where("NOT (B = A)"))
    hs.deleteIndex("ds_part_eq")
  }

  test("without the partition sketch, A = B cannot skip and reads every file") {
    val dir = partitioned("part-nosketch")
    val total = read(dir).inputFiles.length
    withConf("spark.hyperspace.index.dataskipping.autoPartitionSketch" -> "false") {
      hs.createIndex(read(dir), DataSkippingIndexConfig("ds_part_nosketch", MinMaxSketch("B")))
    }
    assert(filesRead(sameResult(read(dir).where("A = B"))) == total)
    hs.deleteIndex("ds_part_nosketch")
  }

  test("sketches on constants or zero-argument functions are rejected at create, naming the sketch") {
    val dir = source("constants")
    spark.udf.register("hs_zero_arg", () => 1)
    for (expr <- Seq("1", "1 + 1", "current_date()", "current_timestamp()", "hs_zero_arg()", "'x'")) {
      val e = intercept[HyperspaceException](
        hs.createIndex(read(dir), DataSkippingIndexConfig("ds_const", MinMaxSketch(expr))))
      assert(e.getMessage.contains(s"MinMax($expr)") && e.getMessage.contains("ds_const") &&
          e.getMessage.contains("source column"), e.getMessage)
    }
    val random = intercept[HyperspaceException](
      hs.createIndex(read(dir), DataSkippingIndexConfig("ds_const", MinMaxSketch("a + rand()"))))
    assert(random.getMessage.contains("not deterministic"), random.getMessage)
    assert(logOf("ds_const").latestStable.isEmpty)
  }
}
