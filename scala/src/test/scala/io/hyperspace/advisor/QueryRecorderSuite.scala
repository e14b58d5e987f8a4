package io.hyperspace.advisor

import org.apache.spark.sql.SparkSession

import io.hyperspace.{Hyperspace, HyperspaceException}
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Recorded workloads: the queries a session runs, recorded when asked, counted per distinct plan,
 * bounded, per session, without Hyperspace's own queries, and advised on by `recommendRecorded`
 * and SQL as an explicit workload of the same queries and weights would be.
 */
class QueryRecorderSuite extends RuleTestSupport {

  private lazy val source = {
    val path = newDir("recorder-src").getAbsolutePath + "/data"
    spark.range(0, 2000, 1, 4).selectExpr(
      "id", "id % 97 AS k", "id * 3 AS a", "REPEAT(CAST(id AS STRING), 20) AS payload", "REPEAT('x', 50) AS pad")
      .write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("recorded_src")
    path
  }

  private val lookupK = "SELECT a FROM recorded_src WHERE k = 5"
  private val lookupA = "SELECT k FROM recorded_src WHERE a = 30"

  private def recording[T](body: => T): T = {
    source
    spark.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "true")
    hs.clearRecordedQueries()
    try body
    finally {
      spark.conf.unset(HyperspaceConf.ADVISOR_RECORD_QUERIES.key)
      spark.conf.unset(HyperspaceConf.ADVISOR_MAX_RECORDED_QUERIES.key)
      hs.clearRecordedQueries()
    }
  }

  private def run(sql: String, times: Int = 1): Unit = (1 to times).foreach(_ => spark.sql(sql).collect())

  private def frequencies(h: Hyperspace = hs): Seq[(String, Long)] = h.recordedQueries.map(q => q.label -> q.frequency)

  test("nothing is recorded by default, and recommend without a workload then says how to turn recording on") {
    source
    run(lookupK)
    assert(hs.recordedQueries.isEmpty)
    val e = intercept[HyperspaceException](hs.recommendRecorded())
    assert(e.getMessage.contains("query recording is off") &&
        e.getMessage.contains(HyperspaceConf.ADVISOR_RECORD_QUERIES.key), e.getMessage)
  }

  test("repeated queries are one entry weighted by how often they ran; the advice equals the explicit workload's") {
    recording {
      run(lookupK, times = 3)
      run(lookupA)
      assert(frequencies() == Seq(lookupK -> 3L, lookupA -> 1L))

      val recs = hs.recommendRecorded()
      val explicit = hs.recommend(Seq(WorkloadQuery.sql(spark, lookupK, 3.0), WorkloadQuery.sql(spark, lookupA)))
      assert(recs.indexes.map(_.config) == explicit.indexes.map(_.config))
      assert(recs.indexes.map(_.benefit) == explicit.indexes.map(_.benefit))
      assert(recs.indexes.map(_.indexedColumns).toSet == Set(Seq("k"), Seq("a")), recs)
      val weights = recs.indexes.flatMap(_.queries).map(e => e.query -> e.weight).toMap
      assert(weights == Map(lookupK -> 3.0, lookupA -> 1.0), recs)
      // With room for one index, the query run three times wins.
      assert(hs.recommendRecorded(maxIndexes = Some(1)).indexes.map(_.indexedColumns) == Seq(Seq("k")))
    }
  }

  test("DataFrame queries are recorded too, named by the sources they read") {
    recording {
      spark.read.parquet(source).where("k = 7").select("a").collect()
      spark.read.parquet(source).where("k = 7").select("a").count()
      val recorded = hs.recordedQueries
      assert(recorded.size == 2, recorded) // collect and count are different plans
      assert(recorded.forall(q => q.label.startsWith("recorded query ") && q.label.contains(source)), recorded)
    }
  }

  test("at most maxRecordedQueries distinct queries are kept, the least recently run dropped first") {
    recording {
      spark.conf.set(HyperspaceConf.ADVISOR_MAX_RECORDED_QUERIES.key, "2")
      val third = "SELECT payload FROM recorded_src WHERE id < 10"
      run(lookupK)
      run(lookupA)
      run(lookupK) // now the most recent
      run(third)
      assert(frequencies() == Seq(lookupK -> 2L, third -> 1L))
    }
  }

  test("Hyperspace's own queries, commands and writes are not recorded") {
    recording {
      run(lookupK)
      val df = spark.read.parquet(source)
      hs.whatIf(df.where("k = 1").select("a"), IndexConfig("recorder_whatif", Seq("k"), Seq("a")))
      hs.explain(df.where("k = 1").select("a"))
      hs.recommend(Seq(WorkloadQuery("explicit", df.where("a = 3").select("k"))))
      hs.createIndex(df, IndexConfig("recorder_idx", Seq("k"), Seq("a")))
      try {
        spark.sql("SHOW HYPERSPACE INDEXES").collect()
        spark.sql("SELECT * FROM VALUES (1), (2)").collect() // reads no source the advisor can index
        df.where("k = 2").write.parquet(newDir("recorder-out").getAbsolutePath + "/out")
        spark.read.parquet(indexDir("recorder_idx").getAbsolutePath).collect() // an index's files
        // A query the index now serves is the user's: recorded under its own plan, not the index's.
        withHyperspace(on = true)(run(lookupK))
        assert(frequencies() == Seq(lookupK -> 2L))
      } finally {
        hs.deleteIndex("recorder_idx")
        vacuumNow("recorder_idx")
      }
    }
  }

  test("each session records its own queries") {
    recording {
      val other: SparkSession = spark.newSession()
      other.conf.set(HyperspaceConf.SYSTEM_PATH.key, systemPath.getAbsolutePath)
      other.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "true")
      spark.read.parquet(source).createOrReplaceTempView("recorded_src") // views are per session
      other.read.parquet(source).createOrReplaceTempView("recorded_src")
      run(lookupK)
      other.sql(lookupA).collect()
      other.sql(lookupA).collect()
      assert(frequencies() == Seq(lookupK -> 1L))
      assert(frequencies(Hyperspace(other)) == Seq(lookupA -> 2L))
      assert(Hyperspace(other).clearRecordedQueries() == 1)
      assert(frequencies() == Seq(lookupK -> 1L))
    }
  }

  test("clearing forgets the recorded queries; recommend then says nothing was recorded") {
    recording {
      run(lookupK)
      run(lookupA)
      assert(hs.clearRecordedQueries() == 2)
      assert(hs.recordedQueries.isEmpty)
      val e = intercept[HyperspaceException](hs.recommendRecorded())
      assert(e.getMessage.contains("no query has been recorded"), e.getMessage)
    }
  }

  test("SQL: SHOW HYPERSPACE RECORDED QUERIES, RECOMMENDATIONS FOR RECORDED QUERIES, CLEAR") {
    recording {
      run(lookupK, times = 2)
      run(lookupA)
      val shown = spark.sql("SHOW HYPERSPACE RECORDED QUERIES").collect().map(r => r.getString(0) -> r.getLong(1))
      assert(shown.toSeq == Seq(lookupK -> 2L, lookupA -> 1L))
      // a rises from file to file: a MinMax sketch serves lookupA for a few bytes, ranked first.
      val rows = spark.sql("SHOW HYPERSPACE RECOMMENDATIONS BUDGET 100000000 LIMIT 2 FOR RECORDED QUERIES").collect()
      assert(rows.map(r => r.getAs[String]("kind") -> r.getAs[scala.collection.Seq[String]]("indexedColumns").toSeq)
        .toSeq == Seq("DataSkippingIndex" -> Seq("MinMax(a)"), "CoveringIndex" -> Seq("k")))
      assert(rows(1).getAs[String]("evidence").contains("\"weight\":2.0"), rows(1))
      assert(rows(0).getAs[String]("config").contains("\"sketches\""), rows(0))
      // The statements themselves are not recorded.
      assert(frequencies() == Seq(lookupK -> 2L, lookupA -> 1L))
      assert(spark.sql("clear hyperspace recorded queries").collect().map(_.getInt(0)).toSeq == Seq(2))
      val e = intercept[HyperspaceException](spark.sql("SHOW HYPERSPACE RECOMMENDATIONS FOR RECORDED QUERIES"))
      assert(e.getMessage.contains("no query has been recorded"), e.getMessage)
      val bad = intercept[HyperspaceException](spark.sql("SHOW HYPERSPACE RECOMMENDATIONS FOR RECORDED"))
      assert(bad.getMessage.contains("a query as a string literal, or RECORDED QUERIES"), bad.getMessage)
      val clearIndex = intercept[HyperspaceException](spark.sql("CLEAR HYPERSPACE INDEX x"))
      assert(clearIndex.getMessage.contains("RECORDED"), clearIndex.getMessage)
      spark.sql("CLEAR CACHE") // Spark's own statement is still Spark's
    }
  }
}

/** A session built without the extension records once Hyperspace is attached to it. */
class QueryRecorderAttachSuite extends io.hyperspace.SparkSessionSuite {
  override protected def withExtension: Boolean = false

  test("an attached session records its queries; before attach nothing records them") {
    val path = newDir("attach-src").getAbsolutePath + "/data"
    spark.range(0, 100, 1, 2).selectExpr("id", "id % 7 AS k").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("attach_src")
    spark.conf.set(HyperspaceConf.ADVISOR_RECORD_QUERIES.key, "true")
    spark.conf.set(HyperspaceConf.SYSTEM_PATH.key, newDir("attach-indexes").getAbsolutePath)
    val query = "SELECT id FROM attach_src WHERE k = 3"
    spark.sql(query).collect()
    assert(QueryRecorder.recordedSoFar(spark).isEmpty) // no Hyperspace rule runs in this session yet
    assert(Hyperspace.attach(spark))
    spark.sql(query).collect()
    spark.sql(query).collect()
    assert(Hyperspace(spark).recordedQueries.map(q => q.label -> q.frequency) == Seq(query -> 2L))
    assert(Hyperspace(spark).recommendRecorded().indexes.map(_.indexedColumns) == Seq(Seq("k")))
  }
}
