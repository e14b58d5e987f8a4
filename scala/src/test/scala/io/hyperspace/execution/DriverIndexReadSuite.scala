package io.hyperspace.execution

import org.apache.spark.metrics.source.CodegenMetrics
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{CoalesceExec, FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec

import io.hyperspace.index.IndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * Lookups that read a few small index files are answered in the driver when their rows are
 * collected there, with no Spark job and the same rows; anything else runs as planned.
 */
class DriverIndexReadSuite extends RuleTestSupport {

  private lazy val source = writeSource("lookups", rows = 4000, files = 5)

  /** `id`; `g` a small group with NULLs; `price` a decimal with NULLs (every 11th id); `qty`; `d` a date. */
  private lazy val sales: String = {
    val path = newDir("driver-aggregates").getAbsolutePath + "/data"
    spark.range(0, 3000, 1, 4).selectExpr(
      "id",
      "CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(id % 5 AS INT) END AS g",
      "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id * 1.25 AS DECIMAL(12, 2)) END AS price",
      "CAST(id % 13 AS INT) AS qty",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 90 AS INT)) AS d").write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    hs.createIndex(spark.read.parquet(source), IndexConfig("lookupsById", Seq("id"), Seq("name", "amount")))
    hs.createIndex(spark.read.parquet(sales), IndexConfig("salesById", Seq("id"), Seq("g", "price", "qty", "d")))
  }

  /** The number of Spark jobs `action` starts on `df` (created first: reading a schema may take a job). */
  private def jobsOf[T](df: DataFrame)(action: DataFrame => T): Int = jobsDuring(action(df))

  private def lookup = spark.read.parquet(source).where("id IN (7, 1234)").select("id", "name", "amount")

  test("a lookup collected to the driver reads its index files there and runs no job") {
    val plan = sameResult(lookup)
    val Seq(read) = driverReads(plan)
    assert(read.metrics("numFiles").value >= 1 && read.metrics("numOutputRows").value == 2, plan.treeString)
    assert(indexesUsed(plan) == Seq("lookupsById"))
    withHyperspace(on = true) {
      assert(jobsOf(lookup)(_.collect()) == 0)
      // Nor a broadcast of the Hadoop configuration (planning included; created first: reading the
      // source's schema broadcasts one).
      val q = lookup
      assert(broadcastsDuring(q.collect()) == 0)
      assert(jobsOf(lookup.orderBy("id"))(_.collect()) > 0) // a Sort above: runs as planned
    }
    withHyperspace(on = false)(assert(jobsOf(lookup)(_.collect()) > 0))
  }

  test("a filter on the sorted indexed column reads without Parquet's dictionary filter, with Spark's rows") {
    def scanOf(plan: SparkPlan) = plan.collectFirst { case s: FileSourceScanExec => s }.get
    val dictionaryFilter = "parquet.filter.dictionary.enabled"
    for {
      maxBytes <- Seq("32m", "0") // read in the driver, and by a job
      where <- Seq("id = 7", "id IN (7, 1234)", "id BETWEEN 10 AND 12 AND amount > 0", "id = -1", "id > 3000")
    } withConf("spark.hyperspace.index.driverRead.maxBytes" -> maxBytes) {
      val plan = sameResult(spark.read.parquet(source).where(where).select("id", "name", "amount"))
      assert(indexesUsed(plan) == Seq("lookupsById") && driverReads(plan).nonEmpty == (maxBytes != "0"),
        plan.treeString)
      assert(scanOf(plan).relation.options.get(dictionaryFilter).contains("false"), where)
    }
    // The same index read for anything but a filter on its sorted column keeps the filter.
    val entry = logOf("lookupsById").latestStable.get
    val sourceRelation = spark.read.parquet(source).queryExecution.analyzed
      .collectFirst { case r: org.apache.spark.sql.execution.datasources.LogicalRelation => r }.get
    val amount = sourceRelation.output.find(_.name == "amount").get
    val plain = io.hyperspace.index.covering.IndexScan.scanFor(spark, entry, sourceRelation,
      Seq(org.apache.spark.sql.catalyst.expressions.IsNotNull(amount)))
    assert(plain.relation.asInstanceOf[io.hyperspace.index.covering.IndexHadoopFsRelation].options
        .get(dictionaryFilter).isEmpty)
  }

  test("show, first and limit take their rows from the driver-side read") {
    withHyperspace(on = true) {
      assert(jobsOf(lookup.limit(1))(_.collect()) == 0)
      assert(jobsOf(spark.read.parquet(source).where("id = 7").select("name"))(_.first()) == 0)
      assert(jobsOf(lookup)(_.take(1)) == 0)
      assert(lookup.limit(1).collect().length == 1)
    }
    sameResult(lookup.limit(5))
  }

  test("lookups read in the driver that differ only in their key compile no class after the first") {
    def lookupOf(id: Int) = spark.read.parquet(source).where(s"id = $id AND amount > 0").select("id", "name")
    withHyperspace(on = true) {
      assert(driverReads(executed(lookupOf(11))).nonEmpty)
      lookupOf(11).collect()
      val compiled = CodegenMetrics.METRIC_COMPILATION_TIME.getCount
      val found = (12 to 15).map(id => lookupOf(id).collect().map(_.getLong(0)).toSeq)
      assert(CodegenMetrics.METRIC_COMPILATION_TIME.getCount == compiled)
      assert(found == (12 to 15).map(id => Seq(id.toLong)))
    }
  }

  test("more matching rows than driverRead.maxRows run as a job, with the same rows") {
    withConf("spark.hyperspace.index.driverRead.maxRows" -> "10") {
      def wide = spark.read.parquet(source).where("id > 100").select("id", "name")
      val plan = sameResult(wide)
      assert(indexesUsed(plan) == Seq("lookupsById"), plan.treeString)
      withHyperspace(on = true)(assert(jobsOf(wide)(_.collect()) > 0))
    }
  }

  test("driverRead.maxBytes bounds the files read in the driver; 0 turns it off") {
    withConf("spark.hyperspace.index.driverRead.maxBytes" -> "0") {
      val plan = sameResult(lookup)
      assert(driverReads(plan).isEmpty && indexesUsed(plan) == Seq("lookupsById"), plan.treeString)
    }
    withConf("spark.hyperspace.index.driverRead.maxBytes" -> "1") {
      assert(driverReads(sameResult(lookup)).isEmpty)
    }
  }

  test("non-deterministic expressions and other operators above the scan are left to a job") {
    val random = withHyperspace(on = true) {
      val df = spark.read.parquet(source).where("id = 7").selectExpr("id", "rand(3) AS r")
      df.collect()
      executed(df)
    }
    assert(driverReads(random).isEmpty && indexesUsed(random) == Seq("lookupsById"), random.treeString)
    val sorted = sameResult(spark.read.parquet(source).where("id IN (7, 8)").orderBy("name").select("name"))
    assert(driverReads(sorted).isEmpty, sorted.treeString)
  }

  test("a lookup in a scalar subquery and under a filter on other columns returns Spark's rows") {
    spark.read.parquet(source).createOrReplaceTempView("lookups_v")
    sameResult(spark.sql(
        "SELECT id, name FROM lookups_v WHERE id = (SELECT max(id) FROM lookups_v WHERE id IN (5, 9))"))
    sameResult(spark.read.parquet(source).where("id IN (3, 20, 37) AND amount > 10 AND name LIKE 'name-%'")
        .select("name", "amount"))
    sameResult(spark.read.parquet(source).where("id = -1").select("name")) // no row
  }

  // Files this small are one read partition only when Spark is not asked to spread them over the
  // cores; aggregates over one partition plan no Exchange (AggregateSmallIndexScanInOnePartition).
  private val OneReadPartition = "spark.sql.files.minPartitionNum" -> "1"

  private def salesDf = spark.read.parquet(sales)

  for (aqe <- Seq(true, false)) {
    val mode = if (aqe) "AQE on" else "AQE off"

    test(s"a global aggregate over a small index read is computed in the driver: no job, Spark's values ($mode)") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, OneReadPartition) {
        val declarative = Seq("count(*) AS n", "count(price)", "sum(price)", "avg(price)", "min(g)", "max(d)",
          "sum(qty * price)", "sum(price * price)")
        // Without DISTINCT the partial step's buffer is a row of objects (GlobalPartialAggregate);
        // with it, Spark's sort-based iteration over every step.
        for (aggregates <- Seq(declarative, declarative :+ "count(DISTINCT g)");
          where <- Seq(
            "id IN (7, 12, 1234, 2999)", // some rows, a NULL group (7) and a decimal of each sign of rounding
            "id IN (0, 11, 22, 33)", // every price NULL: sum and avg NULL, count(price) 0
            "id = -1", // no row: count 0, the rest NULL
            "id IN (5, 6) AND qty > 100", // rows read, none passing the filter
            "id BETWEEN 100 AND 2900")) { // most rows: sums of products wider than 18 digits over many
          def q = salesDf.where(where).selectExpr(aggregates: _*)
          val plan = sameResult(q)
          val Seq(read) = driverReads(plan)
          assert(read.metrics("numOutputRows").value == 1 && indexesUsed(plan) == Seq("salesById"), plan.treeString)
          val partial = plan.collect { case a: BaseAggregateExec if GlobalPartialAggregate.handles(a) => a }
          assert(partial.size == (if (aggregates == declarative) 1 else 0), plan.treeString)
          withHyperspace(on = true)(assert(jobsOf(q)(_.collect()) == 0, where))
        }
        // HAVING on a global aggregate: a Filter above it, still in the driver (no row, or one).
        for (bound <- Seq(0, 100)) {
          val having = sameResult(salesDf.where("id IN (7, 12)").selectExpr("count(*) AS n").where(s"n > $bound"))
          assert(driverReads(having).size == 1, having.treeString)
        }
      }
    }

    test(s"a grouped aggregate over a small index read is computed in the driver with Spark's groups ($mode)") {
      withConf("spark.sql.adaptive.enabled" -> aqe.toString, OneReadPartition) {
        val keys = (0 until 60).map(i => i * 37 + 1).mkString(", ")
        def q = salesDf.where(s"id IN ($keys)").groupBy("g") // NULL among the groups
          .agg(Map("price" -> "sum", "qty" -> "max", "d" -> "min", "id" -> "count"))
        val plan = sameResult(q)
        assert(driverReads(plan).size == 1 && shuffles(plan) == 0, plan.treeString)
        withHyperspace(on = true)(assert(jobsOf(q)(_.collect()) == 0))
        // Grouped on an expression, with DISTINCT and a HAVING; no group at all.
        salesDf.where(s"id IN ($keys)").createOrReplaceTempView("sales_v")
        sameResult(spark.sql("SELECT qty % 3 AS k, count(DISTINCT g), sum(price) FROM sales_v GROUP BY qty % 3 " +
            "HAVING sum(price) IS NULL OR sum(price) > 10"))
        val none = sameResult(salesDf.where("id = -1").groupBy("g").count())
        assert(driverReads(none).size == 1, none.treeString)
      }
    }
  }

  test("a grouped aggregate whose input is more than driverRead.maxRows runs as a job, with Spark's groups") {
    withConf("spark.hyperspace.index.driverRead.maxRows" -> "5", OneReadPartition) {
      def grouped = salesDf.where("id IN (1, 2, 3, 4, 5, 6, 8, 9)").groupBy("qty").agg(Map("price" -> "sum"))
      val plan = sameResult(grouped)
      assert(indexesUsed(plan) == Seq("salesById"), plan.treeString)
      withHyperspace(on = true)(assert(jobsOf(grouped)(_.collect()) > 0))
      // A global aggregate holds one row whatever it reads: still in the driver.
      def global = salesDf.where("id IN (1, 2, 3, 4, 5, 6, 8, 9)").selectExpr("sum(price)", "count(*)")
      sameResult(global)
      withHyperspace(on = true)(assert(jobsOf(global)(_.collect()) == 0))
    }
  }

  test("an aggregate over more index bytes than driverRead.maxBytes, or with it 0, runs as a job") {
    def q = salesDf.where("id IN (7, 12)").selectExpr("sum(price)", "count(*)")
    for (limit <- Seq("0", "1")) {
      withConf("spark.hyperspace.index.driverRead.maxBytes" -> limit, OneReadPartition) {
        val plan = sameResult(q)
        assert(driverReads(plan).isEmpty && indexesUsed(plan) == Seq("salesById"), plan.treeString)
        withHyperspace(on = true)(assert(jobsOf(q)(_.collect()) > 0))
      }
    }
  }

  private def threads(n: Int) = "spark.hyperspace.index.driverRead.threads" -> n.toString

  test("a read of several index files runs on several threads, with the rows one thread reads, in its order") {
    def wide = spark.read.parquet(source).where("id BETWEEN 100 AND 700 AND amount > 0").select("id", "name", "amount")
    def ordered(n: Int) = withConf(threads(n)) {
      val plan = sameResult(wide)
      val Seq(read) = driverReads(plan)
      assert(read.metrics("numFiles").value == 4, plan.treeString) // one file a bucket
      withHyperspace(on = true)((read.metrics("readThreads").value, wide.collect().toSeq))
    }
    val (oneThread, rows) = ordered(1)
    assert(oneThread == 1 && rows.nonEmpty)
    for (n <- Seq(2, 3, 8)) {
      val (used, threaded) = ordered(n)
      assert(used == math.min(n, 4) && threaded == rows, s"$n threads")
    }
    withConf(threads(3))(withHyperspace(on = true)(assert(jobsOf(wide)(_.collect()) == 0)))
  }

  test("runs of files are consecutive, of about equal bytes, and the same for the same files") {
    def files(sizes: Long*) = sizes.zipWithIndex.map { case (len, i) =>
      new org.apache.hadoop.fs.FileStatus(len, false, 1, 1, 0, new org.apache.hadoop.fs.Path(s"/f$i"))
    }
    def lengths(runs: Seq[Seq[org.apache.hadoop.fs.FileStatus]]) = runs.map(_.map(_.getLen))
    assert(lengths(DriverReadThreads.runs(files(Seq.fill(15)(100L): _*), 2)) ==
      Seq(Seq.fill(7)(100L), Seq.fill(8)(100L)))
    assert(lengths(DriverReadThreads.runs(files(900, 50, 50), 2)) == Seq(Seq(900), Seq(50, 50)))
    assert(lengths(DriverReadThreads.runs(files(10, 10), 8)) == Seq(Seq(10), Seq(10))) // no empty run
    assert(lengths(DriverReadThreads.runs(files(0, 0, 0), 2)) == Seq(Seq(0, 0, 0)))
    val many = files((1 to 40).map(i => (i * 37 % 11 + 1).toLong): _*)
    val runs = DriverReadThreads.runs(many, 3)
    assert(runs.flatten == many && runs.size == 3 && runs == DriverReadThreads.runs(many, 3))
    val bytes = runs.map(_.map(_.getLen).sum)
    assert(bytes.max - bytes.min <= many.map(_.getLen).max * 2, bytes)
  }

  test("a global aggregate over index files Spark would split is read as one partition, on threads in the driver") {
    // Spark spreads even these small files over the two cores once opening a file costs little.
    val spread = "spark.sql.files.openCostInBytes" -> "1"
    def q = salesDf.where("id BETWEEN 100 AND 2900").selectExpr("sum(price)", "count(*)", "min(d)", "sum(qty * price)")
    for (aqe <- Seq("true", "false")) {
      withConf("spark.sql.adaptive.enabled" -> aqe, spread, threads(2)) {
        val plan = sameResult(q)
        val Seq(read) = driverReads(plan)
        assert(read.metrics("readThreads").value == 2 && shuffles(plan) == 0, plan.treeString)
        withHyperspace(on = true)(assert(jobsOf(q)(_.collect()) == 0))
      }
      // One thread: the plan Spark splits over tasks, with its shuffle, as before driver reads had threads.
      withConf("spark.sql.adaptive.enabled" -> aqe, spread, threads(1)) {
        val plan = sameResult(q)
        assert(driverReads(plan).isEmpty && indexesUsed(plan) == Seq("salesById"), plan.treeString)
        withHyperspace(on = true)(assert(jobsOf(q)(_.collect()) > 0))
      }
      // A grouped aggregate keeps Spark's split: its input would be held whole.
      withConf("spark.sql.adaptive.enabled" -> aqe, spread, threads(2)) {
        val plan = sameResult(salesDf.where("id BETWEEN 100 AND 2900").groupBy("g").count())
        assert(driverReads(plan).isEmpty, plan.treeString)
      }
    }
  }

  test("threads share the row budget: past driverRead.maxRows the query runs as a job, with Spark's rows") {
    withConf(threads(3), "spark.hyperspace.index.driverRead.maxRows" -> "50") {
      def wide = spark.read.parquet(source).where("id BETWEEN 100 AND 700").select("id", "name")
      val plan = sameResult(wide)
      assert(indexesUsed(plan) == Seq("lookupsById"), plan.treeString)
      withHyperspace(on = true)(assert(jobsOf(wide)(_.collect()) > 0))
    }
  }

  test("a file that fails to read on another thread fails the query with the reader's own error") {
    val path = writeSource("driver-read-broken", rows = 800, files = 2)
    hs.createIndex(spark.read.parquet(path), IndexConfig("brokenById", Seq("id"), Seq("name")))
    def q = spark.read.parquet(path).where("id >= 0").select("id", "name")
    // The file the last thread reads (the read's last), overwritten with bytes that are not
    // Parquet, of the same length: the log's sizes still match, so queries keep using the index.
    val scan = withHyperspace(on = true)(executed(q)).collectFirst { case s: FileSourceScanExec => s }.get
    val last = new java.io.File(scan.relation.location.listFiles(Nil, scan.dataFilters).flatMap(_.files).last
        .fileStatus.getPath.toUri)
    java.nio.file.Files.write(last.toPath, Array.fill(last.length.toInt)('x'.toByte))
    def failure(n: Int): Throwable = withConf(threads(n)) {
      withHyperspace(on = true)(intercept[Throwable](q.collect()))
    }
    val (one, several) = (failure(1), failure(4))
    assert(several.getClass == one.getClass && several.getMessage == one.getMessage, several)
    assert(!several.isInstanceOf[java.util.concurrent.ExecutionException], several)
    assert(Iterator.iterate(several)(_.getCause).takeWhile(_ != null).exists(e =>
        String.valueOf(e.getMessage).contains(last.getName)), several)
  }

  /** A Z-order index of `sales` over (d, qty) in files of about 4 KB: ranges read several, none sorted on a key. */
  private lazy val salesByDayAndQty: String = {
    spark.conf.set("spark.hyperspace.index.zorder.targetFileSize", "4k")
    try hs.createIndex(salesDf,
        io.hyperspace.index.zorder.ZOrderCoveringIndexConfig("salesByDayAndQty",
          Seq("d", "qty"), Seq("id", "g", "price")))
    finally spark.conf.unset("spark.hyperspace.index.zorder.targetFileSize")
    "salesByDayAndQty"
  }

  test("a range read in the driver runs the plan's own whole-stage code over the reader's batches, with Spark's rows") {
    val index = salesByDayAndQty
    val range = "d BETWEEN DATE'2024-01-20' AND DATE'2024-02-10' AND qty BETWEEN 3 AND 8"
    val queries: Seq[() => DataFrame] = Seq(
      () => salesDf.where(range).selectExpr("sum(price)", "count(*)", "sum(qty * price)", "min(g)", "max(d)"),
      () => salesDf.where(range + " AND price IS NOT NULL").selectExpr("id", "g", "price * 2 AS p"),
      () => salesDf.where(range + " AND g = 3").groupBy("qty").agg(Map("price" -> "sum")),
      () => salesDf.where("d > DATE'2030-01-01' AND qty = 1").selectExpr("count(*)", "sum(price)")) // no file
    for {
      aqe <- Seq("true", "false")
      n <- Seq(1, 3)
      (q, i) <- queries.zipWithIndex
    } withConf("spark.sql.adaptive.enabled" -> aqe, threads(n)) {
      val plan = sameResult(q())
      val Seq(read) = driverReads(plan)
      assert(indexesUsed(plan) == Seq(index), plan.treeString)
      // Filter and Project compiled into the stage over the batches, with the global aggregate's
      // partial step (and the coalesces below it) when one is next; none when no file is read.
      val partialStep = if (i == 0) 1 + read.collect { case c: CoalesceExec => c }.size else 0
      val expected = if (i == 3) 0 else 2 + partialStep
      assert(read.metrics("compiledSteps").value == expected, s"query $i: ${plan.treeString}")
      withHyperspace(on = true)(assert(jobsOf(q())(_.collect()) == 0, s"query $i"))
    }
    // Whole-stage code off, or batches of off-heap vectors (which the driver's reader does not
    // fill): each row through the steps one at a time, with the same rows.
    for (setting <-
        Seq("spark.sql.codegen.wholeStage" -> "false", "spark.sql.columnVector.offheap.enabled" -> "true")) {
      withConf(setting) {
        val plan = sameResult(queries.head())
        val Seq(read) = driverReads(plan)
        assert(read.metrics("compiledSteps").value == 0, s"$setting: ${plan.treeString}")
      }
    }
  }

  test("explain shows the aggregate read in the driver") {
    withConf(OneReadPartition) {
      val df = withHyperspace(on = true) {
        val q = salesDf.where("id IN (7, 12)").selectExpr("sum(price)", "count(*)")
        q.collect()
        q
      }
      val plan = executed(df).treeString
      assert(plan.linesIterator.next().contains("DriverIndexRead"), plan)
      assert(plan.contains("HashAggregate"), plan)
    }
  }
}
