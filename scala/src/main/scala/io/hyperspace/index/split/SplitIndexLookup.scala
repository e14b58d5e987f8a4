package io.hyperspace.index.split

import java.io.Closeable

import scala.collection.mutable.ArrayBuffer

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BindReferences, Expression, Predicate}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.datasources.FileFormat
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.hyperspace.SparkInternals
import org.apache.spark.sql.types.{LongType, StructType}

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.{DriverParquetReader, StoredSchemas}
import io.hyperspace.index.covering.{CoveringIndex, IndexFileIndex, IndexHadoopFsRelation}
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileListing

/**
 * A split index's locations for a filter on its keys, read in the driver straight from the index
 * files, without planning a query of its own: the seek's lookup ran a nested Catalyst query over
 * the index (analysis, the optimizer with Hyperspace's own rules, physical planning), which was
 * most of a point lookup's planning time (benchmarks/results/archive/h-19-direct.notes.md).
 *
 * The files are those of the log (no listing) that the filter's buckets and the files' logged key
 * ranges leave ([[IndexFileIndex.filesToRead]]); each is read by Spark's own Parquet reader with
 * the filter pushed down, so row group statistics and the column and offset indexes skip all but
 * the pages that can hold the keys (index files are sorted by key). Rows read are then checked
 * against the filter with Spark's own predicate evaluation: the result is exact for every filter
 * shape, whatever Parquet could or could not use. A missing or corrupt index file fails the read
 * (the index scan options do not ignore either).
 */
object SplitIndexLookup {

  /**
   * The (lineage id, then the index's location columns `locationColumns` as longs) of the rows of
   * `entry` satisfying all of `onKeys` (conjuncts over its key columns, named as the source names
   * them), at most `limit` + 1 of them; None when the direct read does not apply — a condition on a
   * column it cannot map onto the index's, or more index bytes to read than
   * `spark.hyperspace.index.driverRead.maxBytes` (then a Spark job reads them).
   */
  def locate(
      spark: SparkSession,
      entry: LogEntry,
      onKeys: Seq[Expression],
      locationColumns: Seq[String],
      limit: Int): Option[Seq[Array[Long]]] = {
    val located = ArrayBuffer.empty[Array[Long]]
    val read = foreachMatch(spark, entry, SplitIndex.keyColumns(entry.index), onKeys, locationColumns) { row =>
      located += row
      located.size <= limit
    }
    if (read) Some(located.toSeq) else None
  }

  /**
   * Reads the rows of index `entry` (a split or covering index, stored with the lineage column)
   * satisfying all of `onKeys` (conjuncts over its columns `keys`, named as the source names them)
   * and gives `visit` the lineage id, then `columns` as longs, of each, until it returns false;
   * false when the direct read does not apply — a condition on a column it cannot map onto the
   * index's, or more index bytes to read than `spark.hyperspace.index.driverRead.maxBytes`.
   * Also the covering index's join probe ([[io.hyperspace.rules.CoveringJoinProbe]]).
   */
  def foreachMatch(
      spark: SparkSession,
      entry: LogEntry,
      keys: Seq[String],
      onKeys: Seq[Expression],
      columns: Seq[String])(visit: Array[Long] => Boolean): Boolean = {
    val stored = StoredSchemas.parse(entry.index.schema)
    val resolver = spark.sessionState.conf.resolver
    def field(name: String) = stored.fields.find(f => resolver(f.name, name))
    val wanted = (keys ++ (CoveringIndex.LineageColumn +: columns)).map(field)
    if (wanted.exists(_.isEmpty)) return false
    val required = StructType(wanted.flatten)
    val attrs = DataTypeUtils.toAttributes(required)
    val unmapped = onKeys.exists(_.references.exists(a =>
        !attrs.exists(i => resolver(i.name, a.name) && i.dataType == a.dataType)))
    if (unmapped) return false
    val onIndex = onKeys.map(_.transform {
      case a: AttributeReference => attrs.find(i => resolver(i.name, a.name)).get
    })
    val files = IndexFileIndex.filesToRead(entry, onKeys)
    if (files.map(_.size).sum > HyperspaceConf.driverReadMaxBytes(spark)) return false
    val options = IndexHadoopFsRelation.lookupOptions + (FileFormat.OPTION_RETURNING_BATCH -> "false")
    val filters = onIndex.flatMap(SparkInternals.sourceFilter)
    val hadoopConf =
      DriverParquetReader.jobConf(spark, options, files.headOption.map(f => new Path(entry.content.pathOf(f))))
    val readFile = DriverParquetReader(spark, new StructType(), required, filters, options, hadoopConf)
      .getOrElse(new ParquetFileFormat().buildReaderWithPartitionValues(
          spark, stored, new StructType(), required, filters, options, hadoopConf))
    // Interpreted: a lookup checks a few hundred rows, and a generated predicate inlines the key,
    // so each new key compiled a class (a fifth of the lookup's time, measured).
    val predicate = Predicate.createInterpreted(BindReferences.bindReference(onIndex.reduce(And), attrs))
    predicate.initialize(0)
    val out = keys.size until required.size
    val opened = ArrayBuffer.empty[Iterator[InternalRow]]
    try {
      val rows = files.iterator.flatMap { f =>
        val status = new FileStatus(f.size, false, 1, 128L * 1024 * 1024, f.modificationTime,
          new Path(entry.content.pathOf(f)))
        val it = readFile(FileListing.partitionedFile(status))
        opened += it
        it
      }
      var more = true
      while (more && rows.hasNext) {
        val row = rows.next()
        if (predicate.eval(row)) {
          more =
            visit(out.map(i => if (required(i).dataType == LongType) row.getLong(i) else row.getInt(i).toLong).toArray)
        }
      }
    } finally opened.foreach {
        case c: Closeable => c.close()
        // The row-based reader closes its file at its end (or its task's, and the driver runs
        // none): a read stopped at the limit runs it to its end rather than leave it open.
        case rest => rest.foreach(_ => ())
      }
    true
  }
}
