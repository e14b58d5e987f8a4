package io.hyperspace.sources

import java.io.File

import org.apache.spark.sql.DataFrame

import io.hyperspace.index.IndexConfig
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * Hive-partitioned sources read with `basePath`, both ways round:
 *  - an index built over partition directories (`option("basePath", root).load(root/p=a, ...)`)
 *    serves queries over the root holding the same files (the original Hyperspace's scenario);
 *  - an index built over the root serves queries over some of its partition directories read
 *    with `basePath`, keeping only those directories' rows (by partition values or lineage), and
 *    is not used when it cannot tell them apart.
 * Every query is compared with Hyperspace off.
 */
class BasePathSuite extends MaintenanceTestSupport {

  private def writeRows(path: String, from: Long, n: Int, mode: String = "append"): Unit =
    spark.range(from, from + n, 1, 2)
      .selectExpr("id", "CONCAT('n', id) AS name", "CAST(id % 3 AS INT) AS p")
      .write.mode(mode).partitionBy("p").parquet(path)

  private def root(name: String): String = newDir(name).getAbsolutePath + "/data"

  private def under(base: String, dirs: String*): DataFrame =
    spark.read.option("basePath", base).parquet(dirs.map(d => s"$base/$d"): _*)

  private def whyNot(df: DataFrame, index: String): String =
    withHyperspace(on = true)(hs.whyNot(df, index))

  test("an index over the root serves a query over one partition directory read with basePath") {
    val data = root("sub")
    writeRows(data, 0, 90)
    hs.createIndex(spark.read.parquet(data), IndexConfig("sub_idx", Seq("id"), Seq("name", "p")))
    def query(base: String) = under(base, "p=1").where("id IN (4, 5)").select("name", "p")
    val plan = sameResult(query(data))
    assert(indexesUsed(plan) == Seq("sub_idx"), plan.treeString)
    assert(withHyperspace(on = true)(rowsOf(query(data))) == Seq("n4|1"))
    // The same directory, spelled with a trailing slash or as a file: URI.
    for (base <- Seq(s"$data/", s"file://$data", new File(data).toURI.toString)) {
      // A new DataFrame per run: a DataFrame keeps the plan it was first optimized with.
      def df = spark.read.option("basePath", base).parquet(s"$data/p=1").where("id IN (4, 5)").select("name", "p")
      assert(indexesUsed(sameResult(df)) == Seq("sub_idx"), base)
      assert(withHyperspace(on = true)(rowsOf(df)) == Seq("n4|1"), base)
    }
    // Two of the three partitions, and a join whose side reads one partition.
    assert(indexesUsed(sameResult(under(data, "p=0", "p=2").where("id < 20").select("id", "p"))) == Seq("sub_idx"))
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      val other = spark.range(0, 90).selectExpr("id", "id * 2 AS twice")
      val joined = sameResult(under(data, "p=2").select("id", "name", "p").join(other, "id"))
      assert(indexesUsed(joined) == Seq("sub_idx"), joined.treeString)
    }
  }

  test("with lineage, an index that does not hold the partition column serves sub-directories too") {
    val data = root("lineage")
    writeRows(data, 0, 90)
    hs.createIndex(spark.read.parquet(data), IndexConfig("lin_idx", Seq("id"), Seq("name"), lineage = Some(true)))
    // With basePath (the partition column is read, not needed) and without (no partition column).
    for (read <- Seq(() => under(data, "p=1"), () => spark.read.parquet(s"$data/p=1"))) {
      def df = read().where("id > 10").select("id", "name")
      val plan = sameResult(df)
      assert(indexesUsed(plan) == Seq("lin_idx"), plan.treeString)
      assert(withHyperspace(on = true)(df.count()) == (11L until 90L).count(_ % 3 == 1))
    }
  }

  test("no lineage and no partition column in the index: not used, and whyNot says why") {
    val data = root("neither")
    writeRows(data, 0, 60)
    hs.createIndex(spark.read.parquet(data), IndexConfig("neither_idx", Seq("id"), Seq("name")))
    def query = under(data, "p=1").where("id = 4").select("id", "name")
    assert(indexesUsed(sameResult(query)).isEmpty)
    val why = whyNot(query, "neither_idx")
    assert(why.contains("lineage") && why.contains("'p'") && why.contains("p=1"), why)
    // Over the root, it is used as before.
    assert(indexesUsed(sameResult(spark.read.parquet(data).where("id = 4").select("id", "name"))) == Seq("neither_idx"))
  }

  test("multi-level partitioning: sub-directories at either level, and another base path") {
    val data = root("levels")
    spark.range(0, 120, 1, 2)
      .selectExpr("id", "CONCAT('n', id) AS name", "CONCAT('a', id % 2) AS p1", "CAST(id % 3 AS INT) AS p2")
      .write.partitionBy("p1", "p2").parquet(data)
    hs.createIndex(spark.read.parquet(data), IndexConfig("levels_idx", Seq("id"), Seq("name", "p1", "p2")))
    def q(df: DataFrame) = df.where("id BETWEEN 10 AND 40").select("id", "name", "p1", "p2")
    for (dirs <- Seq(Seq("p1=a1"), Seq("p1=a0/p2=2"), Seq("p1=a0/p2=1", "p1=a1/p2=1"))) {
      val plan = sameResult(q(under(data, dirs: _*)))
      assert(indexesUsed(plan) == Seq("levels_idx"), (dirs, plan.treeString))
    }
    // Partition columns found below p1=a0: p2 alone does not tell p1=a0/p2=2 from p1=a1/p2=2.
    val deeper = spark.read.option("basePath", s"$data/p1=a0").parquet(s"$data/p1=a0/p2=2")
      .where("id BETWEEN 10 AND 40").select("id", "name", "p2")
    assert(indexesUsed(sameResult(deeper)).isEmpty)
    assert(whyNot(deeper, "levels_idx").contains("relative to"), whyNot(deeper, "levels_idx"))
  }

  test("a partition the index does not know is read from the source; appended files in a known one by hybrid scan") {
    val data = root("unknown")
    writeRows(data, 0, 60)
    hs.createIndex(spark.read.parquet(data), IndexConfig("unknown_idx", Seq("id"), Seq("name", "p")))
    spark.range(1000, 1010).selectExpr("id", "CONCAT('n', id) AS name", "7 AS p")
      .write.mode("append").partitionBy("p").parquet(data)
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true") {
      def df = under(data, "p=7").where("id = 1004").select("name", "p")
      assert(indexesUsed(sameResult(df)).isEmpty)
      assert(withHyperspace(on = true)(rowsOf(df)) == Seq("n1004|7"))
      assert(whyNot(df, "unknown_idx").contains("covers no file"), whyNot(df, "unknown_idx"))
    }
    // New rows in a partition the index knows: stale without hybrid scan, served with it.
    spark.range(2000, 2003).selectExpr("id", "CONCAT('n', id) AS name", "1 AS p")
      .write.mode("append").partitionBy("p").parquet(data)
    def known = under(data, "p=1").where("id IN (4, 2002)").select("name", "p")
    assert(indexesUsed(sameResult(known)).isEmpty)
    assert(whyNot(known, "unknown_idx").contains("hybrid scan"), whyNot(known, "unknown_idx"))
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true",
      "spark.hyperspace.index.hybridscan.maxAppendedRatio" -> "0.9") {
      assert(indexesUsed(sameResult(known)) == Seq("unknown_idx"))
      assert(withHyperspace(on = true)(rowsOf(known)) == Seq("n2002|1", "n4|1"))
    }
  }

  test("directories outside the query's with the same partition values (p=1 and p=01): not used") {
    val data = root("clash")
    writeRows(data, 0, 30)
    spark.range(500, 505).selectExpr("id", "CONCAT('n', id) AS name").write.parquet(s"$data/p=01")
    hs.createIndex(spark.read.parquet(data), IndexConfig("clash_idx", Seq("id"), Seq("name", "p")))
    def df = under(data, "p=1").where("id > 0").select("id", "name", "p")
    assert(indexesUsed(sameResult(df)).isEmpty)
    assert(whyNot(df, "clash_idx").contains("same partition values"), whyNot(df, "clash_idx"))
    assert(withHyperspace(on = true)(df.count()) == 10)
  }

  test("the original's scenario: an index over partition directories read with basePath, queried over the root") {
    val data = root("original")
    writeRows(data, 0, 60) // p=0, p=1, p=2
    def indexed = under(data, "p=0", "p=1")
    hs.createIndex(indexed, IndexConfig("orig_idx", Seq("p"), Seq("id")))
    def query(df: DataFrame) = df.where("p > -1").select("id", "p")
    // The root holds p=2 as well: not those files, so not the index, hybrid scan off ...
    assert(indexesUsed(sameResult(query(spark.read.parquet(data)))).isEmpty)
    // ... but the index's own directories, or one of them, read with basePath: yes.
    assert(indexesUsed(sameResult(query(indexed))) == Seq("orig_idx"))
    assert(indexesUsed(sameResult(query(under(data, "p=1")))) == Seq("orig_idx"))
    // A root holding exactly the index's files.
    val exact = root("original-exact")
    writeRows(exact, 0, 60)
    new File(exact, "p=2").listFiles().foreach(_.delete())
    new File(exact, "p=2").delete()
    hs.createIndex(under(exact, "p=0", "p=1"), IndexConfig("exact_idx", Seq("p"), Seq("id")))
    assert(indexesUsed(sameResult(query(spark.read.parquet(exact)))) == Seq("exact_idx"))
    // A new partition: hybrid scan serves it; refresh keeps the partition values of new rows.
    writeRows(exact, 300, 3) // p=0, 1, 2
    assert(indexesUsed(sameResult(query(spark.read.parquet(exact)))).isEmpty)
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true",
      "spark.hyperspace.index.hybridscan.maxAppendedRatio" -> "0.9") {
      assert(indexesUsed(sameResult(query(spark.read.parquet(exact)))) == Seq("exact_idx"))
    }
    val refreshed = hs.refreshIndex("exact_idx", "incremental")
    assert(refreshed.appendedFiles > 0, refreshed)
    val plan = sameResult(query(under(exact, "p=0", "p=1")).where("id >= 300"))
    assert(indexesUsed(plan) == Seq("exact_idx"), plan.treeString)
    assert(withHyperspace(on = true)(rowsOf(query(under(exact, "p=0", "p=1")).where("id >= 300"))) ==
      Seq("300|0", "301|1"))
  }

  test("differential: every combination of partition directories, with and without the index") {
    val data = root("diff")
    writeRows(data, 0, 150)
    hs.createIndex(spark.read.parquet(data), IndexConfig("diff_idx", Seq("id"), Seq("name", "p")))
    hs.createIndex(spark.read.parquet(data), IndexConfig("diff_lin", Seq("name"), Seq("id"), lineage = Some(true)))
    val dirs = Seq("p=0", "p=1", "p=2")
    for (n <- 1 to 3; subset <- dirs.combinations(n); filter <- Seq("id % 7 = 3", "name = 'n44'", "id = 44")) {
      // diff_lin does not hold p: read it only where p is not needed.
      val columns = if (filter.startsWith("name")) Seq("id", "name") else Seq("id", "name", "p")
      val plan = sameResult(under(data, subset: _*).where(filter).select(columns.head, columns.tail: _*))
      if (filter.startsWith("id =")) assert(indexesUsed(plan) == Seq("diff_idx"), (subset, filter))
      if (filter.startsWith("name")) assert(indexesUsed(plan).nonEmpty, (subset, filter))
    }
  }
}
