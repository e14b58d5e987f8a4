package io.hyperspace.rules

import java.io.File

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.Hyperspace
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{CatalogRoot, IndexConfig}
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch}
import io.hyperspace.sources.{FileSource, SourceSubset}

/**
 * The rule's early exit for plans that scan no indexed data ([[CandidateIndexes.mayServeAny]])
 * and its system path resolved once per configured value ([[io.hyperspace.index.CatalogRoot]]):
 * neither may hide a change of the catalog from the next query, nor an index of the scanned data.
 */
class PlanningWithoutIndexesSuite extends RuleTestSupport {

  private def lookup(path: String): DataFrame = spark.read.parquet(path).where("id = 5").select("name")

  private def used(path: String): Seq[String] = indexesUsed(sameResult(lookup(path)))

  test("an index of other data leaves a query unrewritten, and one of its own data, however made, is used " +
    "by the very next query") {
    val elsewhere = writeSource("elsewhere", rows = 60, files = 2)
    val queried = writeSource("queried", rows = 100, files = 2)
    hs.createIndex(spark.read.parquet(elsewhere), IndexConfig("ofElsewhere", Seq("id"), Seq("name")))
    assert(used(queried).isEmpty)
    assert(used(elsewhere) == Seq("ofElsewhere"))

    // Created by another session (its own rule, catalog and resolved system path).
    val other = spark.newSession()
    other.conf.set("spark.hyperspace.system.path", systemPath.getAbsolutePath)
    Hyperspace(other).createIndex(other.read.parquet(queried), IndexConfig("ofQueried", Seq("id"), Seq("name")))
    assert(used(queried) == Seq("ofQueried"))

    // Deleted, restored, deleted and vacuumed by the other session: followed query by query.
    Hyperspace(other).deleteIndex("ofQueried")
    assert(used(queried).isEmpty)
    Hyperspace(other).restoreIndex("ofQueried")
    assert(used(queried) == Seq("ofQueried"))
    Hyperspace(other).deleteIndex("ofQueried")
    other.conf.set("spark.hyperspace.index.vacuum.retention", "0")
    Hyperspace(other).vacuumIndex("ofQueried")
    assert(used(queried).isEmpty)
    assert(used(elsewhere) == Seq("ofElsewhere"))
  }

  test("a refresh after an append is used by the next query, and hyperspace off and on is followed") {
    val dir = newDir("appended").getAbsolutePath + "/data"
    spark.range(0, 100, 1, 2).selectExpr("id", "CONCAT('n', id) AS name").write.parquet(dir)
    hs.createIndex(spark.read.parquet(dir), IndexConfig("appendedIdx", Seq("id"), Seq("name")))
    assert(used(dir) == Seq("appendedIdx"))
    spark.range(100, 150, 1, 1).selectExpr("id", "CONCAT('n', id) AS name").write.mode("append").parquet(dir)
    assert(used(dir).isEmpty, "a stale index without hybrid scan is not used")
    hs.refreshIndex("appendedIdx")
    assert(used(dir) == Seq("appendedIdx"))
    assert(withHyperspace(on = false)(indexesUsed(executed(lookup(dir)))).isEmpty)
    assert(used(dir) == Seq("appendedIdx"))
  }

  test("a scan of a directory inside an index's source, or of the parent of an index's source, still meets " +
    "the index; a data skipping index too") {
    val root = newDir("parted").getAbsolutePath + "/data"
    spark.range(0, 200, 1, 4).selectExpr("id", "CONCAT('n', id % 7) AS name", "id % 2 AS p")
      .write.partitionBy("p").parquet(root)
    hs.createIndex(spark.read.parquet(root), IndexConfig("partedIdx", Seq("id"), Seq("name")))
    val inside = spark.read.parquet(root + "/p=1")
    val insideScan = TableScanPlans.scansOf(inside)
    assert(CandidateIndexes.mayServeAny(CandidateIndexes.active(spark), insideScan))

    val sub = newDir("sub").getAbsolutePath + "/data/k=1"
    spark.range(0, 50, 1, 1).selectExpr("id", "CONCAT('n', id) AS name").write.parquet(sub)
    val parentScan = TableScanPlans.scansOf(spark.read.parquet(new File(sub).getParent))
    assert(!CandidateIndexes.mayServeAny(CandidateIndexes.active(spark), parentScan))
    hs.createIndex(spark.read.parquet(sub), IndexConfig("subIdx", Seq("id"), Seq("name")))
    assert(CandidateIndexes.mayServeAny(CandidateIndexes.active(spark), parentScan))
    // Spelled with another scheme form: compared by path only.
    val spelled = TableScanPlans.scansOf(spark.read.parquet("file://" + new File(sub).getParent))
    assert(CandidateIndexes.mayServeAny(CandidateIndexes.active(spark), spelled))

    val skipped = writeSource("skipped", rows = 100, files = 4)
    assert(!CandidateIndexes.mayServeAny(CandidateIndexes.active(spark), TableScanPlans.scansOf(lookup(skipped))))
    hs.createIndex(spark.read.parquet(skipped), DataSkippingIndexConfig("skipIdx", Seq(MinMaxSketch("id"))))
    assert(CandidateIndexes.mayServeAny(CandidateIndexes.active(spark), TableScanPlans.scansOf(lookup(skipped))))
    val pruned = withHyperspace(on = true)(ApplyHyperspace.indexesIn(lookup(skipped).queryExecution.optimizedPlan))
    assert(pruned.map(_.name) == Seq("skipIdx"))
  }

  test("the rule's overlap test by path alone is never false where whyNot's exact one is true") {
    val root = newDir("tree").getAbsolutePath
    def rows(from: Long) = spark.range(from, from + 40, 1, 2).selectExpr("id", "CONCAT('n', id) AS name", "id % 2 AS p")
    rows(0).write.partitionBy("p").parquet(s"$root/a")
    rows(100).write.parquet(s"$root/b")
    rows(200).write.parquet(s"$root/bc") // a sibling whose name starts as another's does
    hs.createIndex(spark.read.parquet(s"$root/a"), IndexConfig("treeA", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(s"$root/a/p=1"), IndexConfig("treeA1", Seq("id"), Seq("name")))
    hs.createIndex(spark.read.parquet(s"$root/b"), IndexConfig("treeB", Seq("id"), Seq("name")))
    val pattern = s"$root/b*"
    hs.createIndex(spark.read.option(HyperspaceConf.GLOBBING_PATTERN_OPTION, pattern).parquet(pattern),
      IndexConfig("treeGlob", Seq("id"), Seq("name")))
    val scans = Seq(
      spark.read.parquet(s"$root/a"),
      spark.read.parquet(s"file://$root/a/"),
      spark.read.parquet(s"$root/a/p=1"),
      spark.read.option("basePath", s"$root/a").parquet(s"$root/a/p=0"),
      spark.read.parquet(s"$root/b"),
      spark.read.parquet(s"$root/bc"),
      spark.read.parquet(s"$root/bc", s"$root/b"))
    val active = CandidateIndexes.active(spark).filter(_.name.startsWith("tree")) // the suite shares its catalog
    assert(active.size == 4)
    var overlapping = 0
    for (df <- scans; e <- active) {
      val source = TableScanPlans.scansOf(df).collectFirst {
        case r: LogicalRelation => CandidateIndexes.sourceScan(r).map(fs => FileSource(r, fs))
      }.flatten.get
      val exact = SourceSubset.overlaps(e, source)
      val byPath = SourceSubset.mayOverlap(e, Seq(SourceSubset.ScanPaths(source.fsRelation.location.rootPaths)))
      val where = s"${e.name} over ${source.fsRelation.location.rootPaths.mkString(", ")}"
      if (e.name == "treeGlob") assert(byPath, where) // patterns are not compared by path
      else assert(exact == byPath, where)
      if (exact) overlapping += 1
    }
    // a (two spellings) and a/p=1: treeA, treeA1; a/p=0: treeA; b: treeB, treeGlob; bc: treeGlob;
    // bc and b: treeB, treeGlob.
    assert(overlapping == 2 + 2 + 2 + 1 + 2 + 1 + 2)
  }

  test("a changed system path is followed by the next query") {
    val path = writeSource("moved", rows = 100, files = 2)
    hs.createIndex(spark.read.parquet(path), IndexConfig("beforeMove", Seq("id"), Seq("name")))
    assert(used(path) == Seq("beforeMove"))
    val key = "spark.hyperspace.system.path"
    val elsewhere = newDir("otherSystemPath").getAbsolutePath
    spark.conf.set(key, elsewhere)
    try assert(used(path).isEmpty)
    finally spark.conf.set(key, systemPath.getAbsolutePath)
    assert(used(path) == Seq("beforeMove"))
  }

  test("the system path is resolved once per session and configured value, not per query") {
    val path = writeSource("resolvedOnce", rows = 40, files = 1)
    hs.createIndex(spark.read.parquet(path), IndexConfig("resolvedOnceIdx", Seq("id"), Seq("name")))
    val other = spark.newSession()
    other.conf.set("spark.hyperspace.system.path", systemPath.getAbsolutePath)
    other.conf.set("spark.hyperspace.apply.enabled", "true")
    def query(): DataFrame = other.read.parquet(path).where("id = 5").select("name")
    assert(CatalogRoot.resolvedFor(other).isEmpty)
    assert(indexesUsed(executed(query())) == Seq("resolvedOnceIdx"))
    val first = CatalogRoot.resolvedFor(other).getOrElse(fail("the rule resolved no root for the session"))
    // Spark builds the optimizer's rules anew per query: the root is the session's, kept across queries.
    assert(indexesUsed(executed(query())) == Seq("resolvedOnceIdx"))
    assert(CatalogRoot.resolvedFor(other).exists(_ eq first))
    assert(!CatalogRoot.resolvedFor(spark).exists(_ eq first), "another session's root")
    // A new system path is resolved by the next query, and kept in its turn.
    val elsewhere = newDir("resolvedElsewhere").getAbsolutePath
    other.conf.set("spark.hyperspace.system.path", elsewhere)
    assert(indexesUsed(executed(query())).isEmpty)
    val moved = CatalogRoot.resolvedFor(other).getOrElse(fail("no root after the move"))
    assert(moved.configured == elsewhere && !(moved eq first))
    assert(indexesUsed(executed(query())).isEmpty)
    assert(CatalogRoot.resolvedFor(other).exists(_ eq moved))
  }

  test("no index anywhere, or an unusable system path, leaves queries as Spark plans them") {
    val path = writeSource("nothing", rows = 30, files = 1)
    val key = "spark.hyperspace.system.path"
    val file = new File(newDir("notADir"), "file")
    java.nio.file.Files.write(file.toPath, "x".getBytes)
    for (p <- Seq(newDir("empty").getAbsolutePath, file.getAbsolutePath)) {
      spark.conf.set(key, p)
      try assert(used(path).isEmpty)
      finally spark.conf.set(key, systemPath.getAbsolutePath)
    }
  }
}

/** The analysed plan of a query as the rule sees it: table-format scans as file scans. */
private object TableScanPlans {
  def scansOf(df: DataFrame): org.apache.spark.sql.catalyst.plans.logical.LogicalPlan =
    io.hyperspace.sources.TableScans.asFileScans(df.queryExecution.optimizedPlan)
}
