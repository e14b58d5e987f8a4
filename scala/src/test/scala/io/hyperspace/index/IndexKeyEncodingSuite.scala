package io.hyperspace.index

import java.io.File

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile

import io.hyperspace.index.split.SplitIndexConfig
import io.hyperspace.rules.RuleTestSupport

/**
 * The sorted indexed columns of fixed-width types are written without a Parquet dictionary by
 * every operation that writes index files (create, incremental refresh, a refresh dropping
 * deleted files, optimize), for covering and split indexes; string keys and included columns
 * keep theirs. Queries read either encoding (files of earlier builds have dictionaries).
 */
class IndexKeyEncodingSuite extends RuleTestSupport {

  override protected def sessionConfig: Map[String, String] =
    super.sessionConfig ++
      Map("spark.hyperspace.index.lineage.enabled" -> "true", "spark.hyperspace.index.numBuckets" -> "4")

  private def writeBatch(path: String, from: Long, mode: String = "append"): Unit =
    spark.range(from, from + 3000, 1, 2).selectExpr(
      "id", "id DIV 4 AS o", "CAST(id % 40 AS INT) AS k", "CONCAT('s', id % 13) AS s",
      "DATE_ADD(DATE'2024-01-01', CAST(id % 90 AS INT)) AS d")
      .write.mode(mode).parquet(path)

  /** For each column of `name`'s current files: whether any of its column chunks has a dictionary. */
  private def dictionaries(name: String): Map[String, Boolean] = {
    val entry = logOf(name).latestStable.get
    val conf = spark.sessionState.newHadoopConf()
    val chunks = entry.content.files.flatMap { f =>
      val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(entry.content.pathOf(f)), conf))
      try reader.getFooter.getBlocks.asScala.flatMap(_.getColumns.asScala)
          .map(c => c.getPath.toDotString -> c.hasDictionaryPage).toSeq
      finally reader.close()
    }
    assert(chunks.nonEmpty)
    chunks.groupBy(_._1).map { case (column, cs) => column -> cs.exists(_._2) }
  }

  /** After create, an incremental refresh, a refresh dropping a deleted file, and a full optimize. */
  private def everyWrite(name: String, create: String => Unit)(check: Map[String, Boolean] => Unit): Unit = {
    val path = newDir(name).getAbsolutePath + "/data"
    writeBatch(path, 0, "overwrite")
    create(path)
    check(dictionaries(name))
    writeBatch(path, 3000)
    hs.refreshIndex(name, "incremental")
    check(dictionaries(name))
    new File(path).listFiles().filter(_.getName.endsWith(".parquet")).head.delete()
    hs.refreshIndex(name, "incremental")
    check(dictionaries(name))
    hs.optimizeIndex(name, "full")
    check(dictionaries(name))
    val query = spark.read.parquet(path).where("o IN (5, 800, 1300) OR k = 7").select("id", "o", "k")
    sameResult(query)
  }

  test("a covering index writes its number and date keys without a dictionary, its string key with one") {
    everyWrite("encNumbers",
      p => hs.createIndex(spark.read.parquet(p), IndexConfig("encNumbers", Seq("o", "d"), Seq("k", "s")))) {
      columns =>
        assert(!columns("o") && !columns("d"), columns)
        assert(columns("k") && columns("s"), columns) // included columns keep theirs
    }
    everyWrite("encString",
      p => hs.createIndex(spark.read.parquet(p), IndexConfig("encString", Seq("s"), Seq("id", "k")))) {
      columns => assert(columns("s") && columns("k"), columns)
    }
  }

  test("a split index writes its number key without a dictionary, its locations with one") {
    everyWrite("encSplit", p => hs.createIndex(spark.read.parquet(p), SplitIndexConfig("encSplit", Seq("o")))) {
      columns =>
        assert(!columns("o"), columns)
        assert(columns("_row_group"), columns)
    }
  }
}
