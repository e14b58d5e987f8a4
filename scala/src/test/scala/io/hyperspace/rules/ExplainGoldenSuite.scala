package io.hyperspace.rules

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import io.hyperspace.index.IndexConfig

/**
 * The explain / whyNot / whatIf texts against reviewed golden files, so a change in what users
 * read is a visible diff. Run with HYPERSPACE_UPDATE_GOLDEN=1 to rewrite them after a deliberate
 * change. Expression ids, temporary paths and byte counts are normalised.
 */
class ExplainGoldenSuite extends RuleTestSupport {

  private val goldenDir = new File("scala/src/test/resources/golden")

  private lazy val sales: String = {
    val path = new File(tempDir, "sales").getAbsolutePath
    spark.range(0, 400, 1, 2).selectExpr("id", "CAST(id % 40 AS INT) AS store", "id * 1.5 AS price")
      .write.parquet(path)
    path
  }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    hs.createIndex(spark.read.parquet(sales), IndexConfig("salesByStore", Seq("store"), Seq("price")))
    hs.createIndex(spark.read.parquet(sales), IndexConfig("salesById", Seq("id"), Seq("store")))
  }

  private def normalise(text: String): String = text
    .replace(tempDir.getCanonicalPath, "<tmp>").replace(tempDir.getAbsolutePath, "<tmp>")
    .replaceAll("#\\d+L?", "#N")
    .replaceAll("plan_id=\\d+", "plan_id=N")
    .replaceAll("~\\d+ bytes", "~N bytes")
    .replaceAll("Bytes scanned: \\d+ without → \\d+ with", "Bytes scanned: N without → N with")
    .replaceAll("(Bytes scanned\\s+\\| )\\d+ → \\d+", "$1N → N")
    .replaceAll("\\[\\d+\\]\\s*$", "")

  private def golden(name: String, actual: String): Unit = {
    val file = new File(goldenDir, s"$name.txt")
    val text = normalise(actual)
    if (sys.env.get("HYPERSPACE_UPDATE_GOLDEN").contains("1")) {
      goldenDir.mkdirs()
      Files.write(file.toPath, text.getBytes(UTF_8))
    } else {
      assert(file.exists(), s"missing golden file $file: run with HYPERSPACE_UPDATE_GOLDEN=1 once and review it")
      val expected = new String(Files.readAllBytes(file.toPath), UTF_8)
      assert(text == expected, s"$name differs from $file; if deliberate, regenerate and review")
    }
  }

  private def byStore = spark.read.parquet(sales).where("store = 7").select("price")
  private def selfJoin = spark.read.parquet(sales).select("id", "store")
    .join(spark.read.parquet(sales).selectExpr("id", "store AS s2"), "id")

  test("explain text") {
    golden("explain-filter", hs.explain(byStore))
    golden("explain-join-verbose", hs.explain(selfJoin, verbose = true))
  }

  test("whyNot text") {
    // With rewriting on: whyNot reports what the session does (off, every line would say so first).
    withHyperspace(on = true) {
      golden("whynot-filter", hs.whyNot(byStore))
      golden("whynot-uncovered", hs.whyNot(spark.read.parquet(sales).where("store = 7").select("id", "price")))
    }
  }

  test("whatIf text") {
    golden("whatif-price",
      hs.whatIf(spark.read.parquet(sales).where("price > 100").select("id", "price"),
        IndexConfig("byPrice", Seq("price"), Seq("id"))))
  }
}
