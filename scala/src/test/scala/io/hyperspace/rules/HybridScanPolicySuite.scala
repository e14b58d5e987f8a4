package io.hyperspace.rules

import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.log._
import io.hyperspace.sources.{FileKey, SourceChanges}

/** The hybrid scan decision alone: no session, no files. */
class HybridScanPolicySuite extends AnyFunSuite {

  private def entry(lineage: Boolean, operation: String = "CREATE"): LogEntry = LogEntry(
    specVersion = 1, id = 1, name = "idx", state = States.ACTIVE, operation = operation,
    timestamp = 0L, enabled = true, owner = Owner("h", 1, 0),
    index = IndexDefinition("CoveringIndex", 1, Seq("a"), Nil, 4, lineage, "{}"),
    content = Content("file:/i", 0, Nil),
    source = Source("parquet", Seq("file:/s"), Map.empty, "{}", "{}", None,
      Seq(SourceFile("file:/s/a", 600, 1, 0), SourceFile("file:/s/b", 400, 1, 1)), Nil, Nil),
    signature = Signature("FileSetMD5", "x"))

  private val appended100 = SourceChanges(Seq(FileKey("file:/s/c", 100, 2)), Nil)
  private val deletedB = SourceChanges(Nil, Seq(SourceFile("file:/s/b", 400, 1, 1)))
  private val on = HybridScanPolicy(enabled = true, maxAppendedRatio = 0.3, maxDeletedRatio = 0.2)

  test("no changes need no hybrid scan, whatever the settings") {
    val none = SourceChanges(Nil, Nil)
    assert(on.copy(enabled = false).allows(entry(lineage = false), none, 1000, 1000) == Right(none))
  }

  test("a stale index needs hybrid scan enabled") {
    val why = HybridScanPolicy(enabled = false, 1.0, 1.0).allows(entry(lineage = true), appended100, 1100, 1000)
    assert(why.left.exists(r =>
        r.isInstanceOf[Reason.StaleWithoutHybridScan] &&
          r.describe.contains("spark.hyperspace.index.hybridscan.enabled")), why)
    assert(on.allows(entry(lineage = true), appended100, 1100, 1000) == Right(appended100))
  }

  test("appended bytes are compared with the listed bytes, against maxAppendedRatio") {
    // 100 of 1100 listed bytes: 9.1%.
    assert(on.copy(maxAppendedRatio = 0.09).allows(entry(lineage = false), appended100, 1100, 1000).isLeft)
    assert(on.copy(maxAppendedRatio = 0.1).allows(entry(lineage = false), appended100, 1100, 1000).isRight)
    val why = on.copy(maxAppendedRatio = 0.05).allows(entry(lineage = false), appended100, 1100, 1000)
    assert(why.left.exists(r => r.describe.contains("9.1%") && r.describe.contains("maxAppendedRatio=0.05")), why)
  }

  test("deleted files need lineage, and their bytes are compared with the indexed bytes") {
    val noLineage = on.copy(maxDeletedRatio = 1.0).allows(entry(lineage = false), deletedB, 600, 1000)
    assert(noLineage.left.exists(_.isInstanceOf[Reason.DeletedWithoutLineage]), noLineage)
    // 400 of 1000 indexed bytes: 40%.
    assert(on.copy(maxDeletedRatio = 0.4).allows(entry(lineage = true), deletedB, 600, 1000) == Right(deletedB))
    val why = on.copy(maxDeletedRatio = 0.39).allows(entry(lineage = true), deletedB, 600, 1000, " under file:/s")
    assert(
      why.left.exists(r => r.describe.startsWith("the source under file:/s changed") && r.describe.contains("40.0%")),
      why)
  }

  test("a hypothetical (whatIf) index is never served stale") {
    val hypothetical = entry(lineage = true, operation = LogEntry.HypotheticalOperation)
    assert(on.copy(maxAppendedRatio = 1.0).allows(hypothetical, appended100, 1100, 1000).isLeft)
  }
}
