package io.hyperspace.log

import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.HyperspaceException

class LogEntrySuite extends AnyFunSuite {

  private val entry = LogEntry(
    specVersion = 1, id = 7, name = "idx \u00e9", state = States.ACTIVE, operation = "CREATE",
    timestamp = 1763719200000L, enabled = true, owner = Owner("host-1", 4711, 1763719190000L),
    index = IndexDefinition("CoveringIndex", 1, Seq("a", "b"), Seq("c"), 8, lineage = true,
      schema = """{"type":"struct","fields":[]}""", properties = Map("k" -> "v")),
    content = Content("file:/lake/indexes/idx", 2,
      Seq(ContentFile("v__=2/part-00000_00000.c000.snappy.parquet", 100, 1763719199000L))),
    source = Source("csv", Seq("file:/lake/src"), Map("header" -> "true"), "{}", "{}",
      Some("db.t"), Seq(SourceFile("file:/lake/src/a b.csv", 10, 5, 0)),
      appendedFiles = Seq(SourceFile("file:/lake/src/c.csv", 12, 6, 1)), deletedFiles = Nil),
    signature = Signature("FileSetMD5", "abc"),
    extra = Map("note" -> "x"))

  test("an entry survives a JSON round trip unchanged") {
    assert(LogEntry.fromJson(entry.toJson, "test") == entry)
    val noTable = entry.copy(source = entry.source.copy(table = None))
    assert(LogEntry.fromJson(noTable.toJson, "test") == noTable)
    assert(noTable.toJson.contains("\"table\" : null"))
  }

  test("a Delta source file keeps its deletion vector; other files have no such field") {
    assert(!entry.toJson.contains("deletionVector"))
    val delta = entry.copy(source = entry.source.copy(files = Seq(
      SourceFile("file:/lake/t/part-0.parquet", 10, 5, 0),
      SourceFile("file:/lake/t/part-1.parquet", 10, 5, 1, deletionVector = Some("uabc@1")))))
    assert(LogEntry.fromJson(delta.toJson, "test") == delta)
    assert(delta.toJson.contains("\"deletionVector\" : \"uabc@1\""))
    // The same path, size and time with another deletion vector is another file.
    assert(delta.source.files(1).key != delta.source.files(1).copy(deletionVector = Some("uabc@2")).key)
  }

  test("the JSON has the documented field names, no Java serialization") {
    val json = entry.toJson
    Seq("specVersion", "id", "name", "state", "operation", "timestamp", "enabled", "owner",
      "index", "content", "source", "signature", "extra", "indexedColumns", "includedColumns",
      "numBuckets", "lineage", "schema", "dataVersion", "files", "modificationTime", "rootPaths",
      "partitionSchema", "appendedFiles", "deletedFiles", "provider", "startedAt", "pid", "host").foreach { field =>
      assert(json.contains(s"\"$field\""), s"missing $field")
    }
    assert(json.trim.startsWith("{"))
  }

  test("unknown fields are ignored (forward compatible)") {
    val json = entry.toJson.replaceFirst("\\{", "{ \"futureField\" : [1, 2],")
    assert(LogEntry.fromJson(json, "test") == entry)
  }

  test("corrupted entries fail naming the file") {
    val notJson = intercept[HyperspaceException](LogEntry.fromJson("{ nope", "/x/_hyperspace_log/3"))
    assert(notJson.getMessage.startsWith("Corrupted index log entry /x/_hyperspace_log/3:"))
    for (empty <- Seq("", "  \n", "[]", "null")) {
      val e = intercept[HyperspaceException](LogEntry.fromJson(empty, "/x/_hyperspace_log/5"))
      assert(e.getMessage.startsWith("Corrupted index log entry /x/_hyperspace_log/5:"), empty)
    }
    // Jackson's versions differ in what they put for an absent collection (null, or empty): an
    // entry without its files must never read as an index of no files, on any Spark line.
    for (field <- Seq("files", "indexedColumns", "options", "appendedFiles")) {
      val e = intercept[HyperspaceException](
        LogEntry.fromJson(entry.toJson.replaceFirst(s"\"$field\"", "\"gone\""), "f"))
      assert(e.getMessage.contains(s"field '") && e.getMessage.contains("is missing"), field)
    }
    // Fields with defaults may be absent (entries written before they existed).
    val old = entry.copy(extra = Map.empty, incarnation = None).toJson
      .replaceFirst("\"extra\"", "\"x1\"").replaceFirst("\"incarnation\"", "\"x2\"")
    assert(LogEntry.fromJson(old, "f") == entry.copy(extra = Map.empty, incarnation = None))
    val missing = intercept[HyperspaceException](
      LogEntry.fromJson(entry.toJson.replace("\"owner\"", "\"renamed\""), "/x/_hyperspace_log/4"))
    assert(missing.getMessage == "Corrupted index log entry /x/_hyperspace_log/4: field 'owner' is missing.")
    val nested = intercept[HyperspaceException](
      LogEntry.fromJson(entry.toJson.replace("\"rootPaths\"", "\"other\""), "f"))
    assert(nested.getMessage.contains("field 'source.rootPaths' is missing"))
    val state = intercept[HyperspaceException](
      LogEntry.fromJson(entry.toJson.replace("\"ACTIVE\"", "\"SLEEPING\""), "f"))
    assert(state.getMessage.contains("unknown state 'SLEEPING'"))
    val version = intercept[HyperspaceException](
      LogEntry.fromJson(entry.toJson.replace("\"specVersion\" : 1", "\"specVersion\" : 2"), "f"))
    assert(version.getMessage.contains("has specVersion 2"))
  }

  test("the signature is the MD5 of the sorted file list") {
    val files = Seq(SourceFile("b", 2, 3, 1), SourceFile("a", 1, 2, 0))
    val expected = java.security.MessageDigest.getInstance("MD5")
      .digest("a\t1\t2\nb\t2\t3".getBytes("UTF-8")).map("%02x".format(_)).mkString
    assert(Signature.of(files) == Signature("FileSetMD5", expected))
    assert(Signature.of(files.reverse) == Signature.of(files))
    assert(Signature.of(Seq(SourceFile("a", 1, 9, 0))) != Signature.of(Seq(SourceFile("a", 1, 2, 0))))
  }

  test("state classification") {
    assert(States.stable == Set("ACTIVE", "DELETED", "DOESNOTEXIST"))
    assert(States.transient.forall(!States.isStable(_)))
  }
}
