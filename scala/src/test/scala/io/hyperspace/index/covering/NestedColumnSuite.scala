package io.hyperspace.index.covering

import java.io.File

import scala.util.Random

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.functions.{col, lit, not}

import io.hyperspace.HyperspaceException
import io.hyperspace.execution.BucketUnionExec
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, MinMaxSketch}
import io.hyperspace.maintenance.MaintenanceTestSupport

/**
 * Covering indexes over struct fields named by dotted paths (`nested.leaf.id`): creation and its
 * errors, the filter and join rules reading the index's flat columns in place of the fields,
 * hybrid scan and refresh flattening appended files alike, and generated queries returning the
 * same rows with and without Hyperspace.
 */
class NestedColumnSuite extends MaintenanceTestSupport {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    enableHybridScan(maxRatio = 0.9)
  }

  /**
   * `id`, `name` and `nested: struct<leaf: struct<id: int, cnt: bigint, tag: string>, flag:
   * boolean>`, with a null struct, a null leaf and a null leaf id now and then.
   */
  private def nestedRows(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).selectExpr(
      "id",
      "CONCAT('n', id % 11) AS name",
      """CASE WHEN id % 29 = 5 THEN NULL ELSE named_struct(
           'leaf', CASE WHEN id % 31 = 6 THEN NULL ELSE named_struct(
             'id', CASE WHEN id % 37 = 7 THEN NULL ELSE CAST(id % 50 AS INT) END,
             'cnt', id * 2,
             'tag', CONCAT('t', id % 7)) END,
           'flag', id % 2 = 0) END AS nested""")

  private def newNested(name: String, rows: Int = 600, files: Int = 4): File = {
    val dir = new File(newDir(name), "data")
    nestedRows(0, rows, files).write.parquet(dir.getAbsolutePath)
    dir
  }

  private def appendNested(dir: File, from: Long, n: Int): Unit =
    nestedRows(from, from + n, 1).write.mode("append").parquet(dir.getAbsolutePath)

  private def strings(row: org.apache.spark.sql.Row, field: String): Seq[String] =
    row.getSeq[String](row.fieldIndex(field)).toList

  private def createError(df: DataFrame, config: IndexConfig): String =
    intercept[HyperspaceException](hs.createIndex(df, config)).getMessage

  test("creating an index on nested fields: errors name the index and the column") {
    val dir = newNested("errors", rows = 40, files = 1)
    val df = read(dir)
    val missing = createError(df, IndexConfig("bad1", Seq("nested.leaf.nope")))
    assert(missing.contains("'nested.leaf.nope'") && missing.contains("'bad1'") && missing.contains("'nope'"), missing)
    val notStruct = createError(df, IndexConfig("bad2", Seq("name.first")))
    assert(notStruct.contains("'name.first'") && notStruct.contains("'bad2'") && notStruct.contains("not a struct"),
      notStruct)
    val dup = createError(df, IndexConfig("bad3", Seq("nested.leaf.id"), Seq("NESTED.Leaf.ID")))
    assert(dup.contains("more than once") && dup.contains("'bad3'"), dup)
    val structKey = createError(df, IndexConfig("bad4", Seq("nested.leaf")))
    assert(structKey.contains("'nested.leaf'") && structKey.contains("atomic"), structKey)

    val collections = new File(newDir("errors-collections"), "data")
    read(dir).selectExpr("id", "array(nested) AS arr", "map('k', nested) AS m").write.parquet(
      collections.getAbsolutePath)
    val withCollections = read(collections)
    val arrayPath = createError(withCollections, IndexConfig("bad5", Seq("arr.leaf.id")))
    assert(arrayPath.contains("'arr.leaf.id'") && arrayPath.contains("an array") &&
        arrayPath.contains("not supported"), arrayPath)
    val mapPath = createError(withCollections, IndexConfig("bad6", Seq("id"), Seq("m.k")))
    assert(mapPath.contains("'m.k'") && mapPath.contains("a map"), mapPath)
    assert(hs.indexes.where("name LIKE 'bad%'").count() == 0)
  }

  test("the log names nested columns by their dotted paths; the data stores them as flat columns") {
    val dir = newNested("layout", rows = 100, files = 2)
    hs.createIndex(read(dir), IndexConfig("layout", Seq("nested.leaf.id"), Seq("nested.leaf.cnt", "name")))
    val row = indexRow("layout")
    assert(strings(row, "indexedColumns") == Seq("nested.leaf.id"))
    assert(strings(row, "includedColumns") == Seq("nested.leaf.cnt", "name"))
    val entry = logOf("layout").latestStable.get
    assert(entry.index.indexedColumns == Seq("nested.leaf.id"))
    val data = readIndexData("layout")
    assert(data.columns.toSeq == Seq("__hs_nested.nested.leaf.id", "__hs_nested.nested.leaf.cnt", "name"))
    val expected = read(dir).selectExpr("nested.leaf.id", "nested.leaf.cnt", "name")
    assert(rowsOf(data) == rowsOf(expected))
  }

  test("a filter on a nested field reads the index; outputs keep their names and order") {
    val dir = newNested("filter")
    hs.createIndex(read(dir), IndexConfig("nestedFilter", Seq("nested.leaf.id"), Seq("nested.leaf.cnt", "id")))
    def query = read(dir).where(col("nested.leaf.id") === 7).select(col("nested.leaf.cnt"), col("id"))
    val plan = sameResult(query)
    assert(indexesUsed(plan) == Seq("nestedFilter"), plan.treeString)
    assert(indexFilesRead(plan) == 1, plan.treeString)
    withHyperspace(on = true) {
      assert(query.columns.toSeq == Seq("cnt", "id"))
      assert(query.collect().map(_.getLong(0)).toSet.nonEmpty)
    }
    // Ranges and IN as well.
    assert(indexesUsed(sameResult(read(dir).where("nested.leaf.id BETWEEN 3 AND 9").select("id"))) ==
      Seq("nestedFilter"))
    assert(indexesUsed(sameResult(read(dir).where("nested.leaf.id IN (1, 2) OR nested.leaf.id IS NULL")
          .select("nested.leaf.cnt", "nested.leaf.id"))) == Seq("nestedFilter"))
    // A field the index lacks, or the whole struct, is not covered: the source is read.
    assert(indexesUsed(sameResult(read(dir).where("nested.leaf.id = 7").select("nested.leaf.tag"))).isEmpty)
    val whyNot = hs.whyNot(read(dir).where("nested.leaf.id = 7").select("nested.leaf.tag"), "nestedFilter")
    assert(whyNot.contains("column(s) nested.leaf.tag not covered"), whyNot)
    assert(indexesUsed(sameResult(read(dir).where("nested.leaf.id = 7").select("nested"))).isEmpty)
    assert(indexesUsed(sameResult(read(dir).where("nested.leaf.id = 7"))).isEmpty)
  }

  test("nested and top-level columns mix in one index, either one leading") {
    val dir = newNested("mixed")
    hs.createIndex(read(dir), IndexConfig("byName", Seq("name"), Seq("nested.leaf.cnt", "nested.flag")))
    hs.createIndex(read(dir), IndexConfig("byLeafId", Seq("nested.leaf.id"), Seq("name", "nested.flag")))
    val byName = sameResult(read(dir).where("name = 'n3' AND nested.flag").select("nested.leaf.cnt", "name"))
    assert(indexesUsed(byName) == Seq("byName"), byName.treeString)
    val byId = sameResult(read(dir).where("nested.leaf.id > 40").select("name", "nested.flag"))
    assert(indexesUsed(byId) == Seq("byLeafId"), byId.treeString)
    withHyperspace(on = true) {
      assert(read(dir).where("nested.leaf.id > 40").select("name", "nested.flag").columns.toSeq == Seq("name", "flag"))
    }
  }

  test("an equi-join on nested keys reads both indexes without a shuffle") {
    val left = newNested("join-left")
    val right = newNested("join-right", rows = 300, files = 3)
    hs.createIndex(read(left), IndexConfig("leftIdx", Seq("nested.leaf.id"), Seq("nested.leaf.cnt")))
    hs.createIndex(read(right), IndexConfig("rightIdx", Seq("nested.leaf.id"), Seq("name")))
    def query = {
      val (l, r) = (read(left), read(right))
      l.join(r, l("nested.leaf.id") === r("nested.leaf.id")).select(l("nested.leaf.cnt"), r("name"))
    }
    val plan = sameResult(query)
    assert(indexesUsed(plan) == Seq("leftIdx", "rightIdx"), plan.treeString)
    assert(shuffles(plan) == 0, plan.treeString)
    withHyperspace(on = true)(assert(query.columns.toSeq == Seq("cnt", "name")))
  }

  test("a join reading every field of a struct (which Spark leaves unaliased) uses the indexes") {
    def small(name: String, rows: Int): File = {
      val dir = new File(newDir(name), "data")
      spark.range(0, rows, 1, 2).selectExpr("named_struct('id', CAST(id % 20 AS INT), 'cnt', id) AS s")
        .write.parquet(dir.getAbsolutePath)
      dir
    }
    val (left, right) = (small("whole-left", 200), small("whole-right", 90))
    hs.createIndex(read(left), IndexConfig("wholeLeft", Seq("s.id"), Seq("s.cnt")))
    hs.createIndex(read(right), IndexConfig("wholeRight", Seq("s.id"), Seq("s.cnt")))
    def query = {
      val (l, r) = (read(left), read(right))
      l.join(r, l("s.id") === r("s.id")).select(l("s.cnt").as("lc"), r("s.cnt").as("rc"), l("s.id"))
    }
    val plan = sameResult(query)
    assert(indexesUsed(plan) == Seq("wholeLeft", "wholeRight"), plan.treeString)
    assert(shuffles(plan) == 0, plan.treeString)
    withHyperspace(on = true)(assert(query.columns.toSeq == Seq("lc", "rc", "id")))
  }

  test("a join of a nested key with a top-level key, one side indexed") {
    val left = newNested("join-mixed")
    val other = new File(newDir("join-mixed-other"), "data")
    spark.range(0, 80, 1, 2).selectExpr("CAST(id AS INT) AS k", "CONCAT('o', id) AS label")
      .write.parquet(other.getAbsolutePath)
    hs.createIndex(read(left), IndexConfig("mixedJoinIdx", Seq("nested.leaf.id"), Seq("id")))
    val plan = sameResult {
      val l = read(left)
      val o = read(other)
      l.join(o, l("nested.leaf.id") === o("k")).select(l("id"), o("label"))
    }
    assert(indexesUsed(plan) == Seq("mixedJoinIdx"), plan.treeString)
  }

  test("hybrid scan flattens appended files as the index did, for filters and joins") {
    val dir = newNested("hybrid")
    hs.createIndex(read(dir),
      IndexConfig("hybridIdx", Seq("nested.leaf.id"), Seq("nested.leaf.cnt", "name"),
        lineage = Some(true)))
    appendNested(dir, 1000, 200)
    val filter = sameResult(read(dir).where("nested.leaf.id = 7").select("nested.leaf.cnt", "name"))
    assert(indexesUsed(filter) == Seq("hybridIdx"), filter.treeString)

    val other = newNested("hybrid-other", rows = 200, files = 2)
    hs.createIndex(read(other), IndexConfig("hybridOther", Seq("nested.leaf.id"), Seq("id")))
    val join = sameResult {
      val (l, r) = (read(dir), read(other))
      l.join(r, l("nested.leaf.id") === r("nested.leaf.id")).select(l("nested.leaf.cnt"), r("id"))
    }
    assert(indexesUsed(join) == Seq("hybridIdx", "hybridOther"), join.treeString)
    assert(join.collectFirst { case u: BucketUnionExec => u }.isDefined, join.treeString)

    // Deleted files too, through lineage.
    deleteFile(dir, 0)
    val afterDelete = sameResult(read(dir).where("nested.leaf.id < 10").select("nested.leaf.cnt", "name"))
    assert(indexesUsed(afterDelete) == Seq("hybridIdx"), afterDelete.treeString)
  }

  for (mode <- Seq("incremental", "quick", "full")) {
    test(s"$mode refresh of a nested index flattens the appended files") {
      withConf("spark.hyperspace.index.hybridscan.enabled" -> "false") {
        val dir = newNested(s"refresh-$mode")
        val name = s"refresh-$mode"
        hs.createIndex(read(dir),
          IndexConfig(name, Seq("nested.leaf.id"), Seq("nested.leaf.cnt"),
            lineage = Some(true)))
        deleteFile(dir, 1)
        appendNested(dir, 2000, 150)
        val result = hs.refreshIndex(name, mode)
        assert(result.changed, result.message)
        def query = read(dir).where("nested.leaf.id IN (7, 8)").select("nested.leaf.cnt")
        val plan = sameResult(query)
        assert(indexesUsed(plan) == Seq(name), plan.treeString)
        if (mode != "quick") {
          assert(rowsOf(readIndexData(name).select("`__hs_nested.nested.leaf.cnt`")) ==
            rowsOf(read(dir).select("nested.leaf.cnt")))
        }
      }
    }
  }

  test("a top-level column named with a dot is not a nested path") {
    val dir = new File(newDir("dotted"), "data")
    spark.range(0, 200, 1, 2).selectExpr("id", "CAST(id % 9 AS INT) AS `a.b`",
      "named_struct('b', CAST(id % 5 AS INT), 'c', id) AS a").write.parquet(dir.getAbsolutePath)
    val ambiguous = createError(read(dir), IndexConfig("dotAmbiguous", Seq("a.b")))
    assert(ambiguous.contains("ambiguous") && ambiguous.contains("'dotAmbiguous'"), ambiguous)

    hs.createIndex(read(dir), IndexConfig("dotTop", Seq("`a.b`"), Seq("id")))
    assert(strings(indexRow("dotTop"), "indexedColumns") == Seq("a.b"))
    assert(readIndexData("dotTop").columns.toSeq == Seq("a.b", "id"))
    val top = sameResult(read(dir).where(col("`a.b`") === 4).select("id"))
    assert(indexesUsed(top) == Seq("dotTop"), top.treeString)
    // The struct field of the same spelling is another column: that index does not serve it.
    assert(indexesUsed(sameResult(read(dir).where(col("a.b") === 4).select("id"))).isEmpty)

    hs.createIndex(read(dir), IndexConfig("dotNested", Seq("a.`b`"), Seq("id")))
    assert(readIndexData("dotNested").columns.toSeq == Seq("__hs_nested.a.b", "id"))
    val nested = sameResult(read(dir).where(col("a.b") === 4).select("id"))
    assert(indexesUsed(nested) == Seq("dotNested"), nested.treeString)
  }

  test("a data skipping sketch on a nested field prunes files") {
    val dir = new File(newDir("skipping"), "data")
    spark.range(0, 400, 1, 4).selectExpr("id", "named_struct('leaf', named_struct('id', id, 'cnt', id * 2)) AS nested")
      .write.parquet(dir.getAbsolutePath)
    hs.createIndex(read(dir), DataSkippingIndexConfig("nestedSkip", MinMaxSketch("nested.leaf.id")))
    val plan = sameResult(read(dir).where("nested.leaf.id = 123").select("id"))
    val filesRead = plan.collect { case s: FileSourceScanExec => s.metrics("numFiles").value }.sum
    assert(filesRead == 1, plan.treeString)
  }

  test("generated filters over nested fields return the same rows with and without indexes") {
    val rnd = new Random(20261123L)
    val dir = newNested("differential", rows = 1500, files = 5)
    hs.createIndex(read(dir), IndexConfig("diffId", Seq("nested.leaf.id"), Seq("nested.leaf.cnt", "name")))
    hs.createIndex(read(dir), IndexConfig("diffTag", Seq("nested.leaf.tag"), Seq("nested.flag", "id")))
    hs.createIndex(read(dir), IndexConfig("diffName", Seq("name"), Seq("nested.leaf.id", "nested.leaf.tag")))
    val values: Map[String, () => Column] = Map(
      "nested.leaf.id" -> (() => lit(rnd.nextInt(55) - 2)),
      "nested.leaf.tag" -> (() => lit(s"t${rnd.nextInt(8)}")),
      "name" -> (() => lit(s"n${rnd.nextInt(12)}")))
    def predicate(c: String, depth: Int = 0): Column = {
      val x = col(c)
      rnd.nextInt(if (depth < 1) 10 else 8) match {
        case 0 => x === values(c)()
        case 1 => x =!= values(c)()
        case 2 => x < values(c)()
        case 3 => x >= values(c)()
        case 4 => x.isin(values(c)(), values(c)())
        case 5 => x.isNull
        case 6 => x.isNotNull
        case 7 => x <=> values(c)()
        case 8 => not(predicate(c, depth + 1))
        case _ => predicate(c, depth + 1) || predicate(c, depth + 1)
      }
    }
    val projections = Seq(
      "nested.leaf.id" -> Seq("nested.leaf.cnt", "name", "nested.leaf.id"),
      "nested.leaf.tag" -> Seq("id", "nested.flag"),
      "name" -> Seq("nested.leaf.tag", "nested.leaf.id", "name"))
    var used = 0
    for (_ <- 0 until 30) {
      val (leading, covered) = projections(rnd.nextInt(projections.size))
      val columns = rnd.shuffle(covered).take(1 + rnd.nextInt(covered.size))
      // Drawn once: sameResult builds the query twice.
      val condition = predicate(leading)
      val plan = sameResult(read(dir).where(condition).select(columns.map(col): _*))
      if (indexesUsed(plan).nonEmpty) used += 1
    }
    assert(used >= 20, s"only $used of 30 queries used an index")
  }
}
