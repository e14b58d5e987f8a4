package io.hyperspace.index.dataskipping

import org.apache.spark.internal.Logging
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._

import io.hyperspace.index.BoundedCache
import io.hyperspace.log.LogEntry

/**
 * The sketch table of one index version, ready to evaluate query conditions on.
 *
 * Sketch tables are small (one row per source file), so up to [[SketchTableEvaluator.MaxDriverBytes]]
 * of sketch files are collected once per index version and evaluated on the driver with an
 * interpreted predicate: planning a query then costs no Spark job. Larger tables are evaluated
 * with a Spark job per query.
 *
 * @param attributes the sketch table's columns (from the schema the log records), to translate
 *                   filters against; the same for every query on this index version
 */
final class SketchTable private[dataskipping] (
    val entry: LogEntry,
    val attributes: Seq[Attribute],
    rows: Option[Array[InternalRow]],
    table: => DataFrame) {

  /** Whether conditions are evaluated on the driver (the table is held in memory). */
  def onDriver: Boolean = rows.isDefined

  /**
   * The ids of the files `condition` (over [[attributes]]) rules out: those whose row makes it
   * FALSE. A NULL result keeps the file; files without a row are never returned.
   */
  def skippedIds(condition: Expression): Set[Long] = rows match {
    case None =>
      // The DataFrame has attributes of its own; the table's columns are in schema order.
      val df = table
      val output = df.queryExecution.analyzed.output
      val rebound = condition.transform {
        case a: Attribute if attributes.exists(_.exprId == a.exprId) =>
          output(attributes.indexWhere(_.exprId == a.exprId))
      }
      DataSkippingIndex.skippedFileIds(df, rebound)
    case Some(all) =>
      val skip = Not(Coalesce(Seq(condition, Literal.TrueLiteral)))
      val predicate = Predicate.createInterpreted(BindReferences.bindReference(skip, attributes))
      predicate.initialize(0)
      val id = attributes.indexWhere(_.name == DataSkippingIndex.FileIdColumn)
      all.iterator.filter(predicate.eval).map(_.getLong(id)).toSet
  }
}

/**
 * Loads [[SketchTable]]s, keeping the last few collected ones per index version.
 *
 * Planning asks for a table's [[attributes]] first (from the log entry, reading nothing) and
 * [[load]]s it only when a sketch can evaluate the query's filter: a query the index cannot help
 * never reads, nor collects, its sketch table.
 */
object SketchTableEvaluator extends Logging {

  /** Sketch tables up to this many bytes of Parquet are evaluated on the driver. */
  val MaxDriverBytes: Long = 32L * 1024 * 1024

  // With MaxDriverBytes, bounds what the driver holds (compressed size) to 16 x 32 MB.
  private val MaxCached = 16

  // An entry's identity (root, incarnation, id) names one sketch table for good; (root, id)
  // alone would not: a re-created index starts again at id 0.
  private val cache = new BoundedCache[(String, String, Long), SketchTable](MaxCached)
  private val attributeCache = new BoundedCache[(String, String, Long), Seq[Attribute]](1024)

  /**
   * The columns of `entry`'s sketch table, from the schema its log entry records: enough to
   * translate a filter, without reading the table.
   */
  def attributes(entry: LogEntry): Seq[Attribute] =
    attributeCache.getOrElseUpdate(attributeKey(entry), toAttributes(entry))

  // A hypothetical entry (what-if, the advisor) has no incarnation: its root, schema and creation
  // time name it, so a filter translated against its attributes binds to the table loaded for it.
  private def attributeKey(entry: LogEntry): (String, String, Long) =
    if (entry.isHypothetical) (entry.content.root, entry.index.schema, entry.timestamp) else entry.identity

  private def toAttributes(entry: LogEntry): Seq[Attribute] =
    DataSkippingIndexData.schemaOf(entry.index).map(f =>
      AttributeReference(f.name, f.dataType, f.nullable, f.metadata)())

  /** The sketch table of `entry`, from the cache when it was collected before. */
  def load(spark: SparkSession, entry: LogEntry): SketchTable = load(spark, entry, MaxDriverBytes)

  /** [[load]], collecting tables up to `maxDriverBytes` (tests compare both ways). */
  private[dataskipping] def load(spark: SparkSession, entry: LogEntry, maxDriverBytes: Long): SketchTable =
    if (entry.content.sizeInBytes > maxDriverBytes) {
      new SketchTable(entry, attributes(entry), None, DataSkippingIndexData.read(spark, entry))
    } else {
      val key = entry.identity
      cache.get(key).getOrElse {
        val df = DataSkippingIndexData.read(spark, entry)
        val rows = df.queryExecution.executedPlan.executeCollect()
        logDebug(s"Collected ${rows.length} sketch rows of index '${entry.name}' (log version ${entry.id}).")
        val loaded = new SketchTable(entry, attributes(entry), Some(rows), df)
        cache.put(key, loaded)
        loaded
      }
    }
}
