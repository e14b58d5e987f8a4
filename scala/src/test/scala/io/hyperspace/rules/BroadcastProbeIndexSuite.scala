package io.hyperspace.rules

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.optimizer.BuildLeft
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.functions.{broadcast, col, count, sum}

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.split.SplitIndexConfig
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * The streamed side of a join Spark broadcasts reads a covering index led by the join key
 * (BroadcastProbeIndexRule): the broadcast stays, the broadcast side reads no index, and the rows
 * are Spark's. Sides with a filter, other keys, uncovered columns, a composite key or the rule
 * turned off keep their source scan.
 */
class BroadcastProbeIndexSuite extends MaintenanceTestSupport {

  private val Threshold = "spark.sql.autoBroadcastJoinThreshold"
  private val Enabled = "spark.hyperspace.index.broadcastProbe.enabled"

  // A fact table of 20,000 rows in 4 files in random key order, and a dimension of 300 keys.
  private lazy val fact: String = {
    val path = newDir("fact").getAbsolutePath + "/data"
    spark.range(0, 20000, 1, 4).selectExpr("CAST(pmod(hash(id), 500) AS BIGINT) AS key",
      "CONCAT('n', pmod(hash(id, 1), 37)) AS name", "CAST(pmod(hash(id, 2), 10000) AS DOUBLE) / 7 AS amount",
      "CAST(pmod(hash(id, 3), 4) AS INT) AS part").write.parquet(path)
    path
  }
  private lazy val dim: String = {
    val path = newDir("dim").getAbsolutePath + "/data"
    spark.range(0, 300, 1, 1).selectExpr("id AS dkey", "CONCAT('label-', id % 7) AS label",
      "CONCAT('n', id % 37) AS dname").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(factDf, IndexConfig("factByKey", Seq("key"), Seq("amount", "name")))
    hs.createIndex(factDf, IndexConfig("factByKeyNarrow", Seq("key"), Seq("amount")))
    hs.createIndex(factDf, IndexConfig("factByName", Seq("name"), Seq("key", "amount")))
    hs.createIndex(dimDf, IndexConfig("dimByKey", Seq("dkey"), Seq("label", "dname")))
  }

  private def factDf: DataFrame = spark.read.parquet(fact)
  private def dimDf: DataFrame = spark.read.parquet(dim)

  /** A threshold under which the dimension is broadcast and the fact table is not. */
  private lazy val dimFits: String =
    withHyperspace(on = false)(dimDf.queryExecution.optimizedPlan.stats.sizeInBytes).toString

  private def broadcastJoins(plan: SparkPlan): Seq[BroadcastHashJoinExec] =
    plan.collect { case j: BroadcastHashJoinExec => j }

  /** Index names the broadcast (build) side of the plan's one broadcast join reads. */
  private def broadcastSideIndexes(plan: SparkPlan): Seq[String] = {
    val join = broadcastJoins(plan).head
    val build = if (join.buildSide == BuildLeft) join.left else join.right
    indexesUsed(build)
  }

  /** The tasks of each file scan of the streamed side of the plan's one broadcast join. */
  private def streamedScanTasks(plan: SparkPlan): Seq[Int] = {
    val join = broadcastJoins(plan).head
    val streamed = if (join.buildSide == BuildLeft) join.right else join.left
    streamed.collect { case s: FileSourceScanExec => s.inputRDDs().head.getNumPartitions }
  }

  /** The executed plan of `query` with Hyperspace off (after it ran). */
  private def sparksPlan(query: => DataFrame): SparkPlan = withHyperspace(on = false) {
    val df = query
    df.collect()
    executed(df)
  }

  test("a many-bucket index over a fact table in few files: Spark's scan and its tasks stay, whyNot says why") {
    // The shape of issue #55: the fact table in 2 files, a dimension Spark broadcasts, a covering
    // index of 64 buckets, an aggregate above the join (under which Spark keeps a bucketed scan).
    // A wide column the query does not read makes the index the smaller in bytes.
    val few = newDir("fewFiles").getAbsolutePath + "/data"
    spark.range(0, 40000, 1, 2).selectExpr("CAST(pmod(hash(id), 3000) AS BIGINT) AS fkey",
      "CAST(pmod(hash(id, 5), 1000) AS DOUBLE) AS famount", "sha2(CAST(id AS STRING), 256) AS fpad")
      .write.parquet(few)
    hs.createIndex(spark.read.parquet(few), IndexConfig("fewFilesByKey", Seq("fkey"), Seq("famount"), Some(64)))
    def query: DataFrame = spark.read.parquet(few).select("fkey", "famount")
      .join(dimDf.select("dkey", "label"), col("fkey") === col("dkey")).groupBy("label").agg(count("*"), sum("famount"))
    for (aqe <- Seq("true", "false")) {
      withConf(Threshold -> dimFits, "spark.sql.adaptive.enabled" -> aqe) {
        val plan = sameResult(query)
        assert(indexesUsed(plan).isEmpty, s"AQE $aqe:\n${plan.treeString}")
        assert(streamedScanTasks(plan) == streamedScanTasks(sparksPlan(query)), s"AQE $aqe:\n${plan.treeString}")
        val why = hs.whyNot(query, "fewFilesByKey")
        assert(why.contains("would cost more than Spark's scan of the source") && why.contains("64 files"), why)
      }
    }
  }

  test("under an aggregate, the streamed side reads the index with file splits: no more tasks than Spark's scan") {
    // Read by bucket, the 4-bucket index would be 4 tasks where Spark reads the 4 small source
    // files in 2 (local[2]).
    def query: DataFrame =
      factDf.select("key", "amount").join(dimDf.select("dkey", "label"), col("key") === col("dkey"))
        .groupBy("label").agg(count("*"), sum("amount"))
    for (aqe <- Seq("true", "false")) {
      withConf(Threshold -> dimFits, "spark.sql.adaptive.enabled" -> aqe) {
        val plan = sameResult(query)
        assert(indexesUsed(plan) == Seq("factByKeyNarrow"), s"AQE $aqe:\n${plan.treeString}")
        assert(indexScans(plan).forall(!_.bucketedScan), s"AQE $aqe:\n${plan.treeString}")
        val (tasks, sparks) = (streamedScanTasks(plan), streamedScanTasks(sparksPlan(query)))
        assert(tasks.size == 1 && sparks.size == 1 && tasks.head <= sparks.head, s"AQE $aqe: $tasks vs $sparks")
      }
    }
  }

  test("generated shapes: rows equal; the index is read only in no more tasks and for fewer bytes than the source") {
    // Source files and index buckets drawn so that some shapes pay (many source files, few
    // buckets) and some do not (few files, many buckets); queries with and without an aggregate.
    val random = new Random(20261204L)
    val d = dimDf.select("dkey", "label")
    val outcomes = scala.collection.mutable.Set.empty[Boolean]
    for (round <- 0 until 6) {
      val (files, buckets) = (Seq(1, 2, 8, 16)(random.nextInt(4)), Seq(2, 8, 64)(random.nextInt(3)))
      val path = newDir(s"shape$round").getAbsolutePath + "/data"
      spark.range(0, 12000 + random.nextInt(20000), 1, files).selectExpr(
        "CASE WHEN id % 97 = 0 THEN NULL ELSE CAST(pmod(hash(id), 400) AS BIGINT) END AS skey",
        "CAST(pmod(hash(id, 7), 1000) AS DOUBLE) / 3 AS samount", "CONCAT('p', id % 11) AS stag").write.parquet(path)
      val name = s"shape${round}ByKey"
      hs.createIndex(spark.read.parquet(path), IndexConfig(name, Seq("skey"), Seq("samount", "stag"), Some(buckets)))
      val how = Seq("inner", "left_outer", "left_semi", "left_anti")(random.nextInt(4))
      val aggregated = random.nextBoolean()
      def query: DataFrame = {
        val joined = spark.read.parquet(path).join(d, col("skey") === col("dkey"), how)
        if (!aggregated) joined
        else if (how == "left_semi" || how == "left_anti") joined.groupBy("stag").agg(count("*"), sum("samount"))
        else joined.groupBy("label").agg(count("*"), sum("samount"))
      }
      val aqe = random.nextBoolean().toString
      withConf(Threshold -> dimFits, "spark.sql.adaptive.enabled" -> aqe) {
        val plan = sameResult(query)
        val clue = s"round $round: $files files, $buckets buckets, $how, aggregated $aggregated, AQE $aqe\n" +
          plan.treeString
        assert(broadcastJoins(plan).size == 1, clue)
        outcomes += indexesUsed(plan).nonEmpty
        if (indexesUsed(plan).nonEmpty) {
          assert(indexScans(plan).forall(!_.bucketedScan), clue)
          assert(streamedScanTasks(plan).sum <= streamedScanTasks(sparksPlan(query)).sum, clue)
        } else {
          val why = hs.whyNot(query, name)
          assert(why.contains("would cost more than Spark's scan") || why.contains("is not smaller than the source"),
            s"$clue\n$why")
        }
      }
    }
    assert(outcomes == Set(true, false), "the shapes drawn must include one the index serves and one it does not")
  }

  test("generated joins: the streamed side reads the smallest index led by the key, the broadcast stays, rows equal") {
    val random = new Random(20261126L)
    val joinTypes = Seq("inner", "left_outer", "left_semi", "left_anti", "right_outer")
    for (round <- 0 until 12) {
      val how = joinTypes(random.nextInt(joinTypes.size))
      val aqe = random.nextBoolean().toString
      val hinted = random.nextBoolean()
      val factColumns = Seq("key") ++ random.shuffle(Seq("amount", "name")).take(random.nextInt(3))
      val f = factDf.select(factColumns.map(col): _*)
      val d = dimDf.select("dkey", "label")
      def query: DataFrame = {
        // Right outer can only broadcast its left side: the dimension goes there.
        val (small, big) = (if (hinted) broadcast(d) else d, f)
        if (how == "right_outer") small.join(big, small("dkey") === big("key"), how)
        else big.join(small, big("key") === small("dkey"), how)
      }
      withConf("spark.sql.adaptive.enabled" -> aqe, Threshold -> (if (hinted) "-1" else dimFits)) {
        val plan = sameResult(query)
        val context = s"round $round: $how, columns ${factColumns.mkString(",")}, AQE $aqe, hinted $hinted\n" +
          plan.treeString
        assert(broadcastJoins(plan).size == 1, context)
        assert(broadcastSideIndexes(plan).isEmpty, context)
        val expected = if (factColumns.contains("name")) "factByKey" else "factByKeyNarrow"
        assert(indexesUsed(plan) == Seq(expected), context)
        assert(shuffles(plan) == 0, context)
      }
    }
  }

  test("a side with a filter, a composite key, uncovered columns or the rule off keeps its source scan") {
    withConf(Threshold -> dimFits) {
      val d = dimDf.select("dkey", "label", "dname")
      // A filter is the filter rule's: on name it reads factByName, on amount nothing serves it.
      val byName = sameResult(factDf.where("name = 'n3'").select("key", "amount").join(d, col("key") === col("dkey")))
      assert(indexesUsed(byName) == Seq("factByName"), byName.treeString)
      val byAmount =
        sameResult(factDf.where("amount > 100").select("key", "amount").join(d, col("key") === col("dkey")))
      assert(indexesUsed(byAmount).isEmpty, byAmount.treeString)

      val composite = sameResult(factDf.select("key", "name", "amount")
          .join(d, col("key") === col("dkey") && col("name") === col("dname")))
      assert(indexesUsed(composite).isEmpty, composite.treeString)

      val uncovered = sameResult(factDf.select("key", "part").join(d, col("key") === col("dkey")))
      assert(indexesUsed(uncovered).isEmpty, uncovered.treeString)

      withConf(Enabled -> "false") {
        val off = sameResult(factDf.select("key", "amount").join(d, col("key") === col("dkey")))
        assert(indexesUsed(off).isEmpty && broadcastJoins(off).size == 1, off.treeString)
      }
    }
  }

  test("an index led by a string join key serves a join on it") {
    withConf(Threshold -> dimFits) {
      val plan = sameResult(factDf.select("name", "amount").join(dimDf.select("dname", "label"),
          col("name") === col("dname")))
      assert(indexesUsed(plan) == Seq("factByName") && broadcastSideIndexes(plan).isEmpty, plan.treeString)
    }
  }

  test("whyNot: another leading column, another index chosen, the broadcast side") {
    withConf(Threshold -> dimFits) {
      val query = factDf.select("key", "amount").join(dimDf.select("dkey", "label"), col("key") === col("dkey"))
      val byName = hs.whyNot(query, "factByName")
      assert(byName.contains("leading column (name) is not the join key (key)"), byName)
      val wide = hs.whyNot(query, "factByKey")
      assert(wide.contains("index 'factByKeyNarrow' was chosen instead"), wide)
      val dimSide = hs.whyNot(query, "dimByKey")
      assert(dimSide.contains("Spark broadcasts this side of the join"), dimSide)
    }
  }

  test("a stale index serves the streamed side through hybrid scan only, with the appended rows") {
    val dir = newSource("probeStale", partitioned = false, rows = 4000, files = 4)
    val small = newDir("probeSmall").getAbsolutePath + "/data"
    spark.range(0, 50, 1, 1).selectExpr("id AS sid", "CONCAT('s', id) AS tag").write.parquet(small)
    hs.createIndex(read(dir), IndexConfig("staleById", Seq("id"), Seq("amount")))
    append(dir, partitioned = false, from = 100000L)
    def query: DataFrame = read(dir).select("id", "amount")
      .join(spark.read.parquet(small), col("id") === col("sid"))
    val threshold = withHyperspace(on = false)(
      spark.read.parquet(small).queryExecution.optimizedPlan.stats.sizeInBytes).toString
    withConf(Threshold -> threshold) {
      val stale = sameResult(query)
      assert(indexesUsed(stale).isEmpty, stale.treeString)
      withHybridScan {
        val hybrid = sameResult(query)
        assert(indexesUsed(hybrid) == Seq("staleById") && broadcastJoins(hybrid).size == 1, hybrid.treeString)
      }
    }
  }

  test("no rewrite when the index in place would make Spark broadcast the other side") {
    // A wide fact table (each row 2 KB of hashes, which Parquet cannot compress away) whose
    // narrow index is smaller than the dimension: with the index in place both sides fit the
    // threshold and Spark would broadcast the index instead.
    val wide = newDir("wideFact").getAbsolutePath + "/data"
    spark.range(0, 1000, 1, 2).selectExpr("id % 50 AS wkey", "CAST(id AS DOUBLE) AS w",
      "concat_ws('', transform(sequence(1, 16), i -> sha2(concat(CAST(id AS STRING), '-', CAST(i AS STRING)), 512))) " +
        "AS pad").write.parquet(wide)
    val mid = newDir("midDim").getAbsolutePath + "/data"
    spark.range(0, 5000, 1, 1).selectExpr("id AS mkey", "CONCAT('label-', id) AS mlabel").write.parquet(mid)
    hs.createIndex(spark.read.parquet(wide), IndexConfig("wideByKey", Seq("wkey"), Seq("w")))
    def query: DataFrame = spark.read.parquet(wide).select("wkey", "w")
      .join(spark.read.parquet(mid), col("wkey") === col("mkey"))
    val (midBytes, wideBytes) = withHyperspace(on = false)((
        spark.read.parquet(mid).queryExecution.optimizedPlan.stats.sizeInBytes,
        spark.read.parquet(wide).select("wkey", "w").queryExecution.optimizedPlan.stats.sizeInBytes))
    assert(midBytes < wideBytes, s"the dimension ($midBytes) must be estimated smaller than the fact ($wideBytes)")
    withConf(Threshold -> midBytes.toString) {
      // The index side's estimate is at most its files' size.
      val indexBytes = hs.indexes.where("name = 'wideByKey'").select("sizeInBytes").head().getLong(0)
      assert(indexBytes < midBytes, s"the index ($indexBytes bytes) must be smaller than the dimension's estimate")
      val plan = sameResult(query)
      assert(indexesUsed(plan).isEmpty && broadcastJoins(plan).size == 1, plan.treeString)
    }
  }

  test("a side a split index will prune at run time is left to join pruning") {
    val dir = newSource("probeSplit", partitioned = false, rows = 4000, files = 4)
    val small = newDir("probeSplitSmall").getAbsolutePath + "/data"
    spark.range(0, 5, 1, 1).selectExpr("id * 7 AS sid", "CONCAT('s', id) AS tag").write.parquet(small)
    hs.createIndex(read(dir), IndexConfig("coveringById", Seq("id"), Seq("amount")))
    hs.createIndex(read(dir), SplitIndexConfig("splitById", Seq("id")))
    def query: DataFrame = read(dir).select("id", "amount").join(spark.read.parquet(small), col("id") === col("sid"))
    val threshold = withHyperspace(on = false)(
      spark.read.parquet(small).queryExecution.optimizedPlan.stats.sizeInBytes).toString
    withConf(Threshold -> threshold, "spark.sql.adaptive.enabled" -> "true") {
      val pruned = sameResult(query)
      assert(indexesUsed(pruned).isEmpty && broadcastJoins(pruned).size == 1, pruned.treeString)
      // Without adaptive execution nothing prunes at run time: the covering index feeds the probes.
      withConf("spark.sql.adaptive.enabled" -> "false") {
        val probed = sameResult(query)
        assert(indexesUsed(probed) == Seq("coveringById"), probed.treeString)
      }
    }
  }
}
