package io.hyperspace.rules

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.functions.{coalesce, col, count, expr, input_file_name, lit, max}

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{DataSkippingFileIndex, DataSkippingIndexConfig, MinMaxSketch}
import io.hyperspace.shims.FileRelation

/**
 * A query reading file metadata (`input_file_name()`, `input_file_block_*()`, any `_metadata`
 * field) gets the source's values with Hyperspace on: no covering index replaces a scan of
 * such a plan (an index scan would report the index's files), while data skipping still prunes
 * the source's own file list.
 */
class FileMetadataSuite extends RuleTestSupport {

  private lazy val source: String = {
    val path = newDir("meta-src").getAbsolutePath + "/data"
    // n is contiguous per file (so data skipping on n prunes); k spreads over every file.
    spark.range(0, 800, 1, 8).selectExpr("CAST(id * 7 % 23 AS INT) AS k", "CONCAT('v', id) AS v", "id AS n")
      .write.parquet(path)
    path
  }

  private lazy val other: String = {
    val path = newDir("meta-other").getAbsolutePath + "/data"
    spark.range(0, 23, 1, 2).selectExpr("CAST(id AS INT) AS k", "CONCAT('w', id) AS w").write.parquet(path)
    path
  }

  private def src: DataFrame = spark.read.parquet(source)
  private def oth: DataFrame = spark.read.parquet(other)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    // Every column, in another order than the source's.
    hs.createIndex(src, IndexConfig("metaK", Seq("k"), Seq("n", "v")))
    hs.createIndex(oth, IndexConfig("otherK", Seq("k"), Seq("w")))
    hs.createIndex(src, DataSkippingIndexConfig("metaSkip", MinMaxSketch("n")))
  }

  private val fileMetadata: Seq[(String, Column)] = Seq(
    "input_file_name()" -> input_file_name(),
    "input_file_block_start()" -> expr("input_file_block_start()"),
    "input_file_block_length()" -> expr("input_file_block_length()")) ++
    Seq("file_path", "file_name", "file_size", "file_block_start", "file_block_length",
      "file_modification_time", "row_index").map(f => s"_metadata.$f" -> col(s"_metadata.$f")) :+
    ("_metadata" -> col("_metadata"))

  /** The query shapes a covering index rewrites, each with a file-metadata column `m`. */
  private def shapes(m: Column): Seq[(String, () => DataFrame)] = Seq(
    "filter" -> (() => src.where(col("k") === lit(3)).select(col("k"), col("v"), m.as("m"))),
    // (A condition the optimizer cannot fold away: file_path IS NOT NULL would be.)
    "filter on it" ->
      (() =>
        src.where(col("k") === lit(3) && coalesce(m.cast("string"), lit("")) =!= lit("#"))
          .select("k", "n")),
    "join" -> (() => src.select(col("k"), col("v"), m.as("m")).join(oth, "k")),
    // (Spark refuses nondeterministic input_file_name() inside an aggregate function.)
    "aggregate" -> (() => src.select(col("k"), col("v"), m.as("m")).groupBy("k").agg(max("m"), count(col("v")))))

  test("without file metadata, each query shape is answered from covering indexes (the control)") {
    for ((shape, query) <- shapes(lit(1))) {
      val plan = withClue(s"$shape: ")(sameResult(query()))
      assert(indexesUsed(plan).contains("metaK"), s"$shape\n$plan")
    }
  }

  for ((name, m) <- fileMetadata) {
    test(s"$name: filter, join and aggregate queries get the source's values, not an index's") {
      for ((shape, query) <- shapes(m)) {
        val plan = withClue(s"$shape with $name: ")(sameResult(query()))
        assert(indexesUsed(plan).isEmpty, s"$shape with $name read an index:\n$plan")
      }
    }

    test(s"$name: data skipping still prunes, reading the source's own files") {
      val query = () => src.where(col("n") < lit(150)).select(col("n"), m.as("m"))
      val plan = sameResult(query())
      assert(indexesUsed(plan).isEmpty)
      val skipping = withHyperspace(on = true)(query().queryExecution.optimizedPlan.collectFirst {
        case FileRelation(_, fs) if fs.location.isInstanceOf[DataSkippingFileIndex] =>
          fs.location.asInstanceOf[DataSkippingFileIndex]
      })
      assert(skipping.exists(_.stats.filesSkipped == 6), s"expected 6 of 8 files skipped: $skipping")
    }
  }

  test("whyNot says a covering index is not used because the query reads file metadata") {
    val query = src.where(col("k") === lit(3)).select(col("v"), input_file_name())
    val text = withHyperspace(on = true)(hs.whyNot(query, "metaK"))
    assert(text.contains("reads file metadata (input_file_name())"), text)
    val byMetadata = src.where(col("k") === lit(3)).select(col("v"), col("_metadata.file_name"))
    val text2 = withHyperspace(on = true)(hs.whyNot(byMetadata, "metaK"))
    assert(text2.contains("reads file metadata (_metadata)"), text2)
  }
}
