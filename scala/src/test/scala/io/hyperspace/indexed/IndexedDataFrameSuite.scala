package io.hyperspace.indexed

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Column, DataFrame, Row}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.functions._
import org.apache.spark.storage.StorageLevel

import io.hyperspace._
import io.hyperspace.testing.Fuzz

/**
 * Differential tests: every lookup, filter, join and append on an Indexed DataFrame returns the
 * same multiset of rows as the same operation on the plain DataFrame it was built from, and the
 * executed plan shows the index was used (with adaptive execution on and off).
 */
class IndexedDataFrameSuite extends SparkSessionSuite with ExecutedNodes {

  // These tests check that the indexed operators return Spark's rows for every join type and
  // side; on their small tables the cost-based selection would often (rightly) pick Spark's join
  // instead, so they force the index. IndexedJoinSelectionSuite tests the selection itself.
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.hyperspace.indexed.joinSelection", "index")
  }

  /** The source table: duplicate keys, null keys, nulls in other columns. */
  private def source(n: Int = 3000): DataFrame = spark.range(n).selectExpr(
    "CASE WHEN id % 97 = 0 THEN NULL ELSE id % 500 END AS k",
    "concat('s', id) AS s",
    "CAST(id AS INT) AS i",
    "CASE WHEN id % 5 = 0 THEN NULL ELSE CAST(id % 7 AS STRING) END AS g")

  /** A probe side: some keys hit, some miss, some are null, some repeat. */
  private lazy val probe: DataFrame = spark.range(0, 2400, 3).selectExpr(
    "CASE WHEN id % 50 = 0 THEN NULL ELSE id % 650 END AS pk",
    "CAST(id AS INT) AS pv",
    "CAST(id % 7 AS STRING) AS pg")

  private def rows(df: DataFrame): Seq[String] = df.collect().map(canonical).toSeq.sorted

  private def canonical(r: Row): String = r.toSeq.map {
    case b: Array[Byte] => b.mkString("[", ",", "]")
    case null => "null"
    case v => v.toString
  }.mkString("|")

  private def assertSameRows(actual: DataFrame, expected: DataFrame, clue: String = ""): Unit = {
    val (a, e) = (rows(actual), rows(expected))
    assert(a == e,
      s"$clue: ${a.size} rows vs ${e.size} expected; " +
        s"missing ${e.diff(a).take(5)}, extra ${a.diff(e).take(5)}")
  }

  private def withAqe[T](enabled: Boolean)(body: => T): T = {
    val key = "spark.sql.adaptive.enabled"
    val previous = spark.conf.get(key)
    spark.conf.set(key, enabled.toString)
    try body
    finally spark.conf.set(key, previous)
  }

  private lazy val plain = source().cache()
  private lazy val idf = source().createIndex("k", 4).cache()

  test("createIndex: the indexed DataFrame has the source's rows and reports its size") {
    assertSameRows(idf.toDF, plain)
    val stats = idf.memoryStats
    assert(stats("rows") == 3000L)
    assert(stats("keys") == 500L)
    assert(stats("cachedPartitions") == 4L)
    // Its batches (compressed or not) and its key index.
    assert(stats("blockManagerBytes") > stats("totalBatchBytes") + stats("ownTrieBytes"))
    assert(idf.toDF.queryExecution.optimizedPlan.stats.rowCount.contains(BigInt(3000)))
  }

  for (aqe <- Seq(true, false)) {
    test(s"point lookups and IN lists use the index (AQE $aqe)") {
      withAqe(aqe) {
        Seq(1L, 499L, 0L, 12345L).foreach { key =>
          val found = idf.getRows(key)
          assertSameRows(found, plain.filter(col("k") === key), s"key $key")
          assert(executedNodes(found).exists(_.isInstanceOf[IndexedLookupExec]))
          // Nothing but the lookup runs for a plain getRows (no filter re-checking the key).
          assert(!executedNodes(found).exists(_.isInstanceOf[org.apache.spark.sql.execution.FilterExec]))
        }
        val in = idf.toDF.filter(col("k").isin(3L, 4L, 4L, 777L) && col("i") > 100)
          .select("s", "k")
        assertSameRows(in,
          plain.filter(col("k").isin(3L, 4L, 777L) && col("i") > 100)
            .select("s", "k"))
        val lookup = executedNodes(in).collectFirst { case l: IndexedLookupExec => l }.get
        assert(lookup.keys.toSet == Set(3L, 4L, 777L))
        assert(lookup.metrics("numPartitionsRead").value <= 3)
      }
    }
  }

  test("a null key matches nothing; IS NULL and other filters scan") {
    assert(idf.getRows(null).count() == 0)
    assertSameRows(idf.toDF.filter(col("k").isNull), plain.filter(col("k").isNull))
    assertSameRows(idf.toDF.filter(col("g") === "3" || col("k") === 5),
      plain.filter(col("g") === "3" || col("k") === 5))
    val scanned = idf.toDF.filter(col("i") < 10)
    assertSameRows(scanned, plain.filter(col("i") < 10))
    assert(executedNodes(scanned).exists(_.isInstanceOf[IndexedScanExec]))
    assert(!executedNodes(scanned).exists(_.isInstanceOf[IndexedLookupExec]))
  }

  test("getRows converts an Int to a long key and rejects values it cannot compare") {
    assertSameRows(idf.getRows(7), plain.filter(col("k") === 7L))
    val e = intercept[HyperspaceException](idf.getRows("seven"))
    assert(e.getMessage.contains("'k'") && e.getMessage.contains("bigint"), e.getMessage)
  }

  private val joinTypes = Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi",
    "left_anti", "cross")

  private def withBroadcast[T](enabled: Boolean)(body: => T): T = {
    val key = "spark.sql.autoBroadcastJoinThreshold"
    val previous = spark.conf.get(key)
    spark.conf.set(key, if (enabled) "10m" else "-1")
    try body
    finally spark.conf.set(key, previous)
  }

  // Each join type and probe movement under one adaptive execution setting in CI (the settings in
  // turn), under both in `make test-full` (testing/Fuzz.scala).
  private val joinCases =
    for (broadcastProbe <- Seq(false, true); joinType <- joinTypes) yield (broadcastProbe, joinType)

  for (((broadcastProbe, joinType), n) <- joinCases.zipWithIndex; aqe <- Fuzz.settingsFor(Seq(true, false), n)) {
    val mode = if (broadcastProbe) "probe broadcast" else "probe shuffled"
    test(s"$joinType join with the index on either side ($mode, AQE $aqe)") {
      withAqe(aqe) {
        withBroadcast(broadcastProbe) {
          val i = idf.toDF
          val cases: Seq[(String, DataFrame, DataFrame)] = Seq(
            ("index left", i.join(probe, i("k") === probe("pk"), joinType),
              plain.join(probe, plain("k") === probe("pk"), joinType)),
            ("index right", probe.join(i, probe("pk") === i("k"), joinType),
              probe.join(plain, probe("pk") === plain("k"), joinType)),
            ("extra condition", i.join(probe, i("k") === probe("pk") && i("i") > probe("pv"), joinType),
              plain.join(probe, plain("k") === probe("pk") && plain("i") > probe("pv"), joinType)),
            ("composite key", probe.join(i, probe("pk") === i("k") && probe("pg") === i("g"), joinType),
              probe.join(plain, probe("pk") === plain("k") && probe("pg") === plain("g"), joinType)),
            ("filtered and projected index side", {
                val side = i.filter(col("i") % 2 === 0).select(col("k").as("key"), col("s"))
                side.join(probe, side("key") === probe("pk"), joinType)
              }, {
                val side = plain.filter(col("i") % 2 === 0).select(col("k").as("key"), col("s"))
                side.join(probe, side("key") === probe("pk"), joinType)
              }))
          cases.foreach { case (name, indexed, expected) =>
            assertSameRows(indexed, expected, s"$joinType / $name")
            val nodes = executedNodes(indexed)
            assert(nodes.exists(_.isInstanceOf[IndexedJoinExec]),
              s"$joinType / $name:\n" +
                indexed.queryExecution.executedPlan)
            // Only the probe side is shuffled; the index stays where it is cached.
            val join = nodes.collectFirst { case j: IndexedJoinExec => j }.get
            assert(executedNodes(indexed).collect { case s: ShuffleExchangeExec => s }
                .forall(s => !s.exists(_.isInstanceOf[IndexedScanExec])))
            assert(join.metrics("numProbeRows").value > 0)
            assert(join.broadcastProbe == broadcastProbe, s"$joinType / $name")
          }
        }
      }
    }
  }

  test("joins on something other than the key fall back to Spark") {
    val i = idf.toDF
    val byValue = i.join(probe, i("i") === probe("pv"), "inner")
    assertSameRows(byValue, plain.join(probe, plain("i") === probe("pv"), "inner"))
    assert(!executedNodes(byValue).exists(_.isInstanceOf[IndexedJoinExec]))
    // NOT IN: a null-aware anti join, which has no equi-join keys.
    idf.createOrReplaceTempView("idx_t")
    probe.createOrReplaceTempView("probe_t")
    plain.createOrReplaceTempView("plain_t")
    assertSameRows(spark.sql("SELECT * FROM probe_t WHERE pk NOT IN (SELECT k FROM idx_t WHERE k < 100)"),
      spark.sql("SELECT * FROM probe_t WHERE pk NOT IN (SELECT k FROM plain_t WHERE k < 100)"))
    // A join on a cast of the key: no index, same rows.
    val cast = i.join(probe, i("k").cast("int") === probe("pv"), "inner")
    assertSameRows(cast, plain.join(probe, plain("k").cast("int") === probe("pv"), "inner"))
  }

  test("SQL over a temp view uses the index for = , IN and joins on the key") {
    idf.createOrReplaceTempView("idx_sql")
    plain.createOrReplaceTempView("plain_sql")
    probe.createOrReplaceTempView("probe_sql")
    val queries = Seq(
      "SELECT * FROM %s WHERE k = 42",
      "SELECT s FROM %s WHERE k IN (1, 2, 3) AND i % 2 = 1",
      "SELECT t.s, p.pv FROM %s t JOIN probe_sql p ON t.k = p.pk WHERE p.pv > 100",
      "SELECT p.pk, count(t.s) FROM probe_sql p LEFT JOIN %s t ON t.k = p.pk GROUP BY p.pk",
      "SELECT * FROM probe_sql p WHERE EXISTS (SELECT 1 FROM %s t WHERE t.k = p.pk)",
      "SELECT * FROM probe_sql p WHERE NOT EXISTS (SELECT 1 FROM %s t WHERE t.k = p.pk AND t.i > p.pv)")
    queries.foreach { q =>
      val indexed = spark.sql(q.replace("%s", "idx_sql"))
      assertSameRows(indexed, spark.sql(q.replace("%s", "plain_sql")), q)
      assert(executedNodes(indexed).exists(n =>
          n.isInstanceOf[IndexedLookupExec] || n.isInstanceOf[IndexedJoinExec]), q)
    }
  }

  test("appends: new versions, old versions unchanged, divergent appends independent") {
    val base = source(1000).createIndex("k", 4).cache()
    val extraA = spark.range(5).selectExpr("id + 1 AS k", "'a' AS s", "CAST(-id AS INT) AS i",
      "CAST(NULL AS STRING) AS g")
    val extraB = spark.range(3).selectExpr("CAST(id * 1000 AS INT) AS k", "'b' AS s",
      "CAST(-id AS INT) AS i", "'x' AS g") // k as INT: up-cast to bigint
    val a = base.appendRows(extraA)
    val b = base.appendRows(extraB) // a second child of the same parent
    val aa = a.appendRows(extraA.select("g", "i", "s", "k")) // columns matched by name
    // Materialize in reverse order of creation.
    assertSameRows(aa.toDF, source(1000).union(extraA).union(extraA))
    assertSameRows(b.toDF, source(1000).union(extraB.selectExpr("CAST(k AS BIGINT) k", "s", "i", "g")))
    assertSameRows(a.toDF, source(1000).union(extraA))
    assertSameRows(base.toDF, source(1000))
    Seq(1L, 2L, 0L, 1000L).foreach { key =>
      assertSameRows(a.getRows(key), source(1000).union(extraA).filter(col("k") === key))
      assertSameRows(b.getRows(key), source(1000).union(extraB).filter(col("k") === key))
      assertSameRows(base.getRows(key), source(1000).filter(col("k") === key))
    }
    assert(Seq(base, a, b, aa).map(_.version) == Seq(0, 1, 1, 2))
    assert(a.isCached && a.memoryStats("ownBatchBytes") < base.memoryStats("ownBatchBytes"))
    val i = aa.toDF
    assertSameRows(i.join(probe, i("k") === probe("pk"), "full_outer"),
      source(1000).union(extraA).union(extraA).join(probe, col("k") === col("pk"), "full_outer"))
  }

  test("cache() of an append: one job, its build in one task per core, every version its own rows") {
    val base = source(2000).createIndex("k", 8).cache()
    val extra = source(300).selectExpr("k + 1 AS k", "concat('new', s) AS s", "i", "g")
    val v1 = base.appendRows(extra)
    val stages = new java.util.concurrent.ConcurrentHashMap[Int, Int]()
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onStageSubmitted(e: org.apache.spark.scheduler.SparkListenerStageSubmitted): Unit =
        stages.put(e.stageInfo.stageId, e.stageInfo.numTasks)
    }
    spark.sparkContext.addSparkListener(listener)
    val jobs = try jobsDuring(v1.cache())
    finally spark.sparkContext.removeSparkListener(listener)
    assert(jobs == 1)
    // The last stage builds the 8 partitions: in local[2], two tasks of four partitions each.
    val buildTasks = stages.get(stages.keySet().iterator().asScala.max)
    assert(buildTasks == spark.sparkContext.defaultParallelism, stages)
    assert(v1.cachedPartitionExecutors.values.forall(_.nonEmpty))
    assert(v1.memoryStats("rows") == 2300L && v1.memoryStats("cachedPartitions") == 8L)
    val v2 = v1.appendRows(extra).cache()
    assertSameRows(v2.toDF, source(2000).union(extra).union(extra))
    assertSameRows(v1.toDF, source(2000).union(extra))
    assertSameRows(base.toDF, source(2000))
    Seq(1L, 2L, 0L, 499L, 500L).foreach { key =>
      assertSameRows(v2.getRows(key), source(2000).union(extra).union(extra).filter(col("k") === key))
      assertSameRows(v1.getRows(key), source(2000).union(extra).filter(col("k") === key))
      assertSameRows(base.getRows(key), source(2000).filter(col("k") === key))
    }
    val j = v1.toDF
    assertSameRows(j.join(probe, j("k") === probe("pk"), "left_outer"),
      source(2000).union(extra).join(probe, col("k") === col("pk"), "left_outer"))
  }

  test("many versions each answer with their own rows") {
    var versions = Seq(source(500).createIndex("k", 3).cache())
    (1 to 12).foreach { v =>
      val more = spark.range(4).selectExpr(s"id * 7 AS k", s"'v$v' AS s", s"$v AS i", "'g' AS g")
      versions = versions :+ versions.last.appendRows(more)
    }
    versions.zipWithIndex.foreach { case (idxv, v) =>
      assert(idxv.getRows(7L).filter(col("g") === "g").count() == v, s"version $v")
      assert(idxv.count() == 500 + 4 * v)
    }
  }

  test("generated data: lookups and joins on every version agree with plain DataFrames") {
    import spark.implicits._
    val rand = new scala.util.Random(20)
    val special = Seq(0L, -1L, 1L, Long.MinValue, Long.MaxValue, Long.MinValue + 1, Int.MinValue.toLong)
    def keyOf(): java.lang.Long = rand.nextInt(20) match {
      case 0 => null
      case 1 | 2 => special(rand.nextInt(special.size))
      case 3 => rand.nextLong()
      case _ => (rand.nextInt(400) - 200).toLong * 1000003L // negatives, multiples of a prime
    }
    def batch(n: Int, tag: String): DataFrame = (0 until n).map(i => (keyOf(), s"$tag-$i", rand.nextInt(1000))).toDF(
      "k", "s", "i")
    val sources = batch(3000, "v0") +: (1 to 11).map(v => batch(20 + rand.nextInt(200), s"v$v"))
    // Eleven appends: more than the eight key-table layers a version looks up, so merges happen.
    val versions = sources.tail.scanLeft(sources.head.createIndex("k", 3).cache())((idx, more) =>
      idx.appendRows(more).cache())
    val probeKeys = (0 until 300).map(_ => keyOf()).toDF("pk")
    versions.zipWithIndex.foreach { case (idx, v) =>
      val plainV = sources.take(v + 1).reduce(_ union _)
      val keys = (0 until 25).map(_ => keyOf()).filter(_ != null) ++ special
      assertSameRows(idx.toDF.filter(col("k").isin(keys: _*)), plainV.filter(col("k").isin(keys: _*)),
        s"lookups, version $v")
      assert(executedNodes(idx.toDF.filter(col("k").isin(keys: _*))).exists(_.isInstanceOf[IndexedLookupExec]))
      keys.take(5).foreach { k =>
        assertSameRows(idx.getRows(k), plainV.filter(col("k") === k), s"key $k, version $v")
      }
      val i = idx.toDF
      Seq("inner", "left_outer", "full_outer").foreach { jt =>
        assertSameRows(i.join(probeKeys, i("k") === probeKeys("pk"), jt),
          plainV.join(probeKeys, plainV("k") === probeKeys("pk"), jt), s"$jt join, version $v")
      }
      assert(idx.count() == plainV.count())
    }
    versions.foreach(_.unpersist(blocking = true))
  }

  test("appendRows rejects rows that do not fit, naming the column") {
    val missing = intercept[HyperspaceException](idf.appendRows(spark.range(1).selectExpr("id AS k")))
    assert(missing.getMessage.contains("'s'"), missing.getMessage)
    val extra = intercept[HyperspaceException](idf.appendRows(source(1).withColumn("zz", lit(1))))
    assert(extra.getMessage.contains("'zz'"), extra.getMessage)
    val wrong = intercept[HyperspaceException](idf.appendRows(
        source(1).withColumn("i", lit("text"))))
    assert(wrong.getMessage.contains("'i'") && wrong.getMessage.contains("string"), wrong.getMessage)
  }

  test("createIndex rejects unknown columns and unsupported key types, naming the column") {
    val unknown = intercept[HyperspaceException](source().createIndex("nope"))
    assert(unknown.getMessage.contains("'nope'") && unknown.getMessage.contains("k, s, i, g"))
    val complex = spark.range(3).selectExpr("id", "array(id) AS arr", "map(id, id) AS m")
    Seq("arr", "m").foreach { c =>
      val e = intercept[HyperspaceException](complex.createIndex(c))
      assert(e.getMessage.contains(s"'$c'"), e.getMessage)
    }
    val collated = spark.range(3).selectExpr("CAST(id AS STRING) COLLATE UTF8_LCASE AS c")
    assert(intercept[HyperspaceException](collated.createIndex("c")).getMessage.contains("'c'"))
    assert(intercept[HyperspaceException](source().createIndex("k", 0)).getMessage.contains("'k'"))
  }

  test("every atomic key type: lookups and joins agree with plain DataFrames") {
    val df = AtomicKeyTypes.frame(spark, 400)
    val base = df.cache()
    df.columns.filter(_.startsWith("b_")).foreach { c =>
      val indexed = df.createIndex(c, 3).cache()
      val sample = base.filter(col(c).isNotNull).select(c).limit(1).collect().head.get(0)
      assertSameRows(indexed.getRows(sample), base.filter(col(c) === lit(sample)), c)
      assert(executedNodes(indexed.getRows(sample)).exists(_.isInstanceOf[IndexedLookupExec]), c)
      val other = base.select(col(c).as("o"), col("id").as("oid")).filter(col("oid") % 3 === 0)
      val i = indexed.toDF
      val joined = i.join(other, i(c) === other("o"), "left_outer")
      assertSameRows(joined, base.join(other, base(c) === other("o"), "left_outer"), c)
      assert(executedNodes(joined).exists(_.isInstanceOf[IndexedJoinExec]), c)
      indexed.unpersist(blocking = true)
    }
  }

  test("floating point keys: -0.0 joins 0.0 and NaN joins NaN, as in Spark") {
    val values = spark.createDataFrame(Seq((0.0, 1), (-0.0, 2), (Double.NaN, 3), (1.0, 4)))
      .toDF("d", "n")
    val probeSide = spark.createDataFrame(Seq((-0.0, "a"), (Double.NaN, "b"), (2.0, "c")))
      .toDF("pd", "p")
    val i = values.createIndex("d", 4).cache().toDF
    assertSameRows(i.join(probeSide, i("d") === probeSide("pd"), "full_outer"),
      values.join(probeSide, values("d") === probeSide("pd"), "full_outer"))
    assert(values.createIndex("d", 4).getRows(-0.0).count() == 2)
  }

  test("an index joined with an index on the same key and partitioning needs no shuffle") {
    val left = source(600).createIndex("k", 4).cache().toDF
    val right = probe.withColumnRenamed("pk", "k2").createIndex("k2", 4).cache().toDF
    withBroadcast(enabled = false) {
      val joined = left.join(right, left("k") === right("k2"), "inner")
      assertSameRows(joined, source(600).join(probe, col("k") === col("pk"), "inner"))
      assert(executedNodes(joined).exists(_.isInstanceOf[IndexedJoinExec]))
      assert(!executedNodes(joined).exists(_.isInstanceOf[ShuffleExchangeExec]))
    }
  }

  test("unpersist frees the block manager memory; queries still work from lineage") {
    val temp = source(800).createIndex("k", 2).cache()
    assert(temp.memoryStats("cachedPartitions") == 2L)
    temp.unpersist(blocking = true)
    assert(!temp.isCached)
    assert(spark.sparkContext.getRDDStorageInfo.forall(_.id != temp.data.rdd.id))
    assertSameRows(temp.getRows(3L), source(800).filter(col("k") === 3L))
    val e = intercept[HyperspaceException] {
      val t = source(10).createIndex("k", 2).cache()
      t.persist(StorageLevel.MEMORY_AND_DISK)
    }
    assert(e.getMessage.contains("already persisted"))
  }

  test("serialized storage levels work (partitions go through Java serialization)") {
    val ser = source(900).createIndex("k", 3).persist(StorageLevel.MEMORY_ONLY_SER)
    val v1 = ser.appendRows(source(10))
    assertSameRows(v1.getRows(5L), source(900).union(source(10)).filter(col("k") === 5L))
    assertSameRows(ser.toDF, source(900))
  }

  test("a broadcast hint on the probe side broadcasts it to the index partitions") {
    val i = idf.toDF
    withBroadcast(enabled = false) {
      val hinted = i.join(broadcast(probe), i("k") === probe("pk"), "inner")
      assertSameRows(hinted, plain.join(probe, plain("k") === probe("pk"), "inner"))
      assert(executedNodes(hinted).collect { case j: IndexedJoinExec => j.broadcastProbe } == Seq(true))
    }
  }

  test("rows larger than the configured batch size, end to end") {
    val key = "spark.hyperspace.indexed.batchSize"
    spark.conf.set(key, "4k")
    try {
      val wide = spark.range(60).selectExpr("id % 7 AS k", "repeat(CAST(id AS STRING), id * 40) AS big")
      val i = wide.createIndex("k", 2).cache()
      assertSameRows(i.getRows(3L), wide.filter(col("k") === 3L))
      assertSameRows(i.appendRows(wide).getRows(5L), wide.union(wide).filter(col("k") === 5L))
      assert(i.memoryStats("usedBatchBytes") > 60L * 40 * 10)
    } finally spark.conf.unset(key)
  }

  test("the Scala implicits and column helpers") {
    val i: IndexedDataFrame = source(50).createIndex("K")
    assert(i.keyColumn == "k" && i.numPartitions == 4 && !i.isCached)
    val c: Column = i("s")
    assert(i.toDF.select(c).count() == 50)
    assert(i.toString.contains("key=k"))
  }
}
