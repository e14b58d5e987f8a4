package io.hyperspace.index.dataskipping

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.BoundReference
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.index.dataskipping.expressions._

/** The Bloom filter and the distinct-values aggregate on their own, without Spark jobs. */
class BloomFilterSuite extends AnyFunSuite {

  private def h(i: Long): Long = ValueHash(i, LongType)

  test("no false negatives; false positives near the requested rate") {
    val bits = BloomFilterBits.empty(BloomFilterBits.optimalHashes(0.01), BloomFilterBits.optimalBits(10000, 0.01))
    (0L until 10000L).foreach(i => bits.put(h(i)))
    assert((0L until 10000L).forall(i => bits.mightContain(h(i))))
    val fp = (10000L until 110000L).count(i => bits.mightContain(h(i)))
    assert(fp < 100000 * 0.02, s"$fp false positives in 100000")
    assert(fp > 0, "a 1% filter over 100000 absent values has some false positives")
  }

  test("folding keeps every recorded value and matches a filter built at the smaller size") {
    val big = BloomFilterBits.empty(7, 1L << 16)
    val small = BloomFilterBits.empty(7, 1L << 12)
    (0L until 300L).foreach { i => big.put(h(i)); small.put(h(i)) }
    val folded = big.foldTo(1L << 12)
    assert(folded.numBits == (1L << 12))
    assert(folded.words.sameElements(small.words))
    assert((0L until 300L).forall(i => folded.mightContain(h(i))))
  }

  test("the distinct count is estimated from the set bits") {
    val bits = BloomFilterBits.empty(7, 1L << 20)
    (0L until 50000L).foreach(i => bits.put(h(i)))
    val est = bits.estimatedDistinct
    assert(math.abs(est - 50000) < 2500, s"estimated $est")
  }

  test("serialized form round-trips and is probed in place") {
    val bits = BloomFilterBits.empty(5, 1000)
    Seq(1L, 2L, 3L).foreach(i => bits.put(h(i)))
    val bytes = bits.toBytes
    val back = BloomFilterBits.fromBytes(bytes)
    assert(back.numBits == bits.numBits && back.numHashes == 5 && back.words.sameElements(bits.words))
    assert(BloomFilterBits.mightContainAny(bytes, Array(h(99), h(2))))
    assert(!BloomFilterBits.mightContainAny(bytes, Array.empty))
    bytes(0) = 9
    intercept[IllegalStateException](BloomFilterBits.mightContainAny(bytes, Array(h(1))))
  }

  test("-0.0 and 0.0, and all NaNs, hash alike") {
    assert(ValueHash(-0.0d, DoubleType) == ValueHash(0.0d, DoubleType))
    assert(ValueHash(java.lang.Double.longBitsToDouble(0x7ff8000000000001L), DoubleType) ==
      ValueHash(Double.NaN, DoubleType))
    assert(ValueHash(-0.0f, FloatType) == ValueHash(0.0f, FloatType))
  }

  private def aggregate(maxValues: Int, dt: DataType = LongType) =
    DistinctSketchAggregate(BoundReference(0, dt, nullable = true), maxValues, 0.01, 1000000L)

  // Feeds `values` split over `parts` partial buffers, ships them serialized, merges, evaluates.
  private def run(agg: DistinctSketchAggregate, values: Seq[Any], parts: Int): InternalRow = {
    val partials = values.grouped(math.max(1, (values.size + parts - 1) / parts)).toSeq.map { chunk =>
      val buf = agg.createAggregationBuffer()
      chunk.foreach(v => agg.update(buf, InternalRow(v)))
      agg.serialize(buf)
    }
    val merged = partials.map(agg.deserialize).foldLeft(agg.createAggregationBuffer())(agg.merge)
    agg.eval(merged).asInstanceOf[InternalRow]
  }

  test("a value list while distinct values are few, sorted with NULL first, across merges") {
    val out = run(aggregate(10), Seq[Any](5L, null, 3L, 5L, 1L, 3L), parts = 3)
    val values = out.getArray(0).toSeq[Any](LongType)
    assert(values == Seq(null, 1L, 3L, 5L))
    assert(out.isNullAt(1))
  }

  test("strings read from reused rows are copied") {
    val agg = aggregate(10, StringType)
    val buf = agg.createAggregationBuffer()
    val bytes = "aaa".getBytes("UTF-8")
    val s = UTF8String.fromBytes(bytes)
    agg.update(buf, InternalRow(s))
    bytes(0) = 'b'.toByte // the reader reuses its buffer for the next row
    agg.update(buf, InternalRow(UTF8String.fromBytes(bytes)))
    val values = agg.eval(buf).asInstanceOf[InternalRow].getArray(0).toSeq[UTF8String](StringType).map(_.toString)
    assert(values == Seq("aaa", "baa"))
  }

  test("above maxValues: a Bloom filter sized for the file's distinct count") {
    def bloomOf(values: Seq[Long]): BloomFilterBits =
      BloomFilterBits.fromBytes(run(aggregate(10), values, parts = 4).getBinary(1))
    val small = bloomOf((1L to 100L) ++ (1L to 100L))
    val large = bloomOf(1L to 20000L)
    assert(small.numBits == BloomFilterBits.empty(1, BloomFilterBits.optimalBits(100, 0.01)).numBits)
    assert(large.numBits > 100 * small.numBits)
    assert((1L to 100L).forall(i => small.mightContain(h(i))))
    assert((1L to 20000L).forall(i => large.mightContain(h(i))))
  }

  test("past the exact-hash limit: a bitmap folded down to the estimated distinct count") {
    val n = DistinctSketchAggregate.HashLimit * 3
    val out = run(aggregate(0), (0L until n.toLong).map(identity), parts = 5)
    assert(out.isNullAt(0))
    val bloom = BloomFilterBits.fromBytes(out.getBinary(1))
    assert((0L until n.toLong).forall(i => bloom.mightContain(h(i))))
    val needed = BloomFilterBits.optimalBits(n, 0.01)
    assert(bloom.numBits >= needed && bloom.numBits < 2 * needed + 64,
      s"${bloom.numBits} bits for $n values (optimal $needed)")
    val fp = (n.toLong until n.toLong + 100000L).count(i => bloom.mightContain(h(i)))
    assert(fp < 100000 * 0.02, s"$fp false positives in 100000")
  }

  test("merging a value list, exact hashes and a bitmap") {
    val agg = aggregate(5)
    def buffer(values: Seq[Long]) = {
      val b = agg.createAggregationBuffer()
      values.foreach(v => agg.update(b, InternalRow(v)))
      agg.deserialize(agg.serialize(b))
    }
    val list = buffer(Seq(1L, 2L))
    val hashes = buffer(100L to 200L)
    val bitmap = buffer(1000L until 1000L + DistinctSketchAggregate.HashLimit + 10)
    val merged = agg.merge(agg.merge(list, hashes), bitmap)
    val bloom = BloomFilterBits.fromBytes(agg.eval(merged).asInstanceOf[InternalRow].getBinary(1))
    assert((Seq(1L, 2L) ++ (100L to 200L) ++ (1000L until 1000L + DistinctSketchAggregate.HashLimit + 10))
        .forall(i => bloom.mightContain(h(i))))
  }

  test("an all-NULL group has a list of one NULL, or an empty filter without a list") {
    assert(run(aggregate(3), Seq(null, null), 1).getArray(0).toSeq[Any](LongType) == Seq(null))
    val bloom = BloomFilterBits.fromBytes(run(aggregate(0), Seq(null, null), 1).getBinary(1))
    assert(!bloom.mightContain(h(0L)) && bloom.numBits == 64)
  }
}
