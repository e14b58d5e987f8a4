package io.hyperspace.rules

import java.io.{File, RandomAccessFile}

import scala.util.{Failure, Success, Try}

import org.apache.spark.sql.DataFrame

import io.hyperspace.index.IndexConfig

/**
 * An index scan never silently returns fewer rows: whatever the session says about missing or
 * corrupt files (`spark.sql.files.ignoreMissingFiles` / `ignoreCorruptFiles`), a query over an
 * index whose data file is gone or damaged either fails or gives the source's rows — it never
 * skips the file.
 */
class IndexScanFilesSuite extends RuleTestSupport {

  private def indexFiles(name: String): Seq[File] = {
    val content = logOf(name).latestStable.get.content
    content.files.map(f => new File(new org.apache.hadoop.fs.Path(content.pathOf(f)).toUri.getPath))
  }

  /** Runs `query` with Hyperspace on and the session `setting` true: full rows or an error. */
  private def neverFewerRows(setting: String, expected: Seq[String])(query: => DataFrame): Unit = {
    spark.conf.set(setting, "true")
    try {
      withHyperspace(on = true)(Try(rowsOf(query))) match {
        case Success(rows) => assert(rows == expected, s"with $setting=true the index scan returned other rows")
        case Failure(e) => info(s"failed as it should: ${e.getClass.getSimpleName}")
      }
    } finally spark.conf.unset(setting)
  }

  test("an index data file deleted by hand: no rows silently dropped with ignoreMissingFiles on") {
    val path = writeSource("missing", rows = 400, files = 4)
    hs.createIndex(spark.read.parquet(path), IndexConfig("gone", Seq("name"), Seq("id")))
    val query = () => spark.read.parquet(path).where("name <> 'x'").select("name", "id")
    val expected = withHyperspace(on = false)(rowsOf(query()))
    assert(indexesUsed(sameResult(query())) == Seq("gone"))
    val victim = indexFiles("gone").maxBy(_.length())
    assert(victim.delete(), s"could not delete $victim")
    neverFewerRows("spark.sql.files.ignoreMissingFiles", expected)(query())
  }

  test("a damaged index data file: no rows silently dropped with ignoreCorruptFiles on") {
    val path = writeSource("corrupt", rows = 400, files = 4)
    hs.createIndex(spark.read.parquet(path), IndexConfig("damaged", Seq("name"), Seq("id")))
    val query = () => spark.read.parquet(path).where("name <> 'x'").select("name", "id")
    val expected = withHyperspace(on = false)(rowsOf(query()))
    assert(indexesUsed(sameResult(query())) == Seq("damaged"))
    val victim = indexFiles("damaged").maxBy(_.length())
    // Same size, garbage bytes: nothing about the file's listing changes.
    val raf = new RandomAccessFile(victim, "rw")
    try raf.write(Array.fill[Byte](raf.length().toInt)(7))
    finally raf.close()
    neverFewerRows("spark.sql.files.ignoreCorruptFiles", expected)(query())
  }
}
