package io.hyperspace.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeReference, BindReferences, Expression}
import org.apache.spark.sql.functions.{col, count, lit, max, min}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.index.dataskipping.{FilterTranslator, MinMaxSketch, NullCountSketch, SketchInput}
import io.hyperspace.index.covering.{CoveringIndex, IndexColumn}
import io.hyperspace.log.{ColumnStats, ContentFile, FileStats, IndexDefinition, LogEntry}

/**
 * Per-file ranges of an index's indexed columns, kept in the log ([[FileStats]]) by the covering
 * and Z-order covering kinds: computed from the files just written, and used at query time to
 * keep only the files whose ranges can satisfy a filter. Skipping reuses the data skipping
 * index's min/max and null count translations ([[FilterTranslator]]), so every kind skips for the
 * same predicate shapes and keeps a file whenever it cannot tell.
 */
object FileRanges extends Logging {

  /** Longer values are not recorded: a truncated maximum would be wrong, and the log stays small. */
  private val MaxValueLength = 256

  /**
   * Whether ranges of a column of type `t` are recorded: types whose values are written as text
   * exactly and that Spark orders as their text is parsed back (strings only in the default
   * UTF-8 binary collation).
   */
  def supported(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | BooleanType |
        DateType | TimestampType | TimestampNTZType | _: DecimalType => true
    case s: StringType => s == StringType
    case _ => false
  }

  /** A value (Catalyst's internal form) of type `t` as the log writes it. */
  def encode(v: Any, t: DataType): String = t match {
    case _: DecimalType => v.asInstanceOf[Decimal].toJavaBigDecimal.toPlainString
    case _ => v.toString
  }

  /** The value (Catalyst's internal form) of type `t` that `text` (from [[encode]]) stands for. */
  def decode(text: String, t: DataType): Any = t match {
    case ByteType => text.toByte
    case ShortType => text.toShort
    case IntegerType | DateType => text.toInt
    case LongType | TimestampType | TimestampNTZType => text.toLong
    case FloatType => text.toFloat
    case DoubleType => text.toDouble
    case BooleanType => text.toBoolean
    case d: DecimalType => Decimal(BigDecimal(text), d.precision, d.scale)
    case _: StringType => UTF8String.fromString(text)
    case other => throw new IllegalArgumentException(s"no ranges are recorded for type $other")
  }

  /**
   * `files` (just written into `dataPath`, holding the index's stored `schema`) with the ranges of
   * `columns` (stored names) in each: from the Parquet footers when they tell every file's range
   * of every column exactly ([[ParquetFooterRanges]]), else read back from the files in one
   * aggregation. The footers cost a few reads of metadata; the aggregation is a job reading the
   * columns (about a tenth of a covering index's build at TPC-H SF1).
   */
  def describe(
      spark: SparkSession,
      schema: StructType,
      columns: Seq[String],
      dataPath: Path,
      files: Seq[ContentFile]): Seq[ContentFile] = {
    val ranged = columns.filter(c => supported(schema(c).dataType))
    val fromFooters = if (ranged.isEmpty) None
    else ParquetFooterRanges.read(spark.sessionState.newHadoopConf(), schema, ranged, dataPath, files)
    val stats = fromFooters.getOrElse(aggregated(spark, schema, ranged, dataPath, files))
    files.map(f => f.copy(stats = Some(stats(f.name))))
  }

  /** Per file name, its row count and the values of `ranged` it holds, read by one aggregation. */
  private[hyperspace] def aggregated(
      spark: SparkSession,
      schema: StructType,
      ranged: Seq[String],
      dataPath: Path,
      files: Seq[ContentFile]): Map[String, FileStats] = {
    val types = ranged.map(schema(_).dataType)
    val paths = files.map(f => new Path(dataPath, f.name).toString)
    val aggregates = count(lit(1)) +: ranged.flatMap { c =>
      val q = col(IndexColumn.quote(c))
      Seq(min(q), max(q), count(q))
    }
    val data = spark.read.schema(schema).parquet(paths: _*)
    val perFile = data.groupBy(col("_metadata.file_name")).agg(aggregates.head, aggregates.tail: _*)
    val rows = perFile.queryExecution.toRdd.map(_.copy()).collect()
    val byName = rows.map { r =>
      val rowCount = r.getLong(1)
      val stats = ranged.indices.flatMap { i =>
        val t = types(i)
        columnStats(r.get(2 + 3 * i, t), r.get(3 + 3 * i, t), rowCount - r.getLong(4 + 3 * i), t).map(ranged(i) -> _)
      }
      r.getUTF8String(0).toString -> FileStats(rowCount, stats.toMap)
    }.toMap
    // A file with no rows has no group; its columns have no values at all.
    files.map(f =>
      f.name -> byName.getOrElse(f.name, FileStats(0L, ranged.map(c => c -> ColumnStats(None, None, 0L)).toMap)))
      .toMap
  }

  /**
   * A column's range in a file, from its smallest and largest non-null value (Catalyst's internal
   * form, null when every value is NULL) and its NULL count; None when a value cannot be written
   * exactly: its text does not parse back to itself (a string that is not valid UTF-8) or is
   * long. The file is then read for every filter on the column.
   */
  private[hyperspace] def columnStats(lo: Any, hi: Any, nulls: Long, t: DataType): Option[ColumnStats] = {
    val text = Seq(lo, hi).map(v => Option(v).map(encode(_, t)))
    val exact = Seq(lo, hi).zip(text).forall { case (v, s) =>
      s.forall(x => x.length <= MaxValueLength && sameValue(decode(x, t), v, t))
    }
    if (exact) Some(ColumnStats(text(0), text(1), nulls)) else None
  }

  private def sameValue(a: Any, b: Any, t: DataType): Boolean = t match {
    case FloatType | DoubleType => a.toString == b.toString // NaN is not == itself
    case _ => a == b
  }

  /**
   * The files of `entry` that may hold rows satisfying all of `filters` (a conjunction over the
   * attributes of a scan of the index, or of its source: columns are matched by name, as
   * [[io.hyperspace.index.covering.IndexScan.scanFor]] matches them). A file is left out only when
   * its ranges prove that no row matches; a file without ranges is always kept.
   */
  def filesToRead(entry: LogEntry, columns: Seq[String], filters: Seq[Expression]): Seq[ContentFile] =
    filesToRead(entry.name, entry.content.files, entry.index, columns, filters)

  /** Of `files` of index `indexName` (defined as `definition`), those [[filesToRead]] keeps. */
  def filesToRead(indexName: String, files: Seq[ContentFile], definition: IndexDefinition, columns: Seq[String],
      filters: Seq[Expression]): Seq[ContentFile] = {
    if (filters.isEmpty || files.isEmpty || files.forall(_.stats.isEmpty)) return files
    val schema = CoveringIndex.storedSchema(definition)
    val refs = filters.flatMap(_.references).distinct
    // One set of per-file inputs for each indexed column the filters reference.
    val targets: Seq[(String, Attribute)] = columns.flatMap { c =>
      refs.collectFirst {
        case a: Attribute if a.name.equalsIgnoreCase(c) && a.dataType == schema(c).dataType => c -> a
      }
    }.filter { case (c, _) => supported(schema(c).dataType) }
    if (targets.isEmpty) return files
    val rowCount = AttributeReference("rows", LongType, nullable = false)()
    val inputs = targets.map { case (c, a) =>
      val t = schema(c).dataType
      (c, AttributeReference(s"min_$c", t)(), AttributeReference(s"max_$c", t)(),
        AttributeReference(s"nulls_$c", LongType, nullable = false)(), a)
    }
    val bounds = inputs.flatMap { case (c, lo, hi, nulls, a) =>
      Seq(
        FilterTranslator.Bound(MinMaxSketch(c), new SketchInput(a, Seq(lo, hi), rowCount)),
        FilterTranslator.Bound(NullCountSketch(c), new SketchInput(a, Seq(nulls), rowCount)))
    }
    val condition = try FilterTranslator.translate(filters.reduce(And), bounds)
    catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace keeps every file of index '$indexName': its filter could not be translated.", e)
        None
    }
    condition match {
      case None => files
      case Some(cond) =>
        val inputAttrs = rowCount +: inputs.flatMap { case (_, lo, hi, nulls, _) => Seq(lo, hi, nulls) }
        val bound = try Some(BindReferences.bindReference(cond, inputAttrs))
        catch { case NonFatal(_) => None }
        bound.map(b => files.filter(f => mayMatch(f, b, inputs.map(_._1), schema))).getOrElse(files)
    }
  }

  // Kept unless the condition is FALSE on the file's ranges; NULL, errors and missing ranges keep it.
  private def mayMatch(file: ContentFile, condition: Expression, columns: Seq[String], schema: StructType): Boolean =
    file.stats.forall { stats =>
      val perColumn = columns.map(stats.columns.get)
      perColumn.exists(_.isEmpty) || {
        try {
          val values = stats.rowCount +: columns.zip(perColumn.flatten).flatMap { case (c, s) =>
            val t = schema(c).dataType
            Seq(s.min.map(decode(_, t)).orNull, s.max.map(decode(_, t)).orNull, s.nullCount)
          }
          condition.eval(InternalRow.fromSeq(values)) != false
        } catch {
          case NonFatal(_) => true
        }
      }
    }

}
