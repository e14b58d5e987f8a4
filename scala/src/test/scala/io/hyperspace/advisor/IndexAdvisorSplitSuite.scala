package io.hyperspace.advisor

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.hyperspace.SparkInternals

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.split.{SeekEstimate, SplitIndexConfig, SplitSeekParquetFormat}
import io.hyperspace.rules.RuleTestSupport

/**
 * Split index candidates, on workloads whose answer is known by construction: `SELECT *` point
 * lookups on a wide table of many row groups, whose key's rows lie in a few of them (a covering
 * index would copy the table, a split index is a few bytes a row), and a filter on a value every
 * row group holds (the seek's estimate refuses it, built or hypothetical). And why the advisor
 * left each other candidate out.
 */
class IndexAdvisorSplitSuite extends RuleTestSupport {

  // Small row groups, so each file has many and a seek has something to choose among.
  private val smallRowGroups = Map("parquet.block.size" -> "16384", "parquet.page.size.row.check.min" -> "10",
    "parquet.page.size.row.check.max" -> "50", "parquet.page.size" -> "4096")

  // 20,000 rows over 4 files: `k` about 3 rows a key, at random over all files and row groups;
  // `c` 5 values at random (every row group holds each); `x` a number; ten padding strings.
  private lazy val wide: String = {
    val path = newDir("advisor-split").getAbsolutePath + "/data"
    spark.range(0, 20000, 1, 4).selectExpr(
      Seq("id", "CAST(pmod(hash(id, 11), 6667) AS BIGINT) AS k", "CAST(pmod(hash(id, 5), 5) AS INT) AS c",
        "CAST(pmod(hash(id, 3), 100000) AS DOUBLE) AS x") ++
        (1 to 10).map(i => s"CONCAT('p$i-', REPEAT(CAST(pmod(hash(id, $i), 1000000) AS STRING), 3)) AS pad$i"): _*)
      .write.options(smallRowGroups).parquet(path)
    path
  }

  private def sourceBytes: Long =
    new java.io.File(wide).listFiles().filter(_.getName.endsWith(".parquet")).map(_.length).sum

  private def q(df: DataFrame, label: String) = WorkloadQuery(label, df, 1.0)

  private def seeks(df: DataFrame): Seq[FileSourceScanExec] = df.queryExecution.executedPlan.collect {
    case s: FileSourceScanExec if s.relation.fileFormat.isInstanceOf[SplitSeekParquetFormat] => s
  }

  test("SELECT * point lookups on a wide table under a small budget: the split index, built and then used") {
    val keys = spark.read.parquet(wide).where("id IN (17, 4242)").select("k").collect().map(_.getLong(0))
    val point = spark.read.parquet(wide).where(s"k = ${keys(0)}")
    val in = spark.read.parquet(wide).where(s"k IN (${keys.mkString(", ")})")
    // A tenth of the source: no covering copy of every column fits.
    val recs = hs.recommend(Seq(q(point, "point"), q(in, "in")), budgetBytes = Some(sourceBytes / 10))
    val split = recs.indexes.filter(_.config.isInstanceOf[SplitIndexConfig])
    assert(split.map(_.config) == Seq(SplitIndexConfig("data_split_k", Seq("k"))), recs.toString)
    val r = split.head
    assert(r.queries.map(_.query).toSet == Set("point", "in"), recs.toString)
    // A few row groups of about a hundred are read.
    r.queries.foreach(e => assert(e.bytesAfter * 5 < e.bytesBefore, recs.toString))
    // Sized as the built kind is (a few bytes a row): far below a copy.
    assert(r.estimatedSizeBytes < sourceBytes / 10 && r.estimatedSizeBytes > 20000, recs.toString)
    // The build reads the key column, not the source.
    assert(r.estimatedBuildBytes < sourceBytes / 2, recs.toString)
    assert(recs.toJson.contains("\"kind\":\"SplitIndex\""), recs.toJson)
    // The covering copy of every column was considered and did not fit.
    val covering = recs.rejected.filter(_.config.isInstanceOf[IndexConfig])
    assert(covering.nonEmpty && covering.forall(_.reason == RejectedCandidate.OverBudget), recs.toString)
    assert(covering.head.detail.contains("over budget"), recs.toString)
    try {
      assert(recs.createAll().contains("data_split_k"))
      Seq(point, in).foreach { df =>
        def query = SparkInternals.ofRows(spark, df.queryExecution.logical)
        val expected = withHyperspace(on = false)(rowsOf(query))
        withHyperspace(on = true) {
          assert(rowsOf(query) == expected)
          assert(seeks(query).nonEmpty, query.queryExecution.executedPlan.toString)
          assert(hs.whyNot(query, "data_split_k") == "data_split_k: used by this query")
        }
      }
    } finally recs.indexes.foreach { i =>
        hs.deleteIndex(i.config.name)
        vacuumNow(i.config.name)
      }
  }

  test("a filter on a value every row group holds gets no split index: its estimate refuses it") {
    val lookup = spark.read.parquet(wide).where("c = 3")
    val recs = hs.recommend(Seq(q(lookup, "c")), budgetBytes = Some(sourceBytes / 10))
    assert(!recs.indexes.exists(_.config.isInstanceOf[SplitIndexConfig]), recs.toString)
    // It was a candidate, planned, and no plan used it.
    val split = recs.rejected.filter(_.config.isInstanceOf[SplitIndexConfig])
    assert(split.map(_.name) == Seq("data_split_c") && split.head.reason == RejectedCandidate.NoBenefit,
      recs.toString)
    // The built index is refused the same way (the estimate from its own statistics).
    try {
      hs.createIndex(spark.read.parquet(wide), SplitIndexConfig("wide_split_c", Seq("c")))
      withHyperspace(on = true) {
        val query = SparkInternals.ofRows(spark, lookup.queryExecution.logical)
        assert(seeks(query).isEmpty)
        assert(hs.whyNot(query, "wide_split_c").contains("estimated to read"), hs.whyNot(query, "wide_split_c"))
      }
    } finally {
      hs.deleteIndex("wide_split_c")
      vacuumNow("wide_split_c")
    }
  }

  test("why each candidate was left out: max_indexes, superseded by a chosen index, over budget") {
    val key = spark.read.parquet(wide).where("id = 99").select("k").head().getLong(0)
    // A narrow lookup: the covering index on k and the split index on k both serve it.
    val narrow = spark.read.parquet(wide).where(s"k = $key").select("k", "x")
    val ranged = spark.read.parquet(wide).where("id BETWEEN 100 AND 120").select("id", "x")
    val recs = hs.recommend(Seq(q(narrow, "narrow"), q(ranged, "ranged")), maxIndexes = Some(1))
    assert(recs.indexes.size == 1, recs.toString)
    val chosen = recs.indexes.head.config.name
    val byName = recs.rejected.map(r => r.name -> r).toMap
    assert(!byName.contains(chosen) && byName.size + 1 == recs.candidatesConsidered, recs.toString)
    // The other query's best index still had a benefit when the count ran out.
    assert(recs.rejected.exists(_.reason == RejectedCandidate.MaxIndexes), recs.toString)
    assert(recs.rejected.filter(_.reason == RejectedCandidate.MaxIndexes).forall(_.detail.contains("max_indexes")))
    assert(recs.toJson.contains("\"reason\":\"max_indexes\""), recs.toJson)
    assert(recs.toString.contains("not recommended"), recs.toString)

    // Without a count: one index on k serves `narrow` (a seek of a few row groups, or one bucket
    // of the covering index, whichever the plans find cheaper), and the other, which had a
    // benefit before it, has none left.
    val all = hs.recommend(Seq(q(narrow, "narrow")))
    assert(all.indexes.size == 1, all.toString)
    val first = all.indexes.head.config.name
    assert(Set("data_by_k", "data_split_k").contains(first), all.toString)
    val other = all.rejected.find(r => r.name != first && Set("data_by_k", "data_split_k").contains(r.name))
      .getOrElse(fail(all.toString))
    assert(other.reason == RejectedCandidate.Superseded, all.toString)
    assert(other.detail.contains("'narrow'") && other.detail.contains(first), all.toString)
  }

  test("the hypothetical split index carries the statistics the built one records: the same estimate") {
    val df = spark.read.parquet(wide)
    val relation = df.queryExecution.optimizedPlan.collectFirst { case r: LogicalRelation => r }.get
    val sample = RelationSample.of(spark, relation)
    Seq("k", "c").foreach { key =>
      val name = s"wide_stats_$key"
      val hypothetical = Hypothetical.splitEntry(spark, sample, SplitIndexConfig(name, Seq(key)))
      try {
        hs.createIndex(df, SplitIndexConfig(name, Seq(key)))
        val built = logOf(name).latestStable.get
        val h = SeekEstimate.layout(hypothetical, sourceBytes, 0L).get
        val b = SeekEstimate.layout(built, sourceBytes, 0L).get
        val seen = s"$key: hypothetical $h, built $b"
        // k: about 3 row groups a key; c: every row group holds each value.
        assert(h.rowGroupsPerKey >= b.rowGroupsPerKey / 2 && h.rowGroupsPerKey <= b.rowGroupsPerKey * 2, seen)
        assert(math.abs(h.rowGroups - b.rowGroups) <= b.rowGroups * 0.2, seen)
        // So a seek for one key and for ten is estimated alike: accepted for k, refused for c.
        Seq(1L, 10L).foreach(n => assert(math.abs(h.fraction(n) - b.fraction(n)) <= 0.1, s"$seen, $n keys"))
        val (hb, bb) = (hypothetical.content.sizeInBytes, built.content.sizeInBytes)
        assert(hb * 4 >= bb && hb <= bb * 4, s"$key: hypothetical $hb bytes, built $bb bytes")
      } finally {
        hs.deleteIndex(name)
        vacuumNow(name)
      }
    }
  }
}
