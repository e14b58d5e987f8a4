package io.hyperspace.rules

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.fs.Path

import io.hyperspace.index.IndexConfig

/** The planning caches never serve what an index was before it was dropped and created again. */
class PlanningCacheSuite extends RuleTestSupport {

  private def entryFile(name: String): File = {
    val log = logOf(name)
    new File(new Path(log.logPath, log.latestStableId.get.toString).toUri)
  }

  test("an index dropped and created again under its name is planned as the new index, " +
    "even when its entry file has the old one's length and modification time") {
    val dir = newDir("stale").getAbsolutePath + "/data"
    spark.range(0, 300, 1, 3).selectExpr("id AS x", "id * 3 AS y").write.parquet(dir)
    val df = spark.read.parquet(dir)
    def used(q: org.apache.spark.sql.DataFrame): Seq[String] =
      ApplyHyperspace.indexesIn(q.queryExecution.optimizedPlan).map(_.name)

    hs.createIndex(df, IndexConfig("stale", Seq("x"), Seq("y")))
    withHyperspace(on = true) {
      assert(used(df.where("x = 5").select("x", "y")) == Seq("stale"))
    }
    val old = entryFile("stale")
    val (oldId, oldLength, oldMtime) = (logOf("stale").latestStableId.get, old.length, old.lastModified)

    hs.deleteIndex("stale")
    vacuumNow("stale")
    hs.createIndex(df, IndexConfig("stale", Seq("y"), Seq("x")))
    assert(logOf("stale").latestStableId.get == oldId, "the new index's ids start again")

    // A store with coarse file times and an entry of the same length: what only the entry's
    // content tells apart. Same JSON, compacted and padded to the old length, old time.
    val file = entryFile("stale")
    val compact = new ObjectMapper().readTree(new String(Files.readAllBytes(file.toPath), UTF_8)).toString
    assert(compact.length <= oldLength)
    Files.write(file.toPath, (compact + " " * (oldLength - compact.length).toInt).getBytes(UTF_8))
    new File(file.getParentFile, s".${file.getName}.crc").delete()
    assert(file.setLastModified(oldMtime))
    assert(file.length == oldLength && file.lastModified == oldMtime)

    withHyperspace(on = true) {
      val query = df.where("y = 15").select("x", "y")
      assert(used(query) == Seq("stale"))
      assert(query.collect().map(r => (r.getLong(0), r.getLong(1))).toSeq == Seq((5L, 15L)))
    }
  }
}
