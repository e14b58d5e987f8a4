package io.hyperspace.config

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

/**
 * Every `spark.hyperspace.*` setting, defined once. The names are those of the original
 * Hyperspace so existing configurations keep working; docs/configuration.md and the Python
 * `HyperspaceConfig` mirror this list (a test keeps them in step).
 */
object HyperspaceConf {

  private def buildConf(key: String): ConfigBuilder = ConfigBuilder(key)

  val SYSTEM_PATH: ConfigEntry[String] = buildConf("spark.hyperspace.system.path")
    .doc("Root directory under which every index lives (one sub-directory per index).")
    .stringConf
    .checkValue(_.nonEmpty, "the path must not be empty")
    .createWithDefaultFunction(spark =>
      new Path(spark.conf.get("spark.sql.warehouse.dir"), "indexes").toString)

  val APPLY_ENABLED: ConfigEntry[Boolean] = buildConf("spark.hyperspace.apply.enabled")
    .doc("Per-session switch for query rewriting; set by enableHyperspace / disableHyperspace.")
    .booleanConf
    .createWithDefault(false)

  val NUM_BUCKETS: ConfigEntry[Int] = buildConf("spark.hyperspace.index.numBuckets")
    .doc("Number of buckets of a new covering index; stored in the index at creation.")
    .withAlternative("spark.hyperspace.index.num.buckets")
    .intConf
    .checkValue(n => n > 0 && n <= 100000, "must be between 1 and 100000")
    .createWithDefault(200)

  val LINEAGE_ENABLED: ConfigEntry[Boolean] = buildConf("spark.hyperspace.index.lineage.enabled")
    .doc("Whether new indexes record the source file of every row (needed for incremental " +
      "refresh after deletes); stored in the index at creation.")
    .booleanConf
    .createWithDefault(false)

  val HYBRID_SCAN_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.hybridscan.enabled")
      .doc("Whether queries may use an index whose source has changed since it was built.")
      .booleanConf
      .createWithDefault(false)

  val HYBRID_SCAN_MAX_APPENDED_RATIO: ConfigEntry[Double] =
    buildConf("spark.hyperspace.index.hybridscan.maxAppendedRatio")
      .doc("Hybrid scan is used only while appended bytes / source bytes is at most this.")
      .doubleConf
      .checkValue(r => r >= 0.0 && r <= 1.0, "must be between 0.0 and 1.0")
      .createWithDefault(0.3)

  val HYBRID_SCAN_MAX_DELETED_RATIO: ConfigEntry[Double] =
    buildConf("spark.hyperspace.index.hybridscan.maxDeletedRatio")
      .doc("Hybrid scan is used only while deleted bytes / indexed source bytes is at most this.")
      .doubleConf
      .checkValue(r => r >= 0.0 && r <= 1.0, "must be between 0.0 and 1.0")
      .createWithDefault(0.2)

  val OPTIMIZE_FILE_SIZE_THRESHOLD: ConfigEntry[Long] =
    buildConf("spark.hyperspace.index.optimize.fileSizeThreshold")
      .doc("Index files smaller than this are merged by a quick optimize.")
      .bytesConf
      .checkValue(_ > 0, "must be a positive size")
      .createWithDefault(256L * 1024 * 1024)

  val ZORDER_TARGET_FILE_SIZE: ConfigEntry[Long] =
    buildConf("spark.hyperspace.index.zorder.targetFileSize")
      .doc("Largest index file a Z-order covering index build aims for (estimated from the row " +
        "count and the columns' sizes before compression, so files come out smaller); smaller " +
        "files let a range filter skip more, larger ones cost fewer file opens.")
      .bytesConf
      .checkValue(b => b >= 1024 && b <= (16L << 30), "must be between 1k and 16g")
      .createWithDefault(128L * 1024 * 1024)

  val ZORDER_PAGE_ROWS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.zorder.pageRows")
      .doc("Most rows in one Parquet page of a Z-order covering index's files. Each page's " +
        "min/max is in the file's page index, so a range reads only the pages of a file whose " +
        "ranges can match; smaller pages skip more inside a file, at a little more index size, " +
        "but cost more to decode where most of a file is read. The default is Parquet's own.")
      .intConf
      .checkValue(n => n >= 100 && n <= 1000000, "must be between 100 and 1000000")
      .createWithDefault(20000)

  val EXPLAIN_DISPLAY_MODE: ConfigEntry[String] =
    buildConf("spark.hyperspace.explain.displayMode")
      .doc("How explain output marks differences: plaintext, console (colours) or html.")
      .stringConf
      .checkValues(Set("plaintext", "console", "html"))
      .createWithDefault("plaintext")

  val EXPLAIN_HIGHLIGHT_BEGIN_TAG: ConfigEntry[String] =
    buildConf("spark.hyperspace.explain.displayMode.highlight.beginTag")
      .doc("Text explain puts before a line that differs between the plans; used together with " +
        "the end tag (both set), replacing the display mode's own markers.")
      .stringConf
      .createWithDefault("")

  val EXPLAIN_HIGHLIGHT_END_TAG: ConfigEntry[String] =
    buildConf("spark.hyperspace.explain.displayMode.highlight.endTag")
      .doc("Text explain puts after a line that differs between the plans (see the begin tag).")
      .stringConf
      .createWithDefault("")

  val AUTO_PARTITION_SKETCH: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.dataskipping.autoPartitionSketch")
      .doc("Whether data skipping indexes over hive-partitioned sources get a partition sketch.")
      .booleanConf
      .createWithDefault(true)

  val CONCURRENCY_WAIT_TIMEOUT: ConfigEntry[Long] =
    buildConf("spark.hyperspace.concurrency.waitTimeout")
      .doc("How long an operation waits for a running compatible operation on the same index " +
        "(Table 1 of docs/log-format.md) before failing.")
      .timeConf
      .checkValue(_ >= 0, "must not be negative")
      .createWithDefault(60000L)

  val VACUUM_RETENTION: ConfigEntry[Long] =
    buildConf("spark.hyperspace.index.vacuum.retention")
      .doc("How long vacuum keeps a data version after the index stopped using it (replaced by a " +
        "refresh or optimize, or its index deleted), so queries planned or still running on it, " +
        "in any session or process, keep working. Like Delta's 7-day file retention.")
      .timeConf
      .checkValue(_ >= 0, "must not be negative")
      .createWithDefault(168L * 60 * 60 * 1000)

  val VACUUM_RETENTION_CHECK_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.vacuum.retentionCheck.enabled")
      .doc("Whether vacuum refuses a retention (retain_hours) shorter than " +
        "spark.hyperspace.index.vacuum.retention; turn off only when no query can still read " +
        "the versions it would remove.")
      .booleanConf
      .createWithDefault(true)

  val DRIVER_READ_MAX_BYTES: ConfigEntry[Long] =
    buildConf("spark.hyperspace.index.driverRead.maxBytes")
      .doc("A query whose result goes to the driver and that reads index files of at most " +
        "this many bytes in all (after bucket and range pruning) is answered in the driver, without a " +
        "Spark job; 0 turns this off.")
      .bytesConf
      .checkValue(b => b >= 0 && b <= (1L << 30), "must be between 0 and 1g")
      .createWithDefault(16L * 1024 * 1024)

  val ONE_PARTITION_MAX_BYTES: ConfigEntry[Long] =
    buildConf("spark.hyperspace.index.onePartition.maxBytes")
      .doc("An aggregate over an index scan reading index files of at most this many bytes in " +
        "all (after bucket and range pruning) reads them as one partition, so it needs no " +
        "shuffle; 0 turns this off.")
      .bytesConf
      .checkValue(b => b >= 0 && b <= (1L << 30), "must be between 0 and 1g")
      .createWithDefault(8L * 1024 * 1024)

  val BROADCAST_PROBE_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.broadcastProbe.enabled")
      .doc("In a join Spark runs as a broadcast hash join, the streamed side, when it reads its whole " +
        "relation, reads a covering index whose leading indexed column is the (single) join key: the " +
        "broadcast is kept and its probes arrive in key order.")
      .booleanConf
      .createWithDefault(true)

  val DECIMALS_ON_LONGS_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.decimalsOnLongs.enabled")
      .doc("Over an index scan, sum of a DECIMAL of 9 to 18 digits (or of an exact product of two) " +
        "adds the values' unscaled longs while the running sum fits a long, with Spark's result, " +
        "nulls and overflow behaviour, and a filter compares such a column with a literal held as " +
        "a long; false leaves both to Spark's decimal arithmetic.")
      .booleanConf
      .createWithDefault(true)

  val SPLIT_MAX_READ_FRACTION: ConfigEntry[Double] =
    buildConf("spark.hyperspace.index.split.maxReadFraction")
      .doc("A split index seek is used only while the row groups it reads (plus source files the " +
        "index does not cover) are at most this fraction of the scan's bytes; above it the plain " +
        "scan is kept.")
      .doubleConf
      .checkValue(r => r >= 0.0 && r <= 1.0, "must be between 0.0 and 1.0")
      .createWithDefault(0.25)

  val SPLIT_MAX_LOCATIONS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.split.maxLocations")
      .doc("Most matching index rows a split index seek collects into the driver while planning; " +
        "a filter matching more keeps the plain scan.")
      .intConf
      .checkValue(n => n >= 1, "must be at least 1")
      .createWithDefault(100000)

  val SPLIT_DRIVER_READ_MAX_BYTES: ConfigEntry[Long] =
    buildConf("spark.hyperspace.index.split.driverRead.maxBytes")
      .doc("A query whose result goes to the driver and whose split index seek reads row groups " +
        "(plus source files the index does not cover) of at most this many bytes in all is answered in " +
        "the driver, without a Spark job; 0 turns this off.")
      .bytesConf
      .checkValue(b => b >= 0 && b <= (1L << 30), "must be between 0 and 1g")
      .createWithDefault(32L * 1024 * 1024)

  val SPLIT_JOIN_PRUNING_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.split.joinPruning.enabled")
      .doc("In an equi-join of a split-indexed Parquet source with a side Spark broadcasts, the source reads " +
        "only the row groups that can hold the broadcast's join keys, read from the broadcast at run time " +
        "(adaptive execution), when the index's statistics estimate that a seek for that many keys reads at " +
        "most maxReadFraction of the source. Nothing runs that Spark would not run: measured never slower.")
      .booleanConf
      .createWithDefault(true)

  val SPLIT_JOIN_PRUNING_MAX_KEYS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.split.joinPruning.maxKeys")
      .doc("Most distinct join keys of a broadcast that join pruning seeks for (fewer when the " +
        "index's statistics estimate that fewer pay); a broadcast with more does not prune.")
      .intConf
      .checkValue(n => n >= 1, "must be at least 1")
      .createWithDefault(1000)

  val SKETCH_JOIN_PRUNING_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.dataskipping.joinPruning.enabled")
      .doc("In an equi-join of a source whose data skipping index has a sketch on the join key (min/max, " +
        "bloom filter, value list) with a side Spark broadcasts, the source reads only the files whose " +
        "sketches can hold one of the broadcast's join keys, read from the broadcast at run time (adaptive " +
        "execution). A split index on the key is used instead where there is one.")
      .booleanConf
      .createWithDefault(true)

  val SKETCH_JOIN_PRUNING_MAX_KEYS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.dataskipping.joinPruning.maxKeys")
      .doc("Most distinct join keys of a broadcast that data skipping's join pruning checks the sketches " +
        "against; a broadcast with more does not prune.")
      .intConf
      .checkValue(n => n >= 1 && n <= 100000, "must be between 1 and 100000")
      .createWithDefault(1000)

  val SKETCH_JOIN_PRUNING_TABLE_FORMATS: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.dataskipping.joinPruning.tableFormats.enabled")
      .doc("Whether data skipping's join pruning also narrows scans of Delta tables (and of Iceberg tables " +
        "the sketches pruned while planning), through the format's own scan. Off by default: measured " +
        "slower than no index on 200 key-ordered Delta files (0.74-0.93x), where plain files gain.")
      .booleanConf
      .createWithDefault(false)

  val COVERING_JOIN_PRUNING_ENABLED: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.index.covering.joinPruning.enabled")
      .doc("In an equi-join of a source with a side Spark broadcasts, where the source has a covering index " +
        "with lineage whose first indexed column is the join key but that does not cover the query, the " +
        "source reads only the files the index's buckets name for the broadcast's join keys (read from the " +
        "broadcast at run time, adaptive execution) plus the files the index does not cover. A split index " +
        "on the key is used instead where there is one; data skipping sketches where there is neither.")
      .booleanConf
      .createWithDefault(true)

  val COVERING_JOIN_PRUNING_MAX_KEYS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.covering.joinPruning.maxKeys")
      .doc("Most distinct join keys of a broadcast that a covering index's join pruning looks up in the " +
        "index's buckets; a broadcast with more does not prune.")
      .intConf
      .checkValue(n => n >= 1 && n <= 100000, "must be between 1 and 100000")
      .createWithDefault(1000)

  val COVERING_JOIN_PRUNING_MAX_READ_FRACTION: ConfigEntry[Double] =
    buildConf("spark.hyperspace.index.covering.joinPruning.maxReadFraction")
      .doc("A covering index's join pruning looks up at most as many keys as are expected (placed at random, " +
        "one file each) to keep this fraction of the scan's files, and reads the index files of the keys' " +
        "buckets (those whose logged key ranges can hold a key) in the driver only while their bytes are at " +
        "most this fraction of the scan's bytes (and at most spark.hyperspace.index.driverRead.maxBytes).")
      .doubleConf
      .checkValue(r => r >= 0.0 && r <= 1.0, "must be between 0.0 and 1.0")
      .createWithDefault(0.25)

  val AUDIT_SAMPLE_RATE: ConfigEntry[Double] =
    buildConf("spark.hyperspace.audit.sampleRate")
      .doc("Fraction of the source files an index pruned — a split index seek (wholly or some row groups), " +
        "data skipping (for a filter, or for a join's keys), a covering index's join pruning — that planning re-scans in full, failing the " +
        "query if one holds a row the query keeps that the pruned scan would not read. 0 turns the audit off.")
      .doubleConf
      .checkValue(r => r >= 0.0 && r <= 1.0, "must be between 0.0 and 1.0")
      .createWithDefault(0.0)

  val DRIVER_READ_MAX_ROWS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.driverRead.maxRows")
      .doc("A driver-side read that would hold more rows than this (matching rows, or a grouped " +
        "aggregate's input) stops and runs the query as a Spark job instead, which bounds the driver's memory.")
      .intConf
      .checkValue(n => n > 0 && n <= 10000000, "must be between 1 and 10000000")
      .createWithDefault(10000)

  val DRIVER_READ_THREADS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.index.driverRead.threads")
      .doc("Threads a driver-side read of several index files reads them on (each a run of " +
        "consecutive files of about equal bytes); 0: the driver's available processors, at most 8. " +
        "With more than one, a global aggregate over at most spark.hyperspace.index.driverRead.maxBytes " +
        "of index files reads them as one partition, to be answered in the driver when collected.")
      .intConf
      .checkValue(n => n >= 0 && n <= 64, "must be between 0 and 64")
      .createWithDefault(0)

  val INDEXED_NUM_PARTITIONS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.indexed.numPartitions")
      .doc("Partitions of a new Indexed DataFrame (rows are hash-partitioned on the key); " +
        "defaults to spark.sql.shuffle.partitions. Fixed for the index and all its versions.")
      .intConf
      .checkValue(n => n > 0 && n <= 100000, "must be between 1 and 100000")
      .createWithDefaultFunction(spark => spark.conf.get("spark.sql.shuffle.partitions").trim.toInt)

  val INDEXED_BATCH_SIZE: ConfigEntry[Long] =
    buildConf("spark.hyperspace.indexed.batchSize")
      .doc("Largest row batch of an Indexed DataFrame partition; a row bigger than this gets " +
        "a batch of its own.")
      .bytesConf
      .checkValue(b => b >= 4096 && b <= (1L << 30), "must be between 4k and 1g")
      .createWithDefault(4L * 1024 * 1024)

  val INDEXED_COMPRESSION: ConfigEntry[String] =
    buildConf("spark.hyperspace.indexed.compression")
      .doc("How an Indexed DataFrame with a key of one long value (integral, date/time, " +
        "floating point, decimals up to 18 digits) keeps its row batches once written: 'none' " +
        "keeps them as written; 'lz4' or 'zstd' (smaller, slower to decode) compress each in " +
        "blocks, a lookup decoding only the block holding a row: a half to a third of the " +
        "memory, but joins measured up to 2x slower, so opt-in. Fixed for the index and all " +
        "its versions.")
      .stringConf
      .checkValues(Set("none", "lz4", "zstd"))
      .createWithDefault("none")

  val INDEXED_ROW_FORMAT: ConfigEntry[String] =
    buildConf("spark.hyperspace.indexed.rowFormat")
      .doc("How an Indexed DataFrame stores its rows: 'compact' encodes each row on its own " +
        "(varints, a per-partition dictionary of short strings, a null bitmap) and decodes only " +
        "the rows a query reads; 'unsafe' stores Spark's UnsafeRows as they are. Compact applies " +
        "to keys of one long value (integral, date/time, floating point, decimals up to 18 " +
        "digits), atomic columns and no block compression; other indexes store UnsafeRows. " +
        "Fixed for the index and all its versions.")
      .stringConf
      .checkValues(Set("compact", "unsafe"))
      .createWithDefault("compact")

  val INDEXED_COMPRESSION_BLOCK_SIZE: ConfigEntry[Long] =
    buildConf("spark.hyperspace.indexed.compression.blockSize")
      .doc("Uncompressed bytes of a compressed block of an Indexed DataFrame's row batches: " +
        "what a lookup decodes to read one row. Smaller blocks decode faster and compress less.")
      .bytesConf
      .checkValue(b => b >= 512 && b <= 1024 * 1024, "must be between 512 and 1m")
      .createWithDefault(4096L)

  val INDEXED_LOOKUP_READ_IN_PLACE: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.indexed.lookup.readInPlace")
      .doc("Whether a collected key lookup on an Indexed DataFrame (lookup(), get_rows(k)." +
        "collect(), SELECT ... WHERE key = v) reads a partition the driver's own block manager " +
        "holds in memory (local mode) in place, without a Spark job; partitions held elsewhere " +
        "are always read by one job on just those partitions.")
      .booleanConf
      .createWithDefault(true)

  val INDEXED_JOIN_PROBE_IN_PLACE: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.indexed.join.probeInPlace")
      .doc("In local mode, whether an indexed join with a small probe side (one it would " +
        "broadcast) reads the probe rows where they are and joins each with the index partition " +
        "it hashes to, read in place, instead of collecting and broadcasting the probe side " +
        "first. Applies to joins whose output each probe row decides alone (inner, probe-side " +
        "outer, semi and anti joins).")
      .booleanConf
      .createWithDefault(true)

  val INDEXED_KEPT_BROADCASTS_MAX_BYTES: ConfigEntry[Long] =
    buildConf("spark.hyperspace.indexed.keptBroadcasts.maxBytes")
      .doc("Bytes of broadcasts of a cached Indexed DataFrame version's rows (Spark's broadcast " +
        "of a small index side of a join, filtered and projected) kept with the version: a " +
        "later query broadcasting the same rows the same way reuses one instead of collecting " +
        "and broadcasting them again. Released by unpersist(); 0 turns keeping off.")
      .bytesConf
      .checkValue(b => b >= 0 && b <= (8L << 30), "must be between 0 and 8g")
      .createWithDefault(64L * 1024 * 1024)

  val INDEXED_JOIN_SELECTION: ConfigEntry[String] =
    buildConf("spark.hyperspace.indexed.joinSelection")
      .doc("How an equi-join on an Indexed DataFrame's key is planned: 'cost' probes the index " +
        "only when Spark's own join would not be cheaper by size (a small index side Spark " +
        "broadcasts, a broadcast probe side every partition would filter); 'index' always " +
        "probes the index.")
      .stringConf
      .checkValues(Set("cost", "index"))
      .createWithDefault("cost")

  val INDEXED_JOIN_COUNT_PROBE_ROWS: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.indexed.join.countProbeRows")
      .doc("Whether the cost-based join selection counts a small probe side's rows (a job reading " +
        "it under a limit) when only an estimate from its size, which no filter lowers, would leave " +
        "the join to Spark; false decides on that estimate.")
      .booleanConf
      .createWithDefault(true)

  val INDEXED_JOIN_ONE_TASK_PROBE_ROWS: ConfigEntry[Int] =
    buildConf("spark.hyperspace.indexed.join.oneTaskProbeRows")
      .doc("Probe sides of an indexed join broadcast to the index partitions with at most this " +
        "many rows (estimated) are joined in a single task when every index partition is cached " +
        "on one executor: the join's output is then one partition, so an aggregate or another " +
        "clustered operator above it needs no exchange and no further stage, which costs more " +
        "than joining a small probe side in parallel saves. 0 turns it off.")
      .intConf
      .checkValue(_ >= 0, "must be >= 0")
      .createWithDefault(20000)

  val ADVISOR_RECORD_QUERIES: ConfigEntry[Boolean] =
    buildConf("spark.hyperspace.advisor.recordQueries")
      .doc("Whether the session records the queries it runs (plan only, no data), so that " +
        "recommend() without a workload advises on them; off by default.")
      .booleanConf
      .createWithDefault(false)

  val ADVISOR_MAX_RECORDED_QUERIES: ConfigEntry[Int] =
    buildConf("spark.hyperspace.advisor.maxRecordedQueries")
      .doc("Most distinct queries a session keeps recorded; past it the least recently run is " +
        "dropped (each holds its plan, and with it the source's file listing).")
      .intConf
      .checkValue(n => n > 0 && n <= 100000, "must be between 1 and 100000")
      .createWithDefault(200)

  val ADVISOR_BLOOM_FILTER_FPP: ConfigEntry[Double] =
    buildConf("spark.hyperspace.advisor.bloomFilterFpp")
      .doc("False positive probability of the BloomFilter sketches the advisor recommends (and " +
        "estimates with): lower skips more files for a larger sketch table.")
      .doubleConf
      .checkValue(p => p > 0.0 && p < 1.0, "must be between 0 and 1 (exclusive)")
      .createWithDefault(0.01)

  /**
   * Not a session setting but a DataFrameReader option, under the original Hyperspace's name:
   * the glob pattern(s), comma-separated, a source is read with, e.g.
   * `spark.read.option(GLOBBING_PATTERN_OPTION, "/lake/events-2024-*").parquet("/lake/events-2024-*")`.
   * An index over such a source records the patterns rather than the directories they matched,
   * so refresh finds directories added since.
   */
  val GLOBBING_PATTERN_OPTION: String = "spark.hyperspace.source.globbingPattern"

  /** All settings, in documentation order. */
  val allEntries: Seq[ConfigEntry[_]] = Seq(
    SYSTEM_PATH, APPLY_ENABLED, NUM_BUCKETS, LINEAGE_ENABLED, HYBRID_SCAN_ENABLED,
    HYBRID_SCAN_MAX_APPENDED_RATIO, HYBRID_SCAN_MAX_DELETED_RATIO,
    OPTIMIZE_FILE_SIZE_THRESHOLD, ZORDER_TARGET_FILE_SIZE, ZORDER_PAGE_ROWS, EXPLAIN_DISPLAY_MODE,
    EXPLAIN_HIGHLIGHT_BEGIN_TAG,
    EXPLAIN_HIGHLIGHT_END_TAG, AUTO_PARTITION_SKETCH,
    CONCURRENCY_WAIT_TIMEOUT, VACUUM_RETENTION, VACUUM_RETENTION_CHECK_ENABLED,
    DRIVER_READ_MAX_BYTES, DRIVER_READ_MAX_ROWS, DRIVER_READ_THREADS, ONE_PARTITION_MAX_BYTES, BROADCAST_PROBE_ENABLED,
    DECIMALS_ON_LONGS_ENABLED,
    INDEXED_NUM_PARTITIONS, INDEXED_BATCH_SIZE,
    INDEXED_COMPRESSION, INDEXED_COMPRESSION_BLOCK_SIZE, INDEXED_ROW_FORMAT, INDEXED_JOIN_SELECTION,
    INDEXED_JOIN_ONE_TASK_PROBE_ROWS, INDEXED_JOIN_COUNT_PROBE_ROWS, INDEXED_JOIN_PROBE_IN_PLACE,
    INDEXED_LOOKUP_READ_IN_PLACE,
    INDEXED_KEPT_BROADCASTS_MAX_BYTES,
    SPLIT_MAX_READ_FRACTION, SPLIT_MAX_LOCATIONS, SPLIT_DRIVER_READ_MAX_BYTES, SPLIT_JOIN_PRUNING_ENABLED,
    SPLIT_JOIN_PRUNING_MAX_KEYS, SKETCH_JOIN_PRUNING_ENABLED, SKETCH_JOIN_PRUNING_MAX_KEYS,
    SKETCH_JOIN_PRUNING_TABLE_FORMATS,
    COVERING_JOIN_PRUNING_ENABLED, COVERING_JOIN_PRUNING_MAX_KEYS, COVERING_JOIN_PRUNING_MAX_READ_FRACTION,
    AUDIT_SAMPLE_RATE, ADVISOR_RECORD_QUERIES, ADVISOR_MAX_RECORDED_QUERIES,
    ADVISOR_BLOOM_FILTER_FPP)

  /** The keys of [[allEntries]] (for the Python side and docs checks). */
  def allKeys: Seq[String] = allEntries.map(_.key)

  /** [[allKeys]] as a Java list, for the Python bindings. */
  def allKeysAsJava: java.util.List[String] = {
    val keys = new java.util.ArrayList[String]()
    allKeys.foreach(keys.add)
    keys
  }

  /** The entry for `key` (its own key or an older name of it), if it is a Hyperspace setting. */
  def entryFor(key: String): Option[ConfigEntry[_]] =
    allEntries.find(_.key == key).orElse(allEntries.find(_.alternatives.contains(key)))

  /** Older names a setting is also read from (alternative key → its own key), for Python. */
  def alternativeKeysAsJava: java.util.Map[String, String] = {
    val m = new java.util.LinkedHashMap[String, String]()
    for (e <- allEntries; alt <- e.alternatives) m.put(alt, e.key)
    m
  }

  /**
   * Checks `raw` as a value for `key` and returns it normalised (as it would be stored);
   * fails with a [[io.hyperspace.HyperspaceException]] naming the key when it is invalid.
   * Keys that are not Hyperspace settings are rejected too, so typos do not pass silently.
   */
  def validate(key: String, raw: String): String = entryFor(key) match {
    case Some(entry) => renderChecked(entry, raw)
    case None =>
      throw new io.hyperspace.HyperspaceException(
        s"Unknown Hyperspace setting '$key'. Known settings: ${allKeys.mkString(", ")}.")
  }

  private def renderChecked[T](entry: ConfigEntry[T], raw: String): String =
    entry.render(entry.parseAndCheck(raw))

  /** The effective value of `key` in `spark`, rendered as a string (default if unset). */
  def effectiveValue(spark: SparkSession, key: String): String = entryFor(key) match {
    case Some(entry) => renderEffective(entry, spark)
    case None =>
      throw new io.hyperspace.HyperspaceException(
        s"Unknown Hyperspace setting '$key'. Known settings: ${allKeys.mkString(", ")}.")
  }

  private def renderEffective[T](entry: ConfigEntry[T], spark: SparkSession): String =
    entry.render(entry.readFrom(spark))

  // Typed accessors, read at every use.

  /** Root directory of all indexes for this session. */
  def systemPath(spark: SparkSession): String = SYSTEM_PATH.readFrom(spark)
  /** Whether query rewriting is on in this session. */
  def applyEnabled(spark: SparkSession): Boolean = APPLY_ENABLED.readFrom(spark)
  /** Bucket count for new covering indexes. */
  def numBuckets(spark: SparkSession): Int = NUM_BUCKETS.readFrom(spark)
  /** Whether new indexes get a lineage column. */
  def lineageEnabled(spark: SparkSession): Boolean = LINEAGE_ENABLED.readFrom(spark)
  /** Whether stale indexes may be used through hybrid scan. */
  def hybridScanEnabled(spark: SparkSession): Boolean = HYBRID_SCAN_ENABLED.readFrom(spark)
  /** Largest appended/source byte ratio hybrid scan accepts. */
  def hybridScanMaxAppendedRatio(spark: SparkSession): Double =
    HYBRID_SCAN_MAX_APPENDED_RATIO.readFrom(spark)
  /** Largest deleted/indexed byte ratio hybrid scan accepts. */
  def hybridScanMaxDeletedRatio(spark: SparkSession): Double =
    HYBRID_SCAN_MAX_DELETED_RATIO.readFrom(spark)
  /** Size below which quick optimize merges index files. */
  def optimizeFileSizeThreshold(spark: SparkSession): Long =
    OPTIMIZE_FILE_SIZE_THRESHOLD.readFrom(spark)
  /** The file size a Z-order covering index build aims for. */
  def zorderTargetFileSize(spark: SparkSession): Long = ZORDER_TARGET_FILE_SIZE.readFrom(spark)
  /** Most rows in one Parquet page of a Z-order covering index's files. */
  def zorderPageRows(spark: SparkSession): Int = ZORDER_PAGE_ROWS.readFrom(spark)
  /** How explain output is rendered. */
  def explainDisplayMode(spark: SparkSession): String = EXPLAIN_DISPLAY_MODE.readFrom(spark)
  /**
   * The (begin, end) text explain puts around a differing line when both tags are set (the
   * original Hyperspace's keys); None means the display mode's own markers.
   */
  def explainHighlightTags(spark: SparkSession): Option[(String, String)] = {
    val begin = EXPLAIN_HIGHLIGHT_BEGIN_TAG.readFrom(spark)
    val end = EXPLAIN_HIGHLIGHT_END_TAG.readFrom(spark)
    if (begin.nonEmpty && end.nonEmpty) Some((begin, end)) else None
  }
  /** Whether a partition sketch is added automatically. */
  def autoPartitionSketch(spark: SparkSession): Boolean = AUTO_PARTITION_SKETCH.readFrom(spark)
  /** How long an operation waits for a compatible running one, in milliseconds. */
  def concurrencyWaitTimeoutMs(spark: SparkSession): Long = CONCURRENCY_WAIT_TIMEOUT.readFrom(spark)
  /** How long vacuum keeps an unused data version, in milliseconds. */
  def vacuumRetentionMs(spark: SparkSession): Long = VACUUM_RETENTION.readFrom(spark)
  /** Whether vacuum refuses a retention below [[vacuumRetentionMs]]. */
  def vacuumRetentionCheckEnabled(spark: SparkSession): Boolean =
    VACUUM_RETENTION_CHECK_ENABLED.readFrom(spark)
  /** Largest index bytes a query reads in the driver instead of in a job; 0: never. */
  def driverReadMaxBytes(spark: SparkSession): Long = DRIVER_READ_MAX_BYTES.readFrom(spark)
  /** Largest index bytes an aggregate reads in one partition, without a shuffle; 0: never. */
  def onePartitionMaxBytes(spark: SparkSession): Long = ONE_PARTITION_MAX_BYTES.readFrom(spark)
  def broadcastProbeEnabled(spark: SparkSession): Boolean = BROADCAST_PROBE_ENABLED.readFrom(spark)
  /** Whether sums of and comparisons with decimals of 9 to 18 digits over index scans run on longs. */
  def decimalsOnLongsEnabled(spark: SparkSession): Boolean = DECIMALS_ON_LONGS_ENABLED.readFrom(spark)
  /** Most matching rows a driver-side read collects before it gives way to a job. */
  def driverReadMaxRows(spark: SparkSession): Int = DRIVER_READ_MAX_ROWS.readFrom(spark)
  /** Threads a driver-side read of several files reads on (0 in the setting: the driver's processors, at most 8). */
  def driverReadThreads(spark: SparkSession): Int = DRIVER_READ_THREADS.readFrom(spark) match {
    case 0 => math.min(Runtime.getRuntime.availableProcessors, 8)
    case n => n
  }
  /** Largest fraction of a scan's bytes a split index seek may read. */
  def splitMaxReadFraction(spark: SparkSession): Double = SPLIT_MAX_READ_FRACTION.readFrom(spark)
  /** Most row groups a split index seek collects while planning. */
  def splitMaxLocations(spark: SparkSession): Int = SPLIT_MAX_LOCATIONS.readFrom(spark)
  /** Largest bytes of source row groups a split index seek reads in the driver, without a job; 0: never. */
  def splitDriverReadMaxBytes(spark: SparkSession): Long = SPLIT_DRIVER_READ_MAX_BYTES.readFrom(spark)
  /** Whether a small join side's keys prune a split-indexed source's row groups. */
  def splitJoinPruningEnabled(spark: SparkSession): Boolean = SPLIT_JOIN_PRUNING_ENABLED.readFrom(spark)
  /** Most distinct broadcast keys join pruning seeks for. */
  def splitJoinPruningMaxKeys(spark: SparkSession): Int = SPLIT_JOIN_PRUNING_MAX_KEYS.readFrom(spark)
  /** Whether a small join side's keys prune a source's files by its data skipping sketches. */
  def sketchJoinPruningEnabled(spark: SparkSession): Boolean = SKETCH_JOIN_PRUNING_ENABLED.readFrom(spark)
  /** Most distinct broadcast keys data skipping's join pruning checks. */
  def sketchJoinPruningMaxKeys(spark: SparkSession): Int = SKETCH_JOIN_PRUNING_MAX_KEYS.readFrom(spark)
  /** Whether data skipping's join pruning narrows table formats' scans too. */
  def sketchJoinPruningTableFormats(spark: SparkSession): Boolean = SKETCH_JOIN_PRUNING_TABLE_FORMATS.readFrom(spark)
  /** Whether join pruning may probe a covering index's buckets for a broadcast's keys. */
  def coveringJoinPruningEnabled(spark: SparkSession): Boolean = COVERING_JOIN_PRUNING_ENABLED.readFrom(spark)
  /** Most distinct broadcast keys a covering index's join pruning looks up. */
  def coveringJoinPruningMaxKeys(spark: SparkSession): Int = COVERING_JOIN_PRUNING_MAX_KEYS.readFrom(spark)
  /** Most bytes of index files that probe reads, as a fraction of the scan's bytes. */
  def coveringJoinPruningMaxReadFraction(spark: SparkSession): Double =
    COVERING_JOIN_PRUNING_MAX_READ_FRACTION.readFrom(spark)
  /** Fraction of pruned files an audit re-scans to check the pruning (0: off). */
  def auditSampleRate(spark: SparkSession): Double = AUDIT_SAMPLE_RATE.readFrom(spark)
  /** Partitions of a new Indexed DataFrame. */
  def indexedNumPartitions(spark: SparkSession): Int = INDEXED_NUM_PARTITIONS.readFrom(spark)
  /** Largest row batch of an Indexed DataFrame partition, in bytes. */
  def indexedBatchSize(spark: SparkSession): Long = INDEXED_BATCH_SIZE.readFrom(spark)
  /** The codec of an Indexed DataFrame's row batches: "none", "lz4" or "zstd". */
  def indexedCompression(spark: SparkSession): String = INDEXED_COMPRESSION.readFrom(spark)
  /** Uncompressed bytes of a compressed block of an Indexed DataFrame's row batches. */
  def indexedRowFormat(spark: SparkSession): String = INDEXED_ROW_FORMAT.readFrom(spark)

  def indexedCompressionBlockSize(spark: SparkSession): Long = INDEXED_COMPRESSION_BLOCK_SIZE.readFrom(spark)
  /** How equi-joins on an Indexed DataFrame's key are planned: "cost" or "index". */
  def indexedJoinSelection(spark: SparkSession): String = INDEXED_JOIN_SELECTION.readFrom(spark)

  def indexedJoinOneTaskProbeRows(spark: SparkSession): Int = INDEXED_JOIN_ONE_TASK_PROBE_ROWS.readFrom(spark)

  def indexedJoinCountProbeRows(spark: SparkSession): Boolean = INDEXED_JOIN_COUNT_PROBE_ROWS.readFrom(spark)

  def indexedLookupReadInPlace(spark: SparkSession): Boolean = INDEXED_LOOKUP_READ_IN_PLACE.readFrom(spark)

  def indexedJoinProbeInPlace(spark: SparkSession): Boolean = INDEXED_JOIN_PROBE_IN_PLACE.readFrom(spark)

  def indexedKeptBroadcastsMaxBytes(spark: SparkSession): Long =
    INDEXED_KEPT_BROADCASTS_MAX_BYTES.readFrom(spark)
  /** Whether the session records its queries for the advisor. */
  def advisorRecordQueries(spark: SparkSession): Boolean = ADVISOR_RECORD_QUERIES.readFrom(spark)
  /** How many distinct recorded queries the session keeps. */
  def advisorMaxRecordedQueries(spark: SparkSession): Int = ADVISOR_MAX_RECORDED_QUERIES.readFrom(spark)

  /** The false positive probability of the advisor's BloomFilter sketches. */
  def advisorBloomFilterFpp(spark: SparkSession): Double = ADVISOR_BLOOM_FILTER_FPP.readFrom(spark)
}
