package io.hyperspace.advisor

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{BloomFilterSketch, DataSkippingIndexConfig, MinMaxSketch, ValueListSketch}
import io.hyperspace.index.split.SplitIndexConfig
import io.hyperspace.index.zorder.ZOrderCoveringIndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Candidates of the kinds beside covering, on workloads whose best index is known by
 * construction: ranges on two independent columns (a Z-order index over both reads a fraction of
 * the files; a hash-bucketed index on either reads every bucket), and a filter on a column whose
 * values cluster by file (a MinMax sketch skips the other files for a few bytes of index). Each
 * recommendation, once built, is used by the queries it names, with unchanged results.
 */
class IndexAdvisorKindsSuite extends RuleTestSupport {

  private val targetFileSize = "spark.hyperspace.index.zorder.targetFileSize"

  // Rows in random order over 8 files: x and y are independent and uniform, ts rises with the
  // file (each file holds one stretch of it), r is random in every file.
  private lazy val table: String = {
    val path = newDir("advisor-kinds").getAbsolutePath + "/data"
    spark.range(0, 40000, 1, 8).selectExpr(
      "id AS ts", "CAST(pmod(hash(id, 1), 1000) AS INT) AS x", "CAST(pmod(hash(id, 2), 1000) AS INT) AS y",
      "CAST(pmod(hash(id, 3), 100000) AS BIGINT) AS r", "id * 3 AS a", "REPEAT(CAST(id AS STRING), 8) AS payload")
      .write.parquet(path)
    path
  }

  private def q(df: DataFrame, label: String) = WorkloadQuery(label, df, 1.0)

  private def sourceBytes: Long =
    new java.io.File(table).listFiles().filter(_.getName.endsWith(".parquet")).map(_.length).sum

  private def buildAndCheck(recs: Recommendations, queries: Map[String, DataFrame]): Unit =
    try {
      assert(recs.createAll() == recs.indexes.map(_.config.name))
      recs.indexes.foreach { r =>
        assert(r.queries.nonEmpty, recs.toString)
        r.queries.foreach { e =>
          def query = SparkInternals.ofRows(spark, queries(e.query).queryExecution.logical)
          val expected = withHyperspace(on = false)(rowsOf(query))
          withHyperspace(on = true) {
            assert(rowsOf(query) == expected, s"${e.query} with ${r.config.name}")
            assert(hs.whyNot(query, r.config.name) == s"${r.config.name}: used by this query", s"${e.query}\n$recs")
          }
        }
      }
    } finally recs.indexes.foreach { r =>
        hs.deleteIndex(r.config.name)
        vacuumNow(r.config.name)
      }

  test("ranges on two independent columns get a Z-order covering index over both, reading fewer bytes") {
    // About 60 files: enough for the curve to cut the square into cells a box of each column's
    // lowest 30% meets a fraction of (a range on one column alone reads 30%).
    withConf(targetFileSize -> "16k") {
      val box = spark.read.parquet(table).where("x BETWEEN 0 AND 300 AND y BETWEEN 0 AND 300").select("a")
      val recs = hs.recommend(Seq(q(box, "box")), maxIndexes = Some(1))
      assert(recs.indexes.size == 1, recs.toString)
      val top = recs.indexes.head
      top.config match {
        case z: ZOrderCoveringIndexConfig =>
          assert(z.indexedColumns.map(_.toLowerCase) == Seq("x", "y") && z.includedColumns == Seq("a"), recs.toString)
        case other => fail(s"expected a Z-order covering index, got $other\n$recs")
      }
      // A hash-bucketed index on either column reads all of itself; the layout reads a fraction.
      assert(top.queries.head.bytesAfter * 2 < top.estimatedSizeBytes, recs.toString)
      assert(recs.toJson.contains("\"kind\":\"ZOrderCoveringIndex\""), recs.toJson)
      buildAndCheck(recs, Map("box" -> box))
    }
  }

  test("a filter on a column clustered by file gets a MinMax sketch; a random column's lookup a Bloom filter") {
    val clustered = spark.read.parquet(table).where("ts BETWEEN 12000 AND 12500")
    // r: 100,000 values at random, 5,000 rows per file: a value is in few files, anywhere.
    val random = spark.read.parquet(table).where("r = 4242")
    // A tenth of the source: no covering index of SELECT * fits, a sketch table does.
    val recs = hs.recommend(Seq(q(clustered, "clustered"), q(random, "random")), budgetBytes = Some(sourceBytes / 10))
    val byName = recs.indexes.map(r => r.config.name -> r).toMap
    assert(byName.keySet == Set("data_minmax_ts", "data_bloom_r"), recs.toString)
    assert(byName("data_minmax_ts").config == DataSkippingIndexConfig("data_minmax_ts", Seq(MinMaxSketch("ts"))))
    val e = byName("data_minmax_ts").queries.map(q => q.query -> q).toMap
    assert(e.keySet == Set("clustered"), recs.toString)
    // One file of eight is left to read.
    assert(e("clustered").bytesAfter * 4 < e("clustered").bytesBefore, recs.toString)
    assert(byName("data_bloom_r").queries.map(_.query) == Seq("random"), recs.toString)
    assert(recs.toString.contains("data skipping with MinMax(ts)"), recs.toString)
    buildAndCheck(recs, Map("clustered" -> clustered, "random" -> random))
  }

  // Rows of 8 files (5,000 each, in id order) whose filtered columns MinMax cannot prune (every
  // file's range spans the domain): `few` holds 0, 100 and its file's own value (file + 1), 3
  // values per file; `high` is random over a million values, about 5,000 distinct per file;
  // `everywhere` repeats 0..499 in every file.
  private lazy val valueTable: String = {
    val path = newDir("advisor-values").getAbsolutePath + "/data"
    spark.range(0, 40000, 1, 8).selectExpr(
      "id",
      "CAST(CASE pmod(id, 3) WHEN 0 THEN 0 WHEN 1 THEN 100 ELSE FLOOR(id / 5000) + 1 END AS INT) AS few",
      "CAST(pmod(hash(id, 7), 1000000) AS BIGINT) AS high", "CAST(pmod(id, 500) AS INT) AS everywhere",
      "REPEAT(CAST(id AS STRING), 8) AS payload")
      .write.parquet(path)
    path
  }

  private def valueTableBytes: Long =
    new java.io.File(valueTable).listFiles().filter(_.getName.endsWith(".parquet")).map(_.length).sum

  test("few distinct values per file, not clustered: a ValueList sketch skips the files without the value") {
    val lookup = spark.read.parquet(valueTable).where("few = 5")
    // A tenth of the source: no covering index of SELECT * fits, a sketch table does.
    val recs = hs.recommend(Seq(q(lookup, "few")), budgetBytes = Some(valueTableBytes / 10))
    assert(recs.indexes.size == 1, recs.toString)
    recs.indexes.head.config match {
      case DataSkippingIndexConfig(name, Seq(ValueListSketch("few", maxValues, _))) =>
        assert(name == "data_values_few" && maxValues >= 12 && maxValues <= 1000, recs.toString)
      case other => fail(s"expected a ValueList sketch on few, got $other\n$recs")
    }
    // One file of eight holds 5.
    val e = recs.indexes.head.queries.head
    assert(e.bytesAfter * 4 < e.bytesBefore, recs.toString)
    buildAndCheck(recs, Map("few" -> lookup))
  }

  test("a lookup on a high-cardinality random column gets a BloomFilter sized for the files' distinct counts") {
    val value = spark.read.parquet(valueTable).where("id = 12345").select("high").head().getLong(0)
    val lookup = spark.read.parquet(valueTable).where(s"high = $value")
    val recs = hs.recommend(Seq(q(lookup, "high")), budgetBytes = Some(valueTableBytes / 10))
    assert(recs.indexes.size == 1, recs.toString)
    recs.indexes.head.config match {
      case DataSkippingIndexConfig(name, Seq(BloomFilterSketch("high", fpp, Some(expected)))) =>
        assert(name == "data_bloom_high" && fpp == 0.01, recs.toString)
        // About 5,000 distinct values per file (each file's sample: 1,250 values, all distinct).
        assert(expected >= 2500 && expected <= 5000, recs.toString)
      case other => fail(s"expected a BloomFilter sketch on high, got $other\n$recs")
    }
    assert(recs.indexes.head.estimatedSizeBytes < valueTableBytes / 10, recs.toString)
    val e = recs.indexes.head.queries.head
    assert(e.bytesAfter * 2 < e.bytesBefore, recs.toString)
    // The configured false positive probability is the sketch's.
    withConf("spark.hyperspace.advisor.bloomFilterFpp" -> "0.05") {
      val again = hs.recommend(Seq(q(lookup, "high")), budgetBytes = Some(valueTableBytes / 10))
      assert(
        again.indexes.map(_.config).collect { case d: DataSkippingIndexConfig => d.sketches }.flatten
          .collect { case b: BloomFilterSketch => b.fpp } == Seq(0.05), again.toString)
    }
    buildAndCheck(recs, Map("high" -> lookup))
  }

  test("values every file holds get no sketch: neither a value sketch nor MinMax can prune") {
    val lookup = spark.read.parquet(valueTable).where("everywhere = 42")
    val recs = hs.recommend(Seq(q(lookup, "everywhere")), budgetBytes = Some(valueTableBytes / 10))
    assert(recs.indexes.isEmpty, recs.toString)
    // Neither sketch is even planned: only the covering and split candidates on the column are.
    assert(recs.candidatesConsidered == 2, recs.toString)
    assert(recs.rejected.map(_.name).toSet == Set("data_by_everywhere", "data_split_everywhere"), recs.toString)
    // Without a budget, a covering index is all that helps (it reads one bucket).
    val unbounded = hs.recommend(Seq(q(lookup, "everywhere")), budgetBytes = None)
    assert(unbounded.indexes.nonEmpty && unbounded.indexes.map(_.config).forall(_.isInstanceOf[IndexConfig]),
      unbounded.toString)
    // The split index's estimate refuses a value every row group holds.
    assert(unbounded.rejected.find(_.name == "data_split_everywhere").map(_.reason)
        .contains(RejectedCandidate.NoBenefit), unbounded.toString)
  }

  test("a column clustered by file gets its MinMax sketch, not a value sketch that prunes no more") {
    val lookup = spark.read.parquet(table).where("ts = 12345")
    val recs = hs.recommend(Seq(q(lookup, "ts")), budgetBytes = Some(sourceBytes / 10))
    assert(recs.indexes.map(_.config) == Seq(DataSkippingIndexConfig("data_minmax_ts", Seq(MinMaxSketch("ts")))),
      recs.toString)
  }

  test("the distinct count estimate: repeats say few, values seen once say about as many as rows") {
    assert(FileValues.estimate(1000, 100, 3, 0) == 3.0)
    assert(FileValues.estimate(1000, 100, 100, 100) == 1000.0)
    assert(FileValues.estimate(1000, 1000, 40, 10) == 40.0) // the whole file sampled: exact
    val mid = FileValues.estimate(10000, 100, 60, 30)
    assert(mid > 60 && mid < 10000, mid)
    assert(FileValues.estimate(10, 0, 0, 0) == 0.0)
  }

  test("recommended indexes of every kind are used by the queries they name (generated workload)") {
    withConf(targetFileSize -> "64k") {
      val rnd = new scala.util.Random(2121)
      val queries = (1 to 6).map { i =>
        val lo = rnd.nextInt(900)
        val df = rnd.nextInt(3) match {
          case 0 => spark.read.parquet(table).where(s"x BETWEEN $lo AND ${lo + 50} AND y >= ${rnd.nextInt(900)}")
              .select("a", "ts")
          case 1 => spark.read.parquet(table).where(s"ts BETWEEN ${lo * 40} AND ${lo * 40 + 300}")
          case _ => spark.read.parquet(table).where(s"r = ${rnd.nextInt(100000)}").select("payload")
        }
        s"g$i" -> df
      }
      val recs = hs.recommend(queries.map { case (l, df) => q(df, l) }, budgetBytes = Some(sourceBytes))
      assert(recs.indexes.nonEmpty && recs.indexes.forall(_.queries.nonEmpty), recs.toString)
      assert(recs.totalSizeBytes <= sourceBytes)
      assert(recs.indexes.map(_.config).forall {
        case _: IndexConfig | _: ZOrderCoveringIndexConfig | _: DataSkippingIndexConfig | _: SplitIndexConfig => true
        case _ => false
      })
      buildAndCheck(recs, queries.toMap)
    }
  }

  test("the sample reads rows of every file: widths follow strings that grow from file to file") {
    val path = newDir("advisor-sample").getAbsolutePath + "/data"
    // File i holds strings of 10 * (i + 1) bytes; the first file alone would say 10.
    spark.range(0, 8000, 1, 8).selectExpr("id", "REPEAT('s', CAST(10 * (1 + FLOOR(id / 1000)) AS INT)) AS s")
      .write.parquet(path)
    val relation = spark.read.parquet(path).queryExecution.optimizedPlan.collectFirst { case r: LogicalRelation =>
      r
    }.get
    val sample = RelationSample.of(spark, relation)
    val files = sample.rows.map(_.getUTF8String(sample.schema.size).toString).distinct
    assert(files.size == 8, files)
    assert(sample.widths("s") > 35 && sample.widths("s") < 55, sample.widths)
    assert(sample.rowCount == 8000)
    // Parquet: each file's range from its footer, exactly.
    val ranges = sample.fileRanges("id").values.map { case (rows, s) => (rows, s.min.get.toLong, s.max.get.toLong) }
    assert(ranges.toSeq.sortBy(_._2) == (0 until 8).map(i => (1000L, i * 1000L, i * 1000L + 999)), ranges)
  }
}
