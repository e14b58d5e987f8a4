package io.hyperspace.index.dataskipping

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

import io.hyperspace.HyperspaceException

class NullAndPartitionSketchSuite extends SketchTestSupport {

  private val schema = StructType(Seq(StructField("a", IntegerType), StructField("p", StringType)))

  // 0: no NULLs; 1: some NULLs; 2: all NULL.
  private lazy val nulls = build(
    writeFiles(schema, Seq(Seq(Row(1, "x"), Row(2, "x")), Seq(Row(3, "y"), Row(null, "y")), Seq(Row(null, "z")))),
    NullCountSketch("a"))

  test("IS NULL, IS NOT NULL, <=> NULL and their negations") {
    assertSkips(nulls, "a IS NULL", 0)
    assertSkips(nulls, "a <=> NULL", 0)
    assertSkips(nulls, "NOT (a IS NOT NULL)", 0)
    assertSkips(nulls, "a IS NOT NULL", 2)
    assertSkips(nulls, "NOT (a IS NULL)", 2)
  }

  test("predicates that are NULL when the value is skip all-NULL files") {
    assertSkips(nulls, "a > 0", 2)
    assertSkips(nulls, "a + 1 IN (2, 3)", 2)
    assertSkips(nulls, "coalesce(a, 0) = 0")
  }

  private lazy val partitioned = {
    val dir = new java.io.File(newDir("partitioned"), "table")
    spark.createDataFrame(spark.sparkContext.parallelize(Seq(
          Row(1, "2024-01"), Row(2, "2024-01"), Row(3, "2024-02"), Row(4, null), Row(5, "2025-01")), 1), schema)
      .repartition(1).write.partitionBy("p").parquet(dir.getAbsolutePath)
    spark.read.parquet(dir.getAbsolutePath)
  }

  test("partition sketch: any predicate over the partition column, NULL partitions included") {
    val built = build(partitioned, PartitionSketch("p"))
    def skippedValues(sql: String): Set[String] = skippedIdsPerForm(built, sql).last.map { id =>
      built.ids.collectFirst { case (path, `id`) => path.split('/').init.last }.get
    }
    assert(skippedValues("p = '2024-02'") == Set("p=2024-01", "p=2025-01", "p=__HIVE_DEFAULT_PARTITION__"))
    assert(skippedValues("p LIKE '2024%' AND p != '2024-01'") ==
      Set("p=2024-01", "p=2025-01", "p=__HIVE_DEFAULT_PARTITION__"))
    assert(skippedValues("p IS NULL") == Set("p=2024-01", "p=2024-02", "p=2025-01"))
    assert(skippedValues("a > 1 OR p = '2025-01'").isEmpty)
  }

  test("partition sketch refuses columns that are not partition columns") {
    val e = intercept[HyperspaceException](build(partitioned, PartitionSketch("a")))
    assert(e.getMessage.contains("Partition(a)") && e.getMessage.contains("test_index") &&
      e.getMessage.contains("partition columns are p"))
  }
}
