package io.hyperspace.index.dataskipping.expressions

import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{BooleanType, DataType}

/**
 * `bloom_might_contain_any(bloom, hashes)`: whether a Bloom filter sketch (the bytes of a
 * [[BloomFilterBits]]) may contain any of the given value hashes. Null when the sketch is null.
 * The hashes are computed on the driver from the query's literals with [[ValueHash]].
 */
case class BloomFilterMightContainAny(child: Expression, hashes: Seq[Long])
  extends UnaryExpression with CodegenFallback {

  @transient private lazy val hashArray: Array[Long] = hashes.toArray

  override def dataType: DataType = BooleanType
  override def prettyName: String = "bloom_might_contain_any"

  override protected def nullSafeEval(input: Any): Any =
    BloomFilterBits.mightContainAny(input.asInstanceOf[Array[Byte]], hashArray)

  override def toString: String = s"$prettyName($child, ${hashes.size} values)"

  override protected def withNewChildInternal(newChild: Expression): BloomFilterMightContainAny =
    copy(child = newChild)
}
