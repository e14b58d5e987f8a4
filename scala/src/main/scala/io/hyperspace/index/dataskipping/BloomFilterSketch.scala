package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions.{Expression, GetStructField, Literal}
import org.apache.spark.sql.types.DataType

import io.hyperspace.HyperspaceException
import io.hyperspace.index.dataskipping.expressions.{BloomFilterMightContainAny, DistinctSketchAggregate, ValueHash}

/**
 * A Bloom filter of the non-null values of `expr` in each file, sized for that file's own
 * distinct count at false positive probability `fpp`: a file with 10 distinct values gets a
 * filter of a few bytes, one with a million about 2 MB at the default `fpp`.
 *
 * Serves `=`, `<=>` (non-null literal) and `IN` (also through injective casts such as int to
 * bigint).
 *
 * @param fpp              the false positive probability, in (0, 1)
 * @param expectedDistinct the largest distinct count per file expected; it only matters for
 *                         files with more than 65,536 distinct values, whose filter is built in
 *                         a bitmap sized for this many (default 1,000,000) before shrinking to
 *                         the file's estimated count. Files with more distinct values than this
 *                         still work, with a higher false positive rate.
 */
case class BloomFilterSketch(expr: String, fpp: Double = 0.01, expectedDistinct: Option[Long] = None)
  extends Sketch {

  BloomFilterSketch.check(describe, fpp, expectedDistinct)

  override def kind: String = BloomFilterSketch.Kind
  override def params: Map[String, String] =
    Map("fpp" -> fpp.toString) ++ expectedDistinct.map(n => "expectedDistinct" -> n.toString)
  override def columnNames: Seq[String] = Seq("bloom")
  override def unsupportedType(dataType: DataType): Option[String] = SketchTypes.requireHashable(dataType)

  override def aggregates(value: Expression): Seq[Expression] = Seq(GetStructField(
      DistinctSketchAggregate(value, maxValues = 0, fpp, BloomFilterSketch.capacity(expectedDistinct)), 1))

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] =
    input.equalityValues(predicate).map(values =>
      BloomFilterSketch.mightContain(input.column(0), values, input.value.dataType))
}

object BloomFilterSketch {
  /** The kind name in the index log. */
  val Kind = "BloomFilter"
  /** The distinct count a large file's bitmap is sized for unless `expectedDistinct` is given. */
  val DefaultCapacity: Long = 1000000L
  private val MaxCapacity: Long = 100000000L

  private[dataskipping] def capacity(expected: Option[Long]): Long = expected.getOrElse(DefaultCapacity)

  private[dataskipping] def check(what: String, fpp: Double, expectedDistinct: Option[Long]): Unit = {
    if (!(fpp > 0.0 && fpp < 1.0)) {
      throw new HyperspaceException(s"Sketch $what: fpp must be between 0 and 1 (exclusive); got $fpp.")
    }
    expectedDistinct.foreach { n =>
      if (n < 1 || n > MaxCapacity) {
        throw new HyperspaceException(
          s"Sketch $what: expectedDistinct must be between 1 and $MaxCapacity; got $n.")
      }
    }
  }

  /** Whether the filter in `bloom` may contain any of `values` (FALSE for none). */
  private[dataskipping] def mightContain(bloom: Expression, values: Seq[Literal], dataType: DataType): Expression =
    if (values.isEmpty) Literal.FalseLiteral
    else BloomFilterMightContainAny(bloom, values.map(v => ValueHash(v.value, dataType)).distinct)
}
