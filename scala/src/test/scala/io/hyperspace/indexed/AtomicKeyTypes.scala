package io.hyperspace.indexed

import org.apache.spark.sql.{DataFrame, SparkSession}

/**
 * A DataFrame of `rows` rows with `id` and one column of every atomic type an Indexed DataFrame
 * can be keyed on (`b_*`), each with a few dozen repeated values (two for the boolean): the
 * suites' table for checking every key type alike.
 */
object AtomicKeyTypes {
  def frame(spark: SparkSession, rows: Long): DataFrame =
    spark.range(rows).selectExpr(
      "id",
      "CAST(id % 40 AS BOOLEAN) AS b_bool",
      "CAST(id % 60 AS TINYINT) AS b_byte",
      "CAST(id % 60 AS SMALLINT) AS b_short",
      "CAST(id % 60 AS INT) AS b_int",
      "CAST(id % 60 / 4 AS FLOAT) AS b_float",
      "CAST(id % 60 AS DOUBLE) / 4 AS b_double",
      "CAST(id % 60 AS DECIMAL(10, 2)) / 4 AS b_dec",
      "CAST(id % 60 AS DECIMAL(30, 5)) * 1000000000000 AS b_bigdec",
      "concat('key-', id % 60) AS b_str",
      "CAST(concat('key-', id % 60) AS BINARY) AS b_bin",
      "date_add(DATE '2024-01-01', CAST(id % 60 AS INT)) AS b_date",
      "timestamp_seconds(id % 60) AS b_ts",
      "CAST(timestamp_seconds(id % 60) AS TIMESTAMP_NTZ) AS b_ntz",
      "make_ym_interval(0, CAST(id % 60 AS INT)) AS b_ym",
      "make_dt_interval(0, 0, 0, id % 60) AS b_dt")
}
