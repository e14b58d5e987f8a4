package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.CollectSet
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.HyperspaceException

/**
 * The distinct first (or last) `length` characters of the string values of an expression per
 * file; values shorter than `length` are kept whole. Sizes grow with the number of distinct
 * prefixes (suffixes) per file, so choose `length` for a column whose values share few.
 */
sealed abstract class AffixSketch extends Sketch {
  def length: Int
  protected def fromEnd: Boolean

  // Called from the subclasses' bodies: here their fields are not initialized yet.
  protected def checkLength(): Unit = if (length < 1) {
    throw new HyperspaceException(s"Sketch $describe: length must be at least 1; got $length.")
  }

  override def params: Map[String, String] = Map("length" -> length.toString)
  override def unsupportedType(dataType: DataType): Option[String] = SketchTypes.requireString(dataType)

  /** The first (last) `length` characters of `s`, computed the same way at build and query time. */
  private def affix(s: Expression): Expression =
    if (fromEnd) Reverse(Substring(Reverse(s), Literal(1), Literal(length)))
    else Substring(s, Literal(1), Literal(length))

  override def aggregates(value: Expression): Seq[Expression] =
    Seq(SortArray(CollectSet(affix(value)), Literal.TrueLiteral))

  override def translate(predicate: Expression, input: SketchInput): Option[Expression] = {
    val set = input.column(0)
    def affixOf(s: UTF8String): UTF8String = affix(Literal(s)).eval().asInstanceOf[UTF8String]
    val pattern = if (fromEnd) input.stringSuffix(predicate) else input.stringPrefix(predicate)
    input.equalityValues(predicate).map { values =>
      if (values.isEmpty) Literal.FalseLiteral
      else {
        val affixes = values.map(v => affixOf(v.value.asInstanceOf[UTF8String])).distinct
        ArraysOverlap(set, Literal(new GenericArrayData(affixes.toArray[Any]), ArrayType(StringType)))
      }
    }.orElse(pattern.map { p =>
      if (p.numChars() >= length) {
        // A string with this start (end) has exactly this affix.
        ArrayContains(set, Literal(affixOf(p)))
      } else {
        // A shorter pattern: some recorded affix must itself start (end) with it.
        val q = NamedLambdaVariable("q", StringType, nullable = false)
        val test = if (fromEnd) EndsWith(q, Literal(p)) else StartsWith(q, Literal(p))
        ArrayExists(set, LambdaFunction(test, Seq(q)), followThreeValuedLogic = true)
      }
    })
  }
}

/**
 * The distinct first `length` characters of `expr`'s values per file. Serves `startswith`,
 * `LIKE 'abc%'` (any pattern with a literal start), `=` and `IN` on strings.
 */
case class PrefixSketch(expr: String, length: Int) extends AffixSketch {
  checkLength()
  override protected def fromEnd: Boolean = false
  override def kind: String = PrefixSketch.Kind
  override def columnNames: Seq[String] = Seq("prefixes")
}

object PrefixSketch {
  /** The kind name in the index log. */
  val Kind = "Prefix"
}

/**
 * The distinct last `length` characters of `expr`'s values per file. Serves `endswith`,
 * `LIKE '%xyz'` (any pattern with a literal end), `=` and `IN` on strings.
 */
case class SuffixSketch(expr: String, length: Int) extends AffixSketch {
  checkLength()
  override protected def fromEnd: Boolean = true
  override def kind: String = SuffixSketch.Kind
  override def columnNames: Seq[String] = Seq("suffixes")
}

object SuffixSketch {
  /** The kind name in the index log. */
  val Kind = "Suffix"
}
