package io.hyperspace.indexed

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.indexed.JavaSerialization.serializedCopy

/** The partition structure on its own: no Spark session, rows built by hand. */
class IndexedPartitionSuite extends AnyFunSuite {

  private val schema = StructType(Seq(
      StructField("k", LongType), StructField("v", StringType), StructField("n", IntegerType)))

  private def row(k: java.lang.Long, v: String, n: Int): InternalRow =
    new GenericInternalRow(Array[Any](k, if (v == null) null else UTF8String.fromString(v), n))

  private def decode(r: UnsafeRow): (Option[Long], String, Int) =
    (if (r.isNullAt(0)) None else Some(r.getLong(0)),
      if (r.isNullAt(1)) null else r.getUTF8String(1).toString, r.getInt(2))

  private def lookup(p: IndexedPartition, k: Any): Seq[(Option[Long], String, Int)] =
    p.lookup(p.codec.keyOfValue(k)).map(decode).toSeq

  private def scan(p: IndexedPartition): Seq[(Option[Long], String, Int)] =
    p.iterator.map(decode).toSeq

  private def build(rows: Seq[InternalRow], batchSize: Int = 4 << 20): IndexedPartition =
    IndexedPartition.build(schema, 0, batchSize, rows.iterator)

  test("equal keys chain newest first; every row is found by a scan in insertion order") {
    val rows = Seq(row(1L, "a", 1), row(2L, "b", 2), row(1L, "c", 3), row(1L, "d", 4))
    val p = build(rows)
    assert(lookup(p, 1L).map(_._3) == Seq(4, 3, 1))
    assert(lookup(p, 2L).map(_._3) == Seq(2))
    assert(lookup(p, 3L).isEmpty)
    assert(scan(p).map(_._3) == Seq(1, 2, 3, 4))
    assert(p.rowCount == 4 && p.keyCount == 2)
  }

  test("keys with equal hash codes are told apart by value") {
    // Long.hashCode folds the halves together: all these hash to 0.
    val colliding = (0 until 50).map(i => (i.toLong << 32) | i.toLong)
    assert(colliding.map(java.lang.Long.valueOf(_).hashCode()).distinct == Seq(0))
    val p = build(colliding.zipWithIndex.flatMap { case (k, i) =>
      Seq(row(k, s"x$i", i), row(k, s"y$i", i + 1000))
    })
    colliding.zipWithIndex.foreach { case (k, i) =>
      assert(lookup(p, k).map(_._3).sorted == Seq(i, i + 1000), s"key $k")
    }
    assert(lookup(p, 1L << 32).isEmpty)
  }

  test("a null key is stored and scanned but matches nothing") {
    val p = build(Seq(row(null, "n1", 1), row(5L, "five", 2), row(null, "n2", 3)))
    assert(lookup(p, null).isEmpty)
    assert(p.pointers(null).isEmpty)
    assert(scan(p).map(_._3) == Seq(1, 2, 3))
    assert(p.keyCount == 1)
  }

  test("rows larger than a batch get a batch of their own") {
    val big = "x" * 20000
    val rows = Seq(row(1L, "small", 1), row(2L, big, 2), row(1L, big + "y", 3), row(3L, "s", 4))
    val p = build(rows, batchSize = 4096)
    assert(lookup(p, 2L).map(_._2) == Seq(big))
    assert(lookup(p, 1L).map(_._2) == Seq(big + "y", "small"))
    assert(scan(p).map(_._3) == Seq(1, 2, 3, 4))
    assert(p.totalBatchBytes >= 2 * 20000)
  }

  test("batches grow from 4 KB to the batch size and rows never straddle batches") {
    val rows = (0 until 20000).map(i => row(i.toLong % 997, s"value-$i", i))
    val p = build(rows, batchSize = 64 * 1024)
    assert(scan(p).map(_._3) == (0 until 20000))
    (0 until 997).foreach { k =>
      assert(lookup(p, k.toLong).map(_._3) == (k until 20000 by 997).reverse)
    }
    // Geometric growth keeps the waste below one batch size.
    assert(p.totalBatchBytes - p.usedBatchBytes < 64 * 1024)
  }

  test("appends make new versions; each version keeps answering with its own rows") {
    val v0 = build(Seq(row(1L, "a", 0), row(2L, "b", 0)))
    val versions = (1 to 40).scanLeft(v0) { (parent, i) =>
      parent.append(Iterator(row(1L, s"a$i", i), row(100L + i, s"new$i", i)))
    }
    versions.zipWithIndex.foreach { case (v, i) =>
      assert(lookup(v, 1L).map(_._3) == (i to 0 by -1), s"version $i")
      assert(lookup(v, 2L).map(_._3) == Seq(0))
      (1 to 40).foreach { j =>
        assert(lookup(v, 100L + j).nonEmpty == (j <= i), s"version $i key ${100 + j}")
      }
      assert(v.rowCount == 2 + 2 * i)
      assert(scan(v).size == 2 + 2 * i)
    }
    // A child allocates only its own batches.
    assert(versions(5).ownBatchBytes < versions(5).totalBatchBytes)
  }

  test("divergent appends to one parent are independent and share the parent's rows") {
    val parent = build((0 until 1000).map(i => row(i.toLong % 10, s"p$i", i)))
    val a = parent.append(Iterator(row(1L, "a", -1), row(11L, "a11", -2)))
    val b = parent.append(Iterator(row(1L, "b", -3), row(12L, "b12", -4)))
    // Materialized "in reverse order" does not matter: they are separate objects.
    assert(lookup(b, 1L).head._2 == "b" && !lookup(b, 1L).exists(_._2 == "a"))
    assert(lookup(a, 1L).head._2 == "a" && !lookup(a, 1L).exists(_._2 == "b"))
    assert(lookup(a, 12L).isEmpty && lookup(b, 11L).isEmpty)
    assert(lookup(parent, 1L).size == 100 && lookup(a, 1L).size == 101 && lookup(b, 1L).size == 101)
    assert(a.ownBatchBytes <= 4096 && b.ownBatchBytes <= 4096)
    assert(a.ownTrieEntries == 2 && b.ownTrieEntries == 2)
  }

  test("java serialization round-trips the rows and the trie") {
    val rows = (0 until 3000).map(i => row(if (i % 100 == 0) null else i.toLong % 300, s"r$i", i))
    val p = build(rows, batchSize = 8192).append(Iterator(row(7L, "late", -1)))
    val copy = serializedCopy(p)
    assert(scan(copy) == scan(p))
    (0 until 300).foreach(k => assert(lookup(copy, k.toLong) == lookup(p, k.toLong)))
    assert(copy.rowCount == p.rowCount && copy.keyCount == p.keyCount)
    assert(copy.append(Iterator(row(7L, "later", -2))).lookup(copy.codec.keyOfValue(7L))
      .map(decode).map(_._2).take(2).toSeq == Seq("later", "late"))
  }

  test("string keys compare by bytes and may point into the batches") {
    val s = StructType(Seq(StructField("k", StringType), StructField("i", IntegerType)))
    val rand = new Random(7)
    val keys = (0 until 500).map(_ => rand.alphanumeric.take(rand.nextInt(12)).mkString)
    val rows = keys.zipWithIndex.map { case (k, i) =>
      new GenericInternalRow(Array[Any](UTF8String.fromString(k), i)): InternalRow
    }
    val p = IndexedPartition.build(s, 0, 4096, rows.iterator)
    keys.distinct.foreach { k =>
      val expected = keys.zipWithIndex.filter(_._1 == k).map(_._2).reverse
      assert(p.lookup(p.codec.keyOfValue(UTF8String.fromString(k))).map(_.getInt(1)).toSeq == expected)
    }
  }

  test("floating point keys: -0.0 equals 0.0 and NaN equals NaN, as in SQL joins") {
    val s = StructType(Seq(StructField("k", DoubleType), StructField("i", IntegerType)))
    val values = Seq(0.0, -0.0, Double.NaN, java.lang.Double.longBitsToDouble(0x7ff8000000000001L), 1.5)
    val rows = values.zipWithIndex.map { case (d, i) =>
      new GenericInternalRow(Array[Any](d, i)): InternalRow
    }
    val p = IndexedPartition.build(s, 0, 4096, rows.iterator)
    def found(d: Double) = p.lookup(p.codec.keyOfValue(d)).map(_.getInt(1)).toSeq.sorted
    assert(found(0.0) == Seq(0, 1) && found(-0.0) == Seq(0, 1))
    assert(found(Double.NaN) == Seq(2, 3))
    assert(found(1.5) == Seq(4))
  }

  test("a record is the row and one 8-byte link: the row's size travels in its pointer") {
    val rows = (0 until 5000).map(i => row(if (i % 50 == 0) null else i.toLong % 700, "v" * (i % 37), i))
    val p = build(rows, batchSize = 16384)
    val rowBytes = rows.map(r =>
      org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(schema)(r).getSizeInBytes.toLong).sum
    assert(p.usedBatchBytes == rowBytes + 8L * rows.size)
    assert(scan(p).map(_._3) == (0 until 5000))
    (0 until 700).foreach { k =>
      assert(lookup(p, k.toLong).map(_._3) == (k until 5000 by 700).filter(_ % 50 != 0).reverse, s"key $k")
    }
    val view = p.newRowView()
    p.scanWithPointers().foreach { case (ptr, r) =>
      assert(p.rowAt(ptr, view).getSizeInBytes == r.getSizeInBytes)
    }
  }

  test("rows over the pointer's size bits (1 MB) are alone in a batch, in chains and scans") {
    val huge = "h" * (1100 * 1024)
    val rows = Seq(row(1L, "a", 1), row(1L, huge, 2), row(2L, "b", 3), row(1L, "c", 4),
      row(1L, huge + "z", 5), row(3L, "d", 6))
    // The batch size is bigger than the rows: they would fit in a batch, not in the size bits.
    val p = build(rows, batchSize = 8 << 20)
    assert(lookup(p, 1L).map(_._3) == Seq(5, 4, 2, 1))
    assert(lookup(p, 1L).map(_._2.length) == Seq(huge.length + 1, 1, huge.length, 1))
    assert(scan(p).map(_._3) == (1 to 6))
    val child = p.append(Iterator(row(1L, huge + "y", 7), row(3L, "e", 8)))
    assert(lookup(child, 1L).map(_._3) == Seq(7, 5, 4, 2, 1))
    assert(lookup(child, 3L).map(_._3) == Seq(8, 6))
    assert(lookup(p, 3L).map(_._3) == Seq(6))
  }

  test("single-long keys use primitive tables, other keys a trie; both agree on lookups") {
    def typed(t: DataType, values: Seq[Any]): IndexedPartition = {
      val s = StructType(Seq(StructField("k", t), StructField("i", IntegerType)))
      IndexedPartition.build(s, 0, 4096,
        values.zipWithIndex.map { case (v, i) => new GenericInternalRow(Array[Any](v, i)): InternalRow }.iterator)
    }
    val cases: Seq[(DataType, Seq[Any], Boolean)] = Seq(
      (BooleanType, Seq(true, false, true, null), true),
      (ByteType, Seq(Byte.MinValue, 0.toByte, Byte.MaxValue, (-1).toByte, 0.toByte), true),
      (ShortType, Seq(Short.MinValue, Short.MaxValue, (-1).toShort, Short.MinValue), true),
      (IntegerType, Seq(Int.MinValue, -1, 0, Int.MaxValue, -1), true),
      (LongType, Seq(Long.MinValue, -1L, 0L, Long.MaxValue, Long.MinValue), true),
      (DateType, Seq(-719162, 0, 19000, 0), true),
      (FloatType, Seq(0.0f, -0.0f, Float.NaN, Float.MinValue, -1.5f), true),
      (DecimalType(18, 3),
        Seq(Decimal(BigDecimal("-999999999999999.999"), 18, 3),
          Decimal(BigDecimal("0.001"), 18, 3), Decimal(BigDecimal("-999999999999999.999"), 18, 3)), true),
      (DecimalType(30, 2),
        Seq(Decimal(BigDecimal("1234567890123456789012.34"), 30, 2),
          Decimal(BigDecimal("-1.00"), 30, 2)), false),
      (StringType, Seq(UTF8String.fromString(""), UTF8String.fromString("x"), UTF8String.fromString("")), false),
      (BinaryType, Seq(Array[Byte](1, 2), Array[Byte](), Array[Byte](1, 2)), false))
    cases.foreach { case (t, values, long) =>
      val p = typed(t, values)
      assert(p.hasLongKeys == long, t)
      values.distinct.filter(_ != null).foreach { v =>
        val same = values.zipWithIndex.filter { case (o, _) =>
          o != null && p.codec.keyOfValue(o) == p.codec.keyOfValue(v)
        }.map(_._2).reverse
        assert(p.lookup(p.codec.keyOfValue(v)).map(_.getInt(1)).toSeq == same, s"$t $v")
      }
      assert(p.keyCount == values.filter(_ != null).map(p.codec.keyOfValue).distinct.size, t)
    }
  }

  test("java serialization round-trips string-keyed partitions and their versions") {
    val s = StructType(Seq(StructField("k", StringType), StructField("i", IntegerType)))
    def r(k: String, i: Int): InternalRow = new GenericInternalRow(Array[Any](UTF8String.fromString(k), i))
    val p = IndexedPartition.build(s, 0, 4096, (0 until 2000).map(i => r(s"k${i % 150}", i)).iterator)
      .append(Iterator(r("k3", -1), r("new", -2)))
    val copy = serializedCopy(p)
    (Seq("new") ++ (0 until 150).map(i => s"k$i")).foreach { k =>
      val key = p.codec.keyOfValue(UTF8String.fromString(k))
      assert(copy.lookup(key).map(_.getInt(1)).toSeq == p.lookup(key).map(_.getInt(1)).toSeq, k)
    }
    assert(copy.keyCount == 151 && copy.rowCount == 2002)
  }

  test("the last batch is cut to its rows when no key points into it (single-long keys)") {
    val small = build((0 until 10).map(i => row(i.toLong, "x", i)))
    assert(small.totalBatchBytes == small.usedBatchBytes)
    val child = small.append(Iterator(row(3L, "y", 10)))
    assert(child.ownBatchBytes == child.totalBatchBytes - small.totalBatchBytes)
    assert(child.totalBatchBytes == child.usedBatchBytes)
    assert(lookup(child, 3L).map(_._3) == Seq(10, 3) && lookup(small, 3L).map(_._3) == Seq(3))
    // String keys are views of the stored rows: their batch stays as allocated.
    val s = StructType(Seq(StructField("k", StringType), StructField("i", IntegerType)))
    val strings = IndexedPartition.build(s, 0, 1 << 20,
      Iterator(new GenericInternalRow(Array[Any](UTF8String.fromString("a"), 1)): InternalRow))
    assert(strings.totalBatchBytes == IndexedPartition.InitialBatchBytes - IndexedPartition.ArrayHeaderBytes)
    assert(strings.lookup(strings.codec.keyOfValue(UTF8String.fromString("a"))).map(_.getInt(1)).toSeq == Seq(1))
  }

  test("block size reports own memory, not the shared parent's") {
    val parent = build((0 until 10000).map(i => row(i.toLong, "x" * 20, i)))
    val child = parent.append(Iterator(row(1L, "y", 1)))
    assert(parent.blockSizeInBytes > parent.usedBatchBytes)
    assert(child.blockSizeInBytes < parent.blockSizeInBytes / 10)
    assert(org.apache.spark.util.SizeEstimator.estimate(child) == child.blockSizeInBytes)
  }
}

/** Keeps the trie size estimate honest: compared with Spark's SizeEstimator on a real trie. */
class TrieSizeCalibrationSuite extends AnyFunSuite {
  test("the per-entry trie estimate is within 25% of SizeEstimator's measurement") {
    val n = 200000
    val trie = scala.collection.concurrent.TrieMap.empty[AnyRef, java.lang.Long]
    (0 until n).foreach(i =>
      trie.update(java.lang.Long.valueOf(i * 31L + 1000), java.lang.Long.valueOf(i * 64L + 1000)))
    val snapshot = trie.readOnlySnapshot()
    val measured = org.apache.spark.util.SizeEstimator.estimate(trie).toDouble / n
    val estimated =
      (IndexedPartition.TrieEntryBytes + KeyCodec(LongType).keyHeapBytes(java.lang.Long.valueOf(1L))).toDouble
    info(f"measured $measured%.1f bytes per entry, estimated $estimated%.1f")
    assert(snapshot.size == n)
    assert(math.abs(measured - estimated) / measured < 0.25, s"measured $measured, estimated $estimated")
  }

  test("taskGroups: partitions grouped by location, groups in proportion, every partition once") {
    val a = Some("executor_h1_1")
    val b = Some("executor_h2_2")
    val locations = Seq(a, a, a, a, a, a, b, b, None, None, a, b)
    val groups = IndexedData.taskGroups(locations, slots = 4)
    assert(groups.flatMap(_._2).sorted.toSeq == locations.indices)
    groups.foreach { case (location, members) => assert(members.forall(locations(_) == location)) }
    // 7 partitions at a: ceil(4 * 7 / 12) = 3 groups; 3 at b: 1; 2 anywhere: 1.
    assert(groups.map(_._1).groupBy(identity).map { case (l, g) => l -> g.length } ==
      Map(a -> 3, b -> 1, None -> 1))
    assert(IndexedData.taskGroups(Seq.fill(16)(None), slots = 2).map(_._2.length).toSeq == Seq(8, 8))
    assert(IndexedData.taskGroups(Seq.fill(3)(None), slots = 8).length == 3)
  }
}
