package io.hyperspace

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.hyperspace.InjectedFunctions

import io.hyperspace.actions._
import io.hyperspace.config.HyperspaceConf
import io.hyperspace.explain.{Explainer, WhatIf, WhyNot}
import io.hyperspace.expressions.BucketId
import io.hyperspace.index.{IndexCatalog, IndexConfig, IndexKindConfig, IndexKinds, IndexNames}
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, DataSkippingStats, RelationSkippingStats}
import io.hyperspace.log.{IndexDefinition, States}
import io.hyperspace.sources.FileSource

/**
 * The entry point for managing the indexes of one session: `val hs = Hyperspace(spark)`.
 *
 * Every operation reads and appends the index's log in the lake (docs/log-format.md); there is
 * no state in this object, so any number of facades, sessions and processes may work on the
 * same indexes. Concurrent operations on one index follow the paper's Table 1.
 */
class Hyperspace(val spark: SparkSession) {

  /** The Hyperspace version of the loaded jar. */
  def version: String = BuildInfo.version

  /** The Spark version the jar was built against. */
  def sparkVersion: String = BuildInfo.sparkVersion

  /**
   * The directory under which this session's indexes live (`spark.hyperspace.system.path`),
   * qualified: a relative setting is shown resolved against the file system's working directory,
   * as every operation resolves it — not the directory a notebook's Python process is in.
   */
  def systemPath: String = {
    val path = new Path(HyperspaceConf.systemPath(spark))
    path.getFileSystem(spark.sessionState.newHadoopConf()).makeQualified(path).toString
  }

  /** Turns index-based query rewriting on for this session. */
  def enable(): Unit = Hyperspace.enable(spark)

  /** Turns index-based query rewriting off for this session. */
  def disable(): Unit = Hyperspace.disable(spark)

  /** Whether index-based query rewriting is on for this session. */
  def isEnabled: Boolean = Hyperspace.isEnabled(spark)

  private def catalog = new IndexCatalog(spark)

  /**
   * Builds a covering index over `df`, a plain scan of files (`spark.read.<format>(paths)` or
   * `spark.table(name)` of a file-based table). Everything is checked before anything is
   * written; the bucket count and lineage flag, when not given, come from the session's
   * settings and are stored in the index.
   */
  def createIndex(df: DataFrame, config: IndexConfig): Unit = createIndex(df, config: IndexKindConfig)

  /**
   * Builds a data skipping index over `df` (a plain scan of files, as for covering indexes): one
   * row of sketches per source file, e.g.
   * {{{
   *   hs.createIndex(spark.read.parquet("/data/events"),
   *     DataSkippingIndexConfig("events_skip", MinMaxSketch("ts"), BloomFilterSketch("user_id")))
   * }}}
   * Every sketch expression is resolved against the source before anything is written; a
   * hive-partitioned source gets a `PartitionSketch` per partition column unless
   * `spark.hyperspace.index.dataskipping.autoPartitionSketch` is off. Maintained like any index
   * (refresh in all modes, optimize, delete, restore, vacuum).
   */
  def createIndex(df: DataFrame, config: DataSkippingIndexConfig): Unit = createIndex(df, config: IndexKindConfig)

  /**
   * Builds an index of any registered kind ([[io.hyperspace.index.IndexKinds]]) over `df` (a
   * plain scan of files): the kind `config` names checks it against the source and defines what
   * the log records before anything is written.
   */
  def createIndex(df: DataFrame, config: IndexKindConfig): Unit = failingAs("create", config.name) {
    IndexNames.validate(config.name)
    val kind = IndexKinds.of(config)
    val source = FileSource.of(df, config.name)
    create(config.name, source, kind.define(spark, config, source))
  }

  /**
   * [[createIndex]] with the config as JSON in the format of kind `kindName`
   * (`IndexConfig.fromJson`, `DataSkippingIndexConfig.fromJson`, ...), for Python.
   */
  def createIndexOfKindFromJson(df: DataFrame, kindName: String, configJson: String): Unit =
    createIndex(df,
      failingAs("create", "(from JSON)")(IndexKinds.named(kindName, "(from JSON)").configFromJson(configJson)))

  /** The names of the index kinds this JVM can build and use: the built-in ones and those on the classpath. */
  def indexKinds: Seq[String] = IndexKinds.names

  /** [[createIndex]] of a data skipping index with the config as JSON (`DataSkippingIndexConfig.fromJson`), for Python. */
  def createDataSkippingIndexFromJson(df: DataFrame, configJson: String): Unit =
    createIndex(df, failingAs("create", "(from JSON)")(DataSkippingIndexConfig.fromJson(configJson)))

  private def create(name: String, source: FileSource, definition: IndexDefinition): Unit = {
    val log = catalog.logForCreate(name)
    log.latestStable.filter(e => e.state != States.DOESNOTEXIST && e.name != name).foreach { existing =>
      throw new HyperspaceException(
        s"Index '$name' already exists as '${existing.name}' (index names are case-insensitive).")
    }
    new CreateAction(spark, log, name, source, definition).run()
  }

  /**
   * The data skipping statistics of the most recent query this session ran: per relation a data
   * skipping index pruned, the files and bytes in total, skipped and read, and which index and
   * sketch skipped them. Empty when the last query skipped nothing by index. For statistics of
   * every query, register a [[io.hyperspace.index.dataskipping.DataSkippingListener]].
   */
  def lastQuerySkippingStats: Seq[RelationSkippingStats] = DataSkippingStats.last(spark)

  /** [[lastQuerySkippingStats]] as JSON (see `RelationSkippingStats.toJson`), for Python. */
  def lastQuerySkippingStatsJson: String = RelationSkippingStats.toJson(lastQuerySkippingStats)

  /** The data skipping statistics of `df`'s query as planned now (it need not have run). */
  def skippingStats(df: DataFrame): Seq[RelationSkippingStats] = DataSkippingStats.of(df.queryExecution)

  /** [[skippingStats]] as JSON, for Python. */
  def skippingStatsJson(df: DataFrame): String = RelationSkippingStats.toJson(skippingStats(df))

  /**
   * Brings index `name` up to date with its source. `mode`: `full` rebuilds it; `incremental`
   * indexes only appended files and drops the rows of deleted ones (deletes need lineage);
   * `quick` records the changes in the log only, and queries make up for them with hybrid scan.
   * An unchanged source is a no-op, said so in the result.
   */
  def refreshIndex(name: String, mode: String): MaintenanceResult = failingAs("refresh", name) {
    val log = catalog.existingLogOf(name)
    val action = new RefreshAction(spark, log, name, MaintenanceModes.refreshMode(name, mode))
    MaintenanceResult.of(action, action.run().id)
  }

  /** [[refreshIndex]] in `full` mode. */
  def refreshIndex(name: String): MaintenanceResult = refreshIndex(name, MaintenanceModes.Full)

  /**
   * Compacts index `name`'s files within each bucket. `mode`: `quick` merges the files smaller
   * than `spark.hyperspace.index.optimize.fileSizeThreshold`; `full` leaves one file per bucket.
   * Results of queries never change; replaced files stay until `vacuumIndex`.
   */
  def optimizeIndex(name: String, mode: String): MaintenanceResult = failingAs("optimize", name) {
    val log = catalog.existingLogOf(name)
    val action = new OptimizeAction(spark, log, name, MaintenanceModes.optimizeMode(name, mode))
    MaintenanceResult.of(action, action.run().id)
  }

  /** [[optimizeIndex]] in `quick` mode. */
  def optimizeIndex(name: String): MaintenanceResult = optimizeIndex(name, MaintenanceModes.Quick)

  /** Soft-deletes an ACTIVE index: queries stop using it; `restoreIndex` undoes it. */
  def deleteIndex(name: String): Unit = failingAs("delete", name) {
    new DeleteAction(spark, catalog.existingLogOf(name), name).run()
  }

  /** Brings a DELETED index back to ACTIVE. */
  def restoreIndex(name: String): Unit = failingAs("restore", name) {
    new RestoreAction(spark, catalog.existingLogOf(name), name).run()
  }

  /**
   * Removes the data versions index `name` no longer uses once they have been unused for the
   * retention `spark.hyperspace.index.vacuum.retention` (default 168 hours, as Delta's VACUUM):
   * queries planned or still running on an earlier version keep working. A DELETED index's data
   * was in use until the delete: once it is all past the retention, the index is removed for good
   * and the name is free; until then it stays DELETED (and restorable). The result says what was
   * removed and what is kept until when.
   */
  def vacuumIndex(name: String): MaintenanceResult = vacuum(name, None)

  /**
   * [[vacuumIndex]] keeping unused data versions for `retainHours` hours instead of the configured
   * retention. A shorter retention than configured is refused unless
   * `spark.hyperspace.index.vacuum.retentionCheck.enabled` is false (as Delta's
   * `retentionDurationCheck`): it could remove data queries elsewhere are still reading.
   */
  def vacuumIndex(name: String, retainHours: Double): MaintenanceResult = vacuum(name, Some(retainHours))

  private def vacuum(name: String, retainHours: Option[Double]): MaintenanceResult = failingAs("vacuum", name) {
    val retention = VacuumAction.retentionMs(spark, name, retainHours)
    val log = catalog.logOf(name)
    val latest = log.latest
    if (log.damage.isEmpty && latest.exists(_.state == States.DOESNOTEXIST)) {
      // A vacuum that committed but died before removing the log: finish it.
      VacuumAction.removeIndexDirectory(spark, log)
      MaintenanceResult(name, "vacuum", "", changed = true, latest.get.id, 0, 0, 0,
        s"Vacuumed index '$name': finished removing it; the name is free.")
    } else if (VacuumAction.loglessVersions(spark, log).nonEmpty) {
      val (removed, kept) = VacuumAction.removeLoglessData(spark, log, retention)
      val message = s"Vacuumed index '$name', whose log is lost: " +
        (if (removed.isEmpty) "removed no data version" else s"removed ${removed.mkString(", ")}") +
        (if (kept.isEmpty) "; the name is free."
         else s"; kept ${kept.mkString(", ")}, written less than the retention " +
           s"(${HyperspaceConf.VACUUM_RETENTION.key}) ago.")
      MaintenanceResult(name, "vacuum", "", changed = removed.nonEmpty, -1, 0, 0, 0, message)
    } else {
      val action = new VacuumAction(spark, catalog.existingLogOf(name), name, retention)
      MaintenanceResult.of(action, action.run().id)
    }
  }

  /**
   * Rolls an index whose operation crashed or was killed back to its last stable state and
   * removes the data that operation was writing. Refused while the operation's process is still
   * running on this host, unless `force` (which discards the work of a live operation).
   */
  def cancel(name: String, force: Boolean): Unit = failingAs("cancel", name) {
    new CancelAction(spark, catalog.logOf(name), name, force).run()
  }

  /** [[cancel]] without `force`. */
  def cancel(name: String): Unit = cancel(name, force = false)

  /**
   * One row per index: name, kind, indexedColumns (a data skipping index: its sketches, e.g.
   * `MinMax(ts)`), includedColumns, numBuckets (0 for data skipping), state,
   * indexLocation, sizeInBytes, numIndexFiles, numSourceFiles, appendedFiles, deletedFiles
   * (source files changed since the index data was built; null if the source cannot be listed),
   * lastModified, stateReason (why the state is CORRUPT — the damaged log entry — null otherwise).
   */
  def indexes: DataFrame = failingAs("list", "*")(catalog.indexesDataFrame())

  /**
   * One row per index in words, for reading: `name`, `kind`, `source` (format and table or
   * paths), `columns` (indexed, then included), `state`, `size` (e.g. "1.5 MiB") and `freshness`
   * ("up to date", or the source files appended and deleted since the index data was built).
   */
  def listIndexes: DataFrame = failingAs("list", "*")(catalog.readableDataFrame())

  /** One row for index `name`: the columns of [[indexes]] plus extended statistics. */
  def index(name: String): DataFrame = failingAs("describe", name)(catalog.indexDataFrame(name))

  /**
   * Runs `body`, turning any failure that is not yet a [[HyperspaceException]] (an I/O error of
   * the system path, a Spark job failing inside a build) into one naming the operation, the
   * index and the system path, the original as its cause.
   */
  private def failingAs[T](operation: String, name: String)(body: => T): T =
    try body
    catch {
      case scala.util.control.NonFatal(e) if !e.isInstanceOf[HyperspaceException] =>
        val what = if (name == "*") s"Cannot $operation the indexes" else s"Cannot $operation index '$name'"
        throw Action.asHyperspaceException(e,
          s"$what (system path ${HyperspaceConf.systemPath(spark)})")
    }

  /**
   * The plan of `df` with and without indexes, the differing lines marked, and the indexes used;
   * `verbose` adds operator counts compared (e.g. Exchange 2 → 0) and bytes scanned.
   */
  def explain(df: DataFrame, verbose: Boolean = false): String = Explainer.explain(df, verbose)

  /** For each index (or only `indexName`) that `df` does not use, the reasons in words. */
  def whyNot(df: DataFrame, indexName: String = null): String =
    WhyNot.whyNot(df, Option(indexName))

  /**
   * Plans `df` as if indexes with `configs` existed (nothing is built or written) and reports
   * which would be used, the bytes scanned and the shuffles avoided.
   */
  def whatIf(df: DataFrame, configs: IndexConfig*): String = WhatIf.whatIf(df, configs)

  /** [[whatIf]] with the configs as a JSON array (see `IndexConfig.fromJson`), for Python. */
  def whatIfFromJson(df: DataFrame, configsJson: String): String = {
    val node = new com.fasterxml.jackson.databind.ObjectMapper().readTree(configsJson)
    whatIf(df, (0 until node.size()).map(i => IndexConfig.fromJson(node.get(i).toString)): _*)
  }

  /**
   * The indexes worth building for `workload` ([[advisor.IndexAdvisor]]): covering, Z-order
   * covering and data skipping (MinMax, BloomFilter, ValueList) candidates
   * from each query's filters and join keys, their benefit from what-if plans (bytes read,
   * shuffles and sorts removed, weighted), chosen greedily by benefit per estimated byte within
   * `budgetBytes` and `maxIndexes`; nothing is built until `createAll()`.
   */
  def recommend(
      workload: Seq[advisor.WorkloadQuery],
      budgetBytes: Option[Long] = None,
      maxIndexes: Option[Int] = None): advisor.Recommendations =
    failingAs("recommend", "*")(advisor.IndexAdvisor.recommend(spark, workload, budgetBytes, maxIndexes))

  /** [[recommend]] for SQL queries, each of weight 1. */
  def recommendSql(queries: String*): advisor.Recommendations =
    recommend(failingAs("recommend", "*")(queries.map(advisor.WorkloadQuery.sql(spark, _))))

  /** An empty workload to add queries to one at a time, for Python. */
  def newWorkload(): advisor.Workload = new advisor.Workload(spark)

  /** [[recommend]] of a [[newWorkload]]; a negative budget or count means none, for Python. */
  def recommendWorkload(workload: advisor.Workload, budgetBytes: Long, maxIndexes: Int): advisor.Recommendations =
    recommend(workload.result, Option(budgetBytes).filter(_ >= 0), Option(maxIndexes).filter(_ >= 0))

  /**
   * [[recommend]] for the queries this session ran and recorded
   * (`spark.hyperspace.advisor.recordQueries`), each weighted by how many times it ran; an error
   * when recording is off or nothing was recorded.
   */
  def recommendRecorded(budgetBytes: Option[Long] = None, maxIndexes: Option[Int] = None): advisor.Recommendations =
    recommend(failingAs("recommend", "*")(advisor.QueryRecorder.workload(spark)), budgetBytes, maxIndexes)

  /** [[recommendRecorded]] with a negative budget or count meaning none, for Python. */
  def recommendRecordedFor(budgetBytes: Long, maxIndexes: Int): advisor.Recommendations =
    recommendRecorded(Option(budgetBytes).filter(_ >= 0), Option(maxIndexes).filter(_ >= 0))

  /** The queries this session recorded for the advisor, least recently run first. */
  def recordedQueries: Seq[advisor.RecordedQuery] = advisor.QueryRecorder.recordedSoFar(spark)

  /** [[recordedQueries]] as a JSON array of `{"query", "frequency"}`, for Python. */
  def recordedQueriesJson: String = advisor.RecordedQuery.toJson(recordedQueries)

  /** Forgets the queries this session recorded; returns how many distinct ones there were. */
  def clearRecordedQueries(): Int = advisor.QueryRecorder.clear(spark)

  /** [[createIndex]] with the config as JSON (see `IndexConfig.fromJson`), for the Python bindings. */
  def createIndexFromJson(df: DataFrame, configJson: String): Unit =
    createIndex(df, failingAs("create", "(from JSON)")(IndexConfig.fromJson(configJson)))
}

object Hyperspace {

  /** `Hyperspace(spark)`, as in the original library. */
  def apply(spark: SparkSession): Hyperspace = new Hyperspace(spark)

  /**
   * Turns query rewriting on for `spark` only (other sessions are unaffected). Fails with a
   * message saying how to install the extension when the session was built without it.
   */
  def enable(spark: SparkSession): Unit = {
    requireExtension(spark)
    spark.conf.set(HyperspaceConf.APPLY_ENABLED.key, "true")
  }

  /**
   * Installs Hyperspace into `spark`, an existing session built without the extension (see
   * [[HyperspaceSparkSessionExtension.attach]]); returns whether it was not installed before.
   */
  def attach(spark: SparkSession): Boolean = HyperspaceSparkSessionExtension.attach(spark)

  /** Turns query rewriting off for `spark` only. */
  def disable(spark: SparkSession): Unit =
    spark.conf.set(HyperspaceConf.APPLY_ENABLED.key, "false")

  /** Whether `spark` has the extension installed and rewriting switched on. */
  def isEnabled(spark: SparkSession): Boolean =
    isExtensionInstalled(spark) && HyperspaceConf.applyEnabled(spark)

  /**
   * Whether `spark` was built with [[HyperspaceSparkSessionExtension]]. Checked through what the
   * extension registered in this very session, so a session created before the configuration
   * was set is reported correctly.
   */
  def isExtensionInstalled(spark: SparkSession): Boolean =
    spark.sessionState.functionRegistry.functionExists(InjectedFunctions.identifier(BucketId.name))

  private def requireExtension(spark: SparkSession): Unit = {
    if (!isExtensionInstalled(spark)) {
      throw new HyperspaceExtensionNotInstalledException(
        "Hyperspace is not installed in this SparkSession: build the session with " +
          s"spark.sql.extensions=${HyperspaceSparkSessionExtension.className} " +
          "(e.g. SparkSession.builder().config(\"spark.sql.extensions\", " +
          s"\"${HyperspaceSparkSessionExtension.className}\")), or pass " +
          s"--conf spark.sql.extensions=${HyperspaceSparkSessionExtension.className} to " +
          "spark-submit. The setting only takes effect for sessions created after it is set; " +
          "to install Hyperspace into this session as it is, call Hyperspace.attach(spark).")
    }
  }
}
