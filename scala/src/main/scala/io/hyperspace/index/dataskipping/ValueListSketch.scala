package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types.DataType

import io.hyperspace.HyperspaceException
import io.hyperspace.index.dataskipping.expressions.DistinctSketchAggregate

/**
 * The distinct values of `expr` in each file (NULL included when present), or — for files with
 * more than `maxValues` of them — a Bloom filter of the values sized for the file at `fpp`: the
 * hybrid index of Extensible Data Skipping §IV-E, exact for low-cardinality files and bounded
 * for the others.
 *
 * With a value list, any predicate that depends on the row only through `expr` is evaluated on
 * each distinct value (`=`, `IN`, `!=`, `NOT IN`, `LIKE`, ranges, `IS NULL`, function calls
 * over `expr`, ...): the file is skipped when no value makes it TRUE. With the Bloom filter
 * fallback, `=` and `IN` are served.
 *
 * @param maxValues the largest list kept per file, >= 1
 * @param fpp       false positive probability of the fallback Bloom filter, in (0, 1)
 */
case class ValueListSketch(expr: String, maxValues: Int = ValueListSketch.DefaultMaxValues, fpp: Double = 0.01)
  extends Sketch {

  if (maxValues < 1) {
    throw new HyperspaceException(s"Sketch $describe: maxValues must be at least 1; got $maxValues.")
  }
  BloomFilterSketch.check(describe, fpp, None)

  override def kind: String = ValueListSketch.Kind
  override def params: Map[String, String] = Map("maxValues" -> maxValues.toString, "fpp" -> fpp.toString)
  override def columnNames: Seq[String] = Seq("values", "bloom")
  override def unsupportedType(dataType: DataType): Option[String] = SketchTypes.requireHashable(dataType)

  override def aggregates(value: Expression): Seq[Expression] = {
    val agg = DistinctSketchAggregate(value, maxValues, fpp, BloomFilterSketch.DefaultCapacity)
    Seq(GetStructField(agg, 0), GetStructField(agg, 1))
  }

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] = {
    val (values, bloom) = (input.column(0), input.column(1))
    val v = NamedLambdaVariable("v", input.value.dataType, nullable = true)
    val onList = input.substitute(predicate, v).map { body =>
      Coalesce(Seq(ArrayExists(values, LambdaFunction(body, Seq(v)), followThreeValuedLogic = true),
          Literal.FalseLiteral))
    }
    val onBloom = input.equalityValues(predicate)
      .map(vs => BloomFilterSketch.mightContain(bloom, vs, input.value.dataType))
    if (onList.isEmpty && onBloom.isEmpty) None
    else Some(If(IsNotNull(values), onList.getOrElse(Literal.TrueLiteral), onBloom.getOrElse(Literal.TrueLiteral)))
  }
}

object ValueListSketch {
  /** The kind name in the index log. */
  val Kind = "ValueList"
  /** The default largest list per file. */
  val DefaultMaxValues = 1000
}
