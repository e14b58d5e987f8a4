package io.hyperspace.sources

import java.io.File

import io.hyperspace.dataskipping.DataSkippingTestSupport
import io.hyperspace.index.IndexConfig
import io.hyperspace.index.dataskipping.{DataSkippingIndex, DataSkippingIndexData, DataSkippingIndexConfig, MinMaxSketch}

/**
 * Sources whose paths hold characters that URIs escape (space, `%`, `#`, `"`, `<`, `|`, a
 * backtick): a listing spells them as Hadoop paths (`a b`), `_metadata.file_path` as URIs
 * (`a%20b`). Every index kind, refresh mode and hybrid scan must see one file, not two.
 */
class SpecialCharacterPathSuite extends DataSkippingTestSupport {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    enableHybridScan(maxRatio = 0.9)
  }

  private val characters = Seq(" " -> "space", "%" -> "percent", "#" -> "hash", "\"" -> "quote",
    "<" -> "lt", "|" -> "pipe", "`" -> "backtick", "%20" -> "escaped-space")

  /** A clustered source under a directory whose name holds `c`, and the character's tag. */
  private def sourceWith(c: String, tag: String, files: Int = 6): File = {
    val dir = new File(newDir(s"src-$tag"), s"da${c}ta")
    spark.range(0, files * 20L, 1, files).selectExpr("id", "CONCAT('n', id % 7) AS name",
      "CAST(id DIV 40 AS INT) AS part")
      .write.parquet(dir.getAbsolutePath)
    dir
  }

  private def sketchIds(name: String): Seq[Long] = {
    val entry = logOf(name).latestStable.get
    DataSkippingIndexData.read(spark, entry).select(DataSkippingIndex.FileIdColumn).collect()
      .map(_.getLong(0)).sorted.toSeq
  }

  private def appendTo(dir: File, from: Long): Unit =
    spark.range(from, from + 20, 1, 1).selectExpr("id", "CONCAT('n', id % 7) AS name",
      "CAST(id DIV 40 AS INT) AS part").write.mode("append").parquet(dir.getAbsolutePath)

  for ((c, tag) <- characters) {
    test(s"data skipping over a path with '$c': create, skip, incremental and quick refresh") {
      val dir = sourceWith(c, tag)
      val name = s"ds_path_$tag".replace("-", "_")
      hs.createIndex(read(dir), DataSkippingIndexConfig(name, MinMaxSketch("id")))
      assert(sketchIds(name) == (0L until 6L))
      assert(filesRead(sameResult(read(dir).where("id = 45"))) == 1)

      deleteFile(dir, 0) // before appending: the i-th file in path order is then an original one
      appendTo(dir, 1000)
      assert(filesRead(sameResult(read(dir).where("id = 1005"))) == 1) // the unsummarized new file
      val quick = hs.refreshIndex(name, "quick")
      assert(quick.changed && quick.appendedFiles == 1 && quick.deletedFiles == 1, quick)
      assert(filesRead(sameResult(read(dir).where("id = 45"))) == 2)
      val incremental = hs.refreshIndex(name, "incremental")
      assert(incremental.changed, incremental)
      assert(sketchIds(name) == logOf(name).latestStable.get.source.files.map(_.id).sorted)
      assert(filesRead(sameResult(read(dir).where("id = 1005"))) == 1)
      assert(filesRead(sameResult(read(dir).where("id = 45"))) == 1)
      hs.refreshIndex(name, "full")
      assert(sketchIds(name).size == 6)
    }

    test(s"covering index with lineage over a path with '$c': hybrid scan and incremental refresh") {
      val dir = sourceWith(c, tag)
      val name = s"cov_path_$tag".replace("-", "_")
      hs.createIndex(read(dir), IndexConfig(name, Seq("id"), Seq("name"), lineage = Some(true)))
      assert(indexesUsed(sameResult(read(dir).where("id = 45").select("id", "name"))) == Seq(name))
      val gone = deleteFile(dir, 1)
      appendTo(dir, 1000)
      def query = read(dir).where("id IN (25, 45, 1005)").select("id", "name")
      val plan = sameResult(query)
      assert(indexesUsed(plan) == Seq(name), plan.treeString)
      assert(withHyperspace(on = true)(query.collect().map(_.getLong(0)).toSet) == Set(25L, 45L, 1005L) -- gone)
      val r = hs.refreshIndex(name, "incremental")
      assert(r.changed && r.appendedFiles == 1 && r.deletedFiles == 1, r)
      val lineage = readIndexData(name).select("_data_file_id").distinct().collect().map(_.getLong(0)).sorted.toSeq
      assert(lineage == logOf(name).latestStable.get.source.files.map(_.id).sorted)
      assert(indexesUsed(sameResult(query)) == Seq(name))
    }
  }

  test("hive partition values that Spark escapes in directory names (a%23b) are indexed and skipped") {
    val dir = new File(newDir("escaped-partitions"), "data")
    spark.range(0, 120, 1, 4).selectExpr("id",
      "ELEMENT_AT(ARRAY('a b', 'a#b', 'a%b', 'a:b'), " +
        "CAST(id DIV 30 AS INT) + 1) AS tag").write.partitionBy("tag").parquet(dir.getAbsolutePath)
    assert(dir.list().exists(_.contains("%")), dir.list().mkString(", "))
    hs.createIndex(read(dir), DataSkippingIndexConfig("ds_escaped", MinMaxSketch("id")))
    hs.createIndex(read(dir), IndexConfig("cov_escaped", Seq("id"), Seq("tag"), lineage = Some(true)))
    assert(filesRead(sameResult(read(dir).where("id = 70 AND tag = 'a%b'").select("id"))) <= 1)
    sameResult(read(dir).where("tag = 'a#b'"))
    hs.deleteIndex("ds_escaped") // so the covering index is not weighed against data skipping
    assert(indexesUsed(sameResult(read(dir).where("id = 31").select("id", "tag"))) == Seq("cov_escaped"))
  }
}
