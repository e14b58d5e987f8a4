package io.hyperspace.actions

import io.hyperspace.HyperspaceException
import io.hyperspace.actions.DataVersions.Use
import io.hyperspace.index.IndexConfig
import io.hyperspace.log.{ContentFile, LogEntry, States}
import io.hyperspace.maintenance.MaintenanceTestSupport

/** Vacuum's retention: what it keeps, for how long, and when a shorter one is refused. */
class VacuumRetentionSuite extends MaintenanceTestSupport {

  private def lookup(dir: java.io.File) = read(dir).where("id IN (3, 150, 405, 5003)").select("id", "name")

  test("a data version is unused from the first stable entry that stopped reading it") {
    val dir = newSource("uses", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("uses", Seq("id")))
    val template = logOf("uses").latestStable.get
    def entry(id: Long, state: String, ts: Long, versions: Int*): LogEntry = template.copy(
      id = id, state = state, timestamp = ts,
      content = template.content.copy(dataVersion = versions.max,
        files = versions.map(v => ContentFile(s"v__=$v/part-0.parquet", 1, 1))))
    val log = Seq(
      entry(0, States.CREATING, 10, 0), entry(1, States.ACTIVE, 20, 0),
      entry(2, States.REFRESHING, 30, 0, 1), entry(3, States.ACTIVE, 40, 1), // v0 replaced at 40
      entry(4, States.REFRESHING, 50, 1, 2), entry(5, States.ACTIVE, 60, 1), // v2: a failed refresh
      entry(6, States.DELETING, 70, 1), entry(7, States.DELETED, 80, 1), // v1 unused from the delete
      entry(8, States.RESTORING, 90, 1), entry(9, States.ACTIVE, 100, 1), // ... and in use again
      entry(10, States.OPTIMIZING, 110, 1, 3), entry(11, States.ACTIVE, 120, 1, 3)) // v3 beside v1
    assert(DataVersions.uses(log) == Map(0 -> Use.UnusedSince(40), 1 -> Use.Current, 2 -> Use.NeverRead,
      3 -> Use.Current))
    val deleted = log :+ entry(12, States.DELETING, 130, 1, 3) :+ entry(13, States.DELETED, 140, 1, 3)
    assert(DataVersions.uses(deleted) == Map(0 -> Use.UnusedSince(40), 1 -> Use.UnusedSince(140),
      2 -> Use.NeverRead, 3 -> Use.UnusedSince(140)))
  }

  test("vacuum keeps a deleted index's data for the retention; restore still works") {
    val dir = newSource("deleted-kept", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("kept", Seq("id"), Seq("name")))
    hs.deleteIndex("kept")
    val result = hs.vacuumIndex("kept")
    assert(!result.changed && result.message.contains("DELETED") && result.message.contains("until"), result.message)
    assert(logOf("kept").latestStable.get.state == States.DELETED)
    assert(versionDirs("kept") == Seq("v__=0"))
    val e = intercept[HyperspaceException](hs.createIndex(read(dir), IndexConfig("kept", Seq("id"))))
    assert(e.getMessage.contains("DELETED"), e.getMessage)
    hs.restoreIndex("kept")
    assert(indexesUsed(sameResult(lookup(dir))) == Seq("kept"))
  }

  test("a retention shorter than configured is refused unless the check is off") {
    val dir = newSource("short-retention", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("short", Seq("id")))
    hs.deleteIndex("short")
    val refused = intercept[HyperspaceException](hs.vacuumIndex("short", 0.0))
    assert(
      refused.getMessage.contains("'short'") &&
        refused.getMessage.contains("spark.hyperspace.index.vacuum.retentionCheck.enabled=false"), refused.getMessage)
    val negative = intercept[HyperspaceException](hs.vacuumIndex("short", -1.0))
    assert(negative.getMessage.contains("retain_hours"), negative.getMessage)
    assert(logOf("short").latestStable.get.state == States.DELETED)
    // retain_hours at least the configured retention needs no override.
    assert(!hs.vacuumIndex("short", 200.0).changed)
    withConf("spark.hyperspace.index.vacuum.retentionCheck.enabled" -> "false") {
      val freed = hs.vacuumIndex("short", 0.0)
      assert(freed.changed && freed.message.contains("name is free"), freed.message)
    }
    assert(!indexDir("short").exists())
  }

  test("vacuum removes a replaced version once it has been unused for the retention") {
    val dir = newSource("expiring", partitioned = false)
    hs.createIndex(read(dir), IndexConfig("expiring", Seq("id"), Seq("name")))
    append(dir, partitioned = false, 5000, 10)
    hs.refreshIndex("expiring", "full")
    assert(!hs.vacuumIndex("expiring").changed, "v__=0 is within the default retention")
    assert(versionDirs("expiring") == Seq("v__=0", "v__=1"))
    withConf("spark.hyperspace.index.vacuum.retention" -> "300ms") {
      Thread.sleep(400)
      assert(hs.vacuumIndex("expiring").changed)
    }
    assert(versionDirs("expiring") == Seq("v__=1"))
    assert(indexesUsed(sameResult(lookup(dir))) == Seq("expiring"))
  }

}
