package io.hyperspace.rules

import java.io.File
import java.nio.file.Files

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, In, Literal}
import org.apache.spark.sql.types.LongType

import io.hyperspace.index.IndexConfig
import io.hyperspace.index.covering.{CoveringIndex, IndexFileIndex}
import io.hyperspace.log.ContentFile

class FilterAndJoinRuleSuite extends RuleTestSupport {

  private lazy val orders = writeSource("orders", rows = 2000, files = 4)
  private lazy val customers: String = {
    val path = newDir("customers").getAbsolutePath + "/data"
    spark.range(0, 400, 1, 3).selectExpr("id % 17 AS cid", "CONCAT('c', id) AS cname", "id AS rank")
      .write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    hs.createIndex(spark.read.parquet(orders), IndexConfig("ordersByName", Seq("name"), Seq("amount", "id")))
    hs.createIndex(spark.read.parquet(orders), IndexConfig("ordersById", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(customers), IndexConfig("custByCid", Seq("cid"), Seq("cname")))
  }

  test("an equality filter on the indexed column reads the index, one bucket file only") {
    val plan = sameResult(spark.read.parquet(orders).where("name = 'name-3'").select("name", "amount"))
    assert(indexesUsed(plan) == Seq("ordersByName"))
    assert(indexFilesRead(plan) == 1, plan.treeString)
  }

  test("IN prunes to the buckets of the listed keys; ranges use the index too") {
    val in = sameResult(spark.read.parquet(orders).where("name IN ('name-3', 'name-5')").select("amount"))
    assert(indexesUsed(in) == Seq("ordersByName"))
    assert(indexFilesRead(in) <= 2)
    val range = sameResult(spark.read.parquet(orders).where("id BETWEEN 10 AND 20").select("id", "name"))
    assert(indexesUsed(range) == Seq("ordersById"))
  }

  test("a bare filter over an index covering every column keeps the source's column order") {
    // The index stores (name, amount, id, day); the source is (id, name, amount, day). Without a
    // Project above the scan, rows came back in the index's order and were decoded as garbage.
    hs.createIndex(spark.read.parquet(orders),
      IndexConfig("ordersAllColumns", Seq("name"), Seq("amount", "id", "day")))
    try {
      val plan = sameResult(spark.read.parquet(orders).where("name = 'name-3'"))
      assert(indexesUsed(plan) == Seq("ordersAllColumns"))
      withHyperspace(on = true) {
        val df = spark.read.parquet(orders).where("name = 'name-3'")
        assert(df.collect().forall(r => r.getString(r.fieldIndex("name")) == "name-3"))
      }
    } finally {
      hs.deleteIndex("ordersAllColumns")
      hs.vacuumIndex("ordersAllColumns")
    }
  }

  test("the index scan is named in explain output, with its log version") {
    withHyperspace(on = true) {
      val df = spark.read.parquet(orders).where("name = 'name-1'").select("amount")
      val text = df.queryExecution.explainString(org.apache.spark.sql.execution.ExtendedMode)
      assert(text.contains("Hyperspace(Type: CI, Name: ordersByName, LogVersion: 1)"), text)
    }
  }

  test("two-sided indexed join: no Exchange on either side") {
    val plan = sameResult(
      spark.read.parquet(orders).select("id", "name")
        .join(spark.read.parquet(orders).selectExpr("id", "name AS other"), "id"))
    assert(indexesUsed(plan) == Seq("ordersById"))
    assert(shuffles(plan) == 0, plan.treeString)
  }

  test("one-sided indexed join uses the index and shuffles only the other side") {
    val plan = sameResult(
      spark.read.parquet(customers).select("cid", "cname")
        .join(spark.range(0, 50).selectExpr("id % 17 AS cid", "id AS x"), "cid"))
    assert(indexesUsed(plan) == Seq("custByCid"))
    assert(shuffles(plan) <= 1, plan.treeString)
  }

  test("all join types return the same rows with the index") {
    for (how <- Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")) {
      val left = spark.read.parquet(customers).select("cid", "cname")
      val right = spark.read.parquet(orders).selectExpr("id AS cid", "name")
      val plan = sameResult(left.join(right, Seq("cid"), how))
      assert(indexesUsed(plan).nonEmpty, s"$how join used no index")
    }
  }

  test("joins nested in larger plans, aggregations above and SQL over views use indexes") {
    spark.read.parquet(orders).createOrReplaceTempView("orders_v")
    spark.read.parquet(customers).createOrReplaceTempView("customers_v")
    val plan = sameResult(spark.sql(
        """SELECT c.cname, count(*) AS n, sum(o.amount) AS total
        |FROM orders_v o JOIN orders_v o2 ON o.id = o2.id JOIN customers_v c ON c.cid = o.id
        |WHERE o.name = 'name-4' GROUP BY c.cname""".stripMargin))
    assert(indexesUsed(plan).nonEmpty, plan.treeString)
  }

  test("an aggregation grouped by the indexed column reads the index with no Exchange") {
    val plan = sameResult(spark.read.parquet(orders).groupBy("name").agg(
        org.apache.spark.sql.functions.sum("amount"), org.apache.spark.sql.functions.count("id")))
    assert(indexesUsed(plan) == Seq("ordersByName"))
    assert(shuffles(plan) == 0, plan.treeString)
    // Grouped by something else: left alone.
    val other = sameResult(spark.read.parquet(orders).groupBy("amount").count())
    assert(indexesUsed(other).isEmpty)
  }

  test("an aggregate joined on its grouping key to an indexed side (TPC-H Q17's shape) needs no Exchange") {
    val perId = spark.read.parquet(orders).groupBy("id").agg(org.apache.spark.sql.functions.max("name").as("m"))
    val plan = sameResult(perId.join(spark.read.parquet(orders).select("id", "name"), "id"))
    assert(indexesUsed(plan) == Seq("ordersById"))
    assert(shuffles(plan) == 0, plan.treeString)
  }

  test("SQL over a catalog table uses an index created from spark.table") {
    spark.range(0, 300, 1, 3).selectExpr("id", "CONCAT('t', id % 7) AS tag").write.saveAsTable("catalog_tbl")
    hs.createIndex(spark.table("catalog_tbl"), IndexConfig("catalogIdx", Seq("tag"), Seq("id")))
    val plan = sameResult(spark.sql("SELECT id FROM catalog_tbl WHERE tag = 't3'"))
    assert(indexesUsed(plan) == Seq("catalogIdx"))
  }

  test("queries the indexes cannot answer are left untouched") {
    // A column no index covers.
    val uncovered = sameResult(spark.read.parquet(orders).where("name = 'name-1'").select("day"))
    assert(indexesUsed(uncovered).isEmpty)
    // The leading indexed column is not filtered on.
    val notLeading = sameResult(spark.read.parquet(orders).where("amount > 3").select("amount", "name"))
    assert(indexesUsed(notLeading).isEmpty)
    // A non-equi join.
    val nonEqui = sameResult(
      spark.read.parquet(orders).select("id").as("a")
        .join(spark.read.parquet(orders).select("id").as("b"),
          org.apache.spark.sql.functions.expr("a.id < b.id - 1990")))
    assert(indexesUsed(nonEqui).isEmpty)
    // Hyperspace disabled.
    withHyperspace(on = false) {
      val df = spark.read.parquet(orders).where("name = 'name-1'").select("amount")
      df.collect()
      assert(indexesUsed(executed(df)).isEmpty)
    }
  }

  test("a stale index (source changed) and a deleted index are not used") {
    val path = writeSource("changing", rows = 100, files = 2)
    hs.createIndex(spark.read.parquet(path), IndexConfig("changing", Seq("id"), Seq("name")))
    assert(indexesUsed(sameResult(spark.read.parquet(path).where("id = 5").select("name"))) == Seq("changing"))

    spark.range(500, 510).selectExpr("id", "'x' AS name", "1.0 AS amount", "DATE'2024-01-01' AS day")
      .write.mode("append").parquet(path)
    val stale = sameResult(spark.read.parquet(path).where("id = 505").select("name"))
    assert(indexesUsed(stale).isEmpty, "an index must not answer for data it has not seen")

    val fresh = writeSource("deleted", rows = 100, files = 2)
    hs.createIndex(spark.read.parquet(fresh), IndexConfig("soonDeleted", Seq("id"), Seq("name")))
    hs.deleteIndex("soonDeleted")
    assert(indexesUsed(sameResult(spark.read.parquet(fresh).where("id = 5").select("name"))).isEmpty)
    hs.restoreIndex("soonDeleted")
    assert(indexesUsed(sameResult(spark.read.parquet(fresh).where("id = 5").select("name"))) == Seq("soonDeleted"))
  }

  test("an index created by another session is seen at the next query") {
    val path = writeSource("other-session", rows = 100, files = 2)
    val other = spark.newSession()
    other.conf.set("spark.hyperspace.system.path", systemPath.getAbsolutePath)
    assert(indexesUsed(sameResult(spark.read.parquet(path).where("id = 5").select("name"))).isEmpty)
    io.hyperspace.Hyperspace(other).createIndex(other.read.parquet(path),
      IndexConfig("fromOther", Seq("id"), Seq("name")))
    assert(indexesUsed(sameResult(spark.read.parquet(path).where("id = 5").select("name"))) == Seq("fromOther"))
  }

  test("a broken index log never breaks a query") {
    val path = writeSource("broken", rows = 50, files = 1)
    hs.createIndex(spark.read.parquet(path), IndexConfig("broken", Seq("id"), Seq("name")))
    Files.write(new File(indexDir("broken"), "_hyperspace_log/1").toPath, "garbage".getBytes)
    // Any later operation makes queries re-read the logs; the broken one is then skipped.
    hs.createIndex(spark.read.parquet(path), IndexConfig("brokenNeighbour", Seq("name")))
    val plan = sameResult(spark.read.parquet(path).where("id = 5").select("name"))
    assert(indexesUsed(plan).isEmpty)
  }

  test("index data removed by hand never breaks a query") {
    val path = writeSource("removed", rows = 50, files = 1)
    hs.createIndex(spark.read.parquet(path), IndexConfig("removedByHand", Seq("id"), Seq("name")))
    assert(indexesUsed(sameResult(spark.read.parquet(path).where("id = 5").select("name"))) == Seq("removedByHand"))
    org.apache.commons.io.FileUtils.deleteDirectory(new File(indexDir("removedByHand"), "v__=0"))
    assert(indexesUsed(sameResult(spark.read.parquet(path).where("id = 5").select("name"))).isEmpty)
  }

  test("a lookup checks, and needs, only the files of the buckets it reads") {
    val path = writeSource("bucketsChecked", rows = 400, files = 2)
    hs.createIndex(spark.read.parquet(path), IndexConfig("bucketsChecked", Seq("id"), Seq("name")))
    val lookup = () => spark.read.parquet(path).where("id IN (5, 6)").select("name")
    val range = () => spark.read.parquet(path).where("id > 5").select("name", "id")
    assert(indexesUsed(sameResult(lookup())) == Seq("bucketsChecked"))
    assert(indexesUsed(sameResult(range())) == Seq("bucketsChecked"))
    val entry = logOf("bucketsChecked").latestStable.get
    val id = AttributeReference("id", LongType)()
    val buckets = IndexFileIndex.bucketsToRead(entry, Seq(In(id, Seq(Literal(5L), Literal(6L))))).get
    val (read, others) = entry.content.files.partition(f => CoveringIndex.bucketOf(f).exists(buckets.contains))
    assert(read.nonEmpty && others.nonEmpty, s"buckets $buckets of ${entry.content.files.map(_.name)}")
    def delete(f: ContentFile): Unit = assert(new File(new Path(entry.content.pathOf(f)).toUri.getPath).delete())
    delete(others.head)
    // The lookup opens none of the other buckets' files: still served by the index. A range reads them all.
    assert(indexesUsed(sameResult(lookup())) == Seq("bucketsChecked"))
    assert(indexesUsed(sameResult(range())).isEmpty)
    read.foreach(delete)
    assert(indexesUsed(sameResult(lookup())).isEmpty)
  }
}
