package io.hyperspace.expressions

import org.apache.spark.sql.execution.datasources.BucketingUtils
import org.apache.spark.sql.functions.{col, input_file_name, udf}

import io.hyperspace.{HyperspaceException, SparkSessionSuite}

class BucketIdSuite extends SparkSessionSuite {

  test("hyperspace_bucket_id names the bucket file Spark's bucketed writer puts each row in") {
    import spark.implicits._
    val rows = (0 until 500).map(i => (i, s"name-$i-\u00e9", i % 3 == 0, i * 1.5))
    rows.toDF("id", "name", "flag", "value")
      .write.bucketBy(7, "name", "id").saveAsTable("bucketed")

    val bucketOfFile = udf((path: String) =>
      BucketingUtils.getBucketId(new org.apache.hadoop.fs.Path(path).getName).get)
    val checked = spark.table("bucketed")
      .select(
        bucketOfFile(input_file_name()).as("file_bucket"),
        org.apache.spark.sql.functions.expr("hyperspace_bucket_id(7, name, id)").as("computed"))
      .collect()
    assert(checked.length == 500)
    assert(checked.forall(r => r.getInt(0) == r.getInt(1)),
      checked.filter(r => r.getInt(0) != r.getInt(1)).take(5).mkString(", "))
    assert(checked.map(_.getInt(1)).toSet.size > 1, "rows must spread over several buckets")
  }

  test("null keys and every bucket count stay within range") {
    val df = spark.range(0, 200).selectExpr(
      "CASE WHEN id % 5 = 0 THEN NULL ELSE CAST(id AS STRING) END AS k")
    for (n <- Seq(1, 2, 13)) {
      val ids = df.selectExpr(s"hyperspace_bucket_id($n, k)").collect().map(_.getInt(0))
      assert(ids.forall(b => b >= 0 && b < n))
    }
    assert(df.where(col("k").isNull)
      .selectExpr("hyperspace_bucket_id(13, k)").distinct().count() == 1)
  }

  test("bad arguments fail with a message naming the function") {
    val noColumns = intercept[Exception](spark.sql("SELECT hyperspace_bucket_id(4)").collect())
    assert(noColumns.getMessage.contains("hyperspace_bucket_id expects a bucket count"))
    val notLiteral = intercept[Exception](
      spark.range(3).selectExpr("hyperspace_bucket_id(id, id)").collect())
    assert(notLiteral.getMessage.contains("must be an integer literal bucket count"))
    val zero = intercept[Exception](spark.range(3).selectExpr("hyperspace_bucket_id(0, id)"))
    assert(zero.getMessage.contains("must be positive"))
    assert(Seq(noColumns, notLiteral, zero).forall(e =>
        e.isInstanceOf[HyperspaceException] || e.getCause.isInstanceOf[HyperspaceException]))
  }
}
