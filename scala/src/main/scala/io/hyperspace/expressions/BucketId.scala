package io.hyperspace.expressions

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FunctionBuilder
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, Literal, Murmur3Hash, Pmod}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{DataType, IntegerType}

import io.hyperspace.HyperspaceException

/**
 * The bucket a row falls into when hash-partitioned into `numBuckets` on `children`: exactly the
 * function Spark's bucketed writer and `HashPartitioning` use (`pmod(murmur3(cols, 42), n)`), so
 * the result names the index bucket file that holds a key.
 *
 * Evaluated by this class (not rewritten into built-ins), so a plan that uses it needs the
 * Hyperspace jar on every executor — which is what the cluster smoke test proves.
 */
case class BucketId(numBuckets: Int, children: Seq[Expression])
  extends Expression with CodegenFallback {

  require(numBuckets > 0, "numBuckets must be positive")

  @transient private lazy val bucketExpression: Expression =
    Pmod(new Murmur3Hash(children), Literal(numBuckets))

  override def nullable: Boolean = false
  override def dataType: DataType = IntegerType
  override def prettyName: String = BucketId.name

  override def eval(input: InternalRow): Any = bucketExpression.eval(input)

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): BucketId =
    copy(children = newChildren)
}

object BucketId {
  /** The SQL name under which the extension registers the function. */
  val name: String = "hyperspace_bucket_id"

  /** `hyperspace_bucket_id(numBuckets, col1, col2, ...)`. */
  val builder: FunctionBuilder = { args =>
    if (args.length < 2) {
      throw new HyperspaceException(
        s"$name expects a bucket count and at least one column, e.g. $name(200, key); " +
          s"got ${args.length} argument(s).")
    }
    val n = args.head match {
      case lit @ Literal(_, IntegerType) if lit.value != null => lit.value.asInstanceOf[Int]
      case other =>
        throw new HyperspaceException(
          s"The first argument of $name must be an integer literal bucket count; got ${other.sql}.")
    }
    if (n <= 0) {
      throw new HyperspaceException(s"The bucket count of $name must be positive; got $n.")
    }
    BucketId(n, args.tail)
  }

  /** Registration triple for `SparkSessionExtensions.injectFunction`. */
  val registration: (FunctionIdentifier, ExpressionInfo, FunctionBuilder) = (
    FunctionIdentifier(name),
    new ExpressionInfo(classOf[BucketId].getName, null, name,
      s"$name(numBuckets, col1, ...) - The Hyperspace/Spark bucket (0 until numBuckets) of the " +
        "columns' values, as Spark's bucketed writer computes it.",
      "", "", "", "misc_funcs", "", "", "built-in"),
    builder)
}
