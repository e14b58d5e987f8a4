package io.hyperspace.indexed

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import io.hyperspace.indexed.JavaSerialization.serializedCopy

/**
 * Partitions whose sealed batches are compressed in blocks answer every lookup, chain and scan
 * exactly as the same rows kept as written: no Spark session, generated rows.
 */
class PackedBatchSuite extends AnyFunSuite {

  private val schema = StructType(Seq(
      StructField("k", LongType), StructField("s", StringType), StructField("i", IntegerType),
      StructField("d", DecimalType(12, 2)), StructField("w", StringType)))

  private def genRows(n: Int, keys: Int, seed: Int): Seq[InternalRow] = {
    val rand = new Random(seed)
    (0 until n).map { i =>
      val k: Any = if (rand.nextInt(40) == 0) null else (rand.nextInt(keys) - keys / 4).toLong
      val s: Any = if (rand.nextInt(10) == 0) null else UTF8String.fromString(s"s-${rand.nextInt(100)}")
      val d: Any = if (rand.nextInt(7) == 0) null else Decimal(BigDecimal(rand.nextInt(1000000)) / 100, 12, 2)
      // Now and then a wide value: rows of very different sizes share the blocks.
      val w: Any = if (rand.nextInt(50) == 0) UTF8String.fromString("w" * rand.nextInt(3000)) else null
      new GenericInternalRow(Array[Any](k, s, i, d, w)): InternalRow
    }
  }

  private def decode(r: UnsafeRow): String = r.toSeq(schema).map(String.valueOf).mkString("|")

  private def lookup(p: IndexedPartition, k: Long): Seq[String] =
    p.lookup(p.codec.keyOfValue(k)).map(decode).toSeq

  private def scan(p: IndexedPartition): Seq[String] = p.iterator.map(decode).toSeq

  private def assertSame(packed: IndexedPartition, plain: IndexedPartition, keys: Int, clue: String): Unit = {
    assert(scan(packed) == scan(plain), clue)
    (-keys / 4 - 1 until keys).foreach { k =>
      assert(lookup(packed, k.toLong) == lookup(plain, k.toLong), s"$clue key $k")
    }
    assert(packed.rowCount == plain.rowCount && packed.keyCount == plain.keyCount, clue)
    assert(packed.usedBatchBytes == plain.usedBatchBytes, clue)
  }

  private val packings = Seq(BatchPacking("zstd", 4096), BatchPacking("lz4", 4096),
    BatchPacking("zstd", 512), BatchPacking("lz4", 65536))

  packings.foreach { packing =>
    test(s"packed batches ($packing) answer as plain ones, and take less memory") {
      val rows = genRows(20000, 1500, 3)
      Seq(16 * 1024, 4 << 20).foreach { batchSize =>
        val plain = IndexedPartition.build(schema, 0, batchSize, rows.iterator)
        val packed = IndexedPartition.build(schema, 0, batchSize, rows.iterator, packing)
        assertSame(packed, plain, 1500, s"batch size $batchSize")
        assert(packed.packedBatches > 0)
        assert(packed.totalBatchBytes < plain.totalBatchBytes / 2,
          s"${packed.totalBatchBytes} vs ${plain.totalBatchBytes}")
        // The block manager is told the compressed size.
        assert(packed.blockSizeInBytes < plain.blockSizeInBytes / 2)
        assert(org.apache.spark.util.SizeEstimator.estimate(packed) == packed.blockSizeInBytes)
        // No array of compressed bytes is a G1 humongous object (half a 1 MB region or more).
        assert(packed.packedChunkLengths.max <= PackedBatch.ChunkBytes)
      }
    }
  }

  test("many versions over packed batches: each answers with its own rows, like plain ones") {
    val packing = BatchPacking("zstd", 1024)
    val base = genRows(5000, 300, 11)
    val appends = (1 to 25).map(i => genRows(if (i % 5 == 0) 3000 else 40, 400, 100 + i))
    val plains = appends.scanLeft(IndexedPartition.build(schema, 0, 8192, base.iterator)) { (p, rows) =>
      p.append(rows.iterator)
    }
    val packeds = appends.scanLeft(IndexedPartition.build(schema, 0, 8192, base.iterator, packing)) {
      (p, rows) => p.append(rows.iterator)
    }
    plains.zip(packeds).zipWithIndex.foreach { case ((plain, packed), v) =>
      assertSame(packed, plain, 400, s"version $v")
    }
    // Children share their parents' packed batches and own only theirs.
    assert(packeds.last.ownBatchBytes < packeds.last.totalBatchBytes)
    // Divergent appends to one packed parent are independent.
    val a = packeds(3).append(Iterator(genRows(1, 1, 1).head))
    val b = packeds(3).append(genRows(2000, 400, 77).iterator)
    assertSame(a, plains(3).append(Iterator(genRows(1, 1, 1).head)), 400, "divergent a")
    assertSame(b, plains(3).append(genRows(2000, 400, 77).iterator), 400, "divergent b")
  }

  test("java serialization round-trips packed partitions and their versions") {
    val packing = BatchPacking("lz4", 2048)
    val rows = genRows(8000, 700, 5)
    val plain = IndexedPartition.build(schema, 0, 16384, rows.iterator).append(genRows(500, 700, 6).iterator)
    val packed = IndexedPartition.build(schema, 0, 16384, rows.iterator, packing)
      .append(genRows(500, 700, 6).iterator)
    val copy = serializedCopy(packed)
    assert(copy.packedBatches == packed.packedBatches && copy.packedBatches > 0)
    assertSame(copy, plain, 700, "copy")
    val more = genRows(300, 700, 9)
    assertSame(copy.append(more.iterator), plain.append(more.iterator), 700, "copy's child")
  }

  test("a row view stays valid while the chain reads links from other blocks") {
    val packing = BatchPacking("zstd", 512)
    // Key 1 in every 40th row: its rows are in different blocks, its links too.
    val rows = (0 until 4000).map { i =>
      new GenericInternalRow(Array[Any](if (i % 40 == 0) 1L else i.toLong + 10,
          UTF8String.fromString(s"row-$i"), i, null, null)): InternalRow
    }
    val p = IndexedPartition.build(schema, 0, 1 << 20, rows.iterator, packing)
    assert(p.packedBatches > 0)
    val reader = p.newReader()
    val view = p.newRowView()
    val key = new GenericInternalRow(Array[Any](1L))
    val it = reader.pointersOf(key, 0)
    val seen = scala.collection.mutable.ArrayBuffer[Int]()
    while (it.hasNext) {
      val r = reader.rowAt(it.next(), view)
      val before = decode(r)
      // Reading on (the next pointer's links) must not change the row handed out.
      it.hasNext
      assert(decode(r) == before)
      seen += r.getInt(2)
    }
    assert(seen.toSeq == (0 until 4000 by 40).reverse)
  }

  test("rows bigger than a block or a batch, and over the pointer's size bits, in packed batches") {
    val packing = BatchPacking("lz4", 1024)
    val huge = "h" * (1100 * 1024)
    val rows = (0 until 300).map { i =>
      val w = if (i % 100 == 7) huge + i else if (i % 10 == 3) "m" * 5000 else null
      new GenericInternalRow(Array[Any]((i % 13).toLong, UTF8String.fromString(s"r$i"), i, null,
          if (w == null) null else UTF8String.fromString(w))): InternalRow
    }
    val plain = IndexedPartition.build(schema, 0, 8192, rows.iterator)
    val packed = IndexedPartition.build(schema, 0, 8192, rows.iterator, packing)
    assertSame(packed, plain, 13, "big rows")
  }

  test("string keys are never packed: the key index points into their batches") {
    val s = StructType(Seq(StructField("k", StringType), StructField("i", IntegerType)))
    val rows = (0 until 5000).map(i =>
      new GenericInternalRow(Array[Any](UTF8String.fromString(s"k${i % 300}"), i)): InternalRow)
    val p = IndexedPartition.build(s, 0, 8192, rows.iterator, BatchPacking("zstd", 4096))
    assert(p.packedBatches == 0)
    assert(p.lookup(p.codec.keyOfValue(UTF8String.fromString("k7"))).map(_.getInt(1)).toSeq ==
      (7 until 5000 by 300).reverse)
  }

  test("a batch compressing to more than a chunk is split into chunks of whole blocks") {
    val rand = new Random(4)
    val rows = (0 until 40000).map { i =>
      new GenericInternalRow(Array[Any]((i % 900).toLong, UTF8String.fromString(rand.alphanumeric.take(90).mkString),
          i, null, null)): InternalRow
    }
    val plain = IndexedPartition.build(schema, 0, 4 << 20, rows.iterator)
    val packed = IndexedPartition.build(schema, 0, 4 << 20, rows.iterator, BatchPacking("lz4", 4096))
    assert(packed.packedChunkLengths.size > packed.packedBatches + 4)
    assert(packed.packedChunkLengths.max <= PackedBatch.ChunkBytes)
    assertSame(packed, plain, 900, "chunked")
  }

  test("incompressible batches stay as written") {
    val s = StructType(Seq(StructField("k", LongType), StructField("b", BinaryType)))
    val rand = new Random(1)
    val rows = (0 until 2000).map { i =>
      val bytes = new Array[Byte](200)
      rand.nextBytes(bytes)
      new GenericInternalRow(Array[Any](i.toLong, bytes)): InternalRow
    }
    val p = IndexedPartition.build(s, 0, 65536, rows.iterator, BatchPacking("lz4", 4096))
    assert(p.packedBatches == 0)
    assert(p.lookup(p.codec.keyOfValue(5L)).map(_.getBinary(1).toSeq).toSeq == Seq(rows(5).getBinary(1).toSeq))
  }

  test("a join task's reader keeps decoded blocks; a lookup's a few; both read the same rows") {
    val packing = BatchPacking("zstd", 1024)
    val rows = genRows(10000, 800, 21)
    val p = IndexedPartition.build(schema, 0, 1 << 20, rows.iterator, packing)
    val view = p.newRowView()
    Seq(p.newReader(), p.newReader(0L), p.newReader(64L << 20)).foreach { reader =>
      (0 until 800).foreach { k =>
        val key = new GenericInternalRow(Array[Any](k.toLong))
        assert(reader.pointersOf(key, 0).map(ptr => decode(reader.rowAt(ptr, view))).toSeq == lookup(p, k.toLong))
      }
    }
  }
}
