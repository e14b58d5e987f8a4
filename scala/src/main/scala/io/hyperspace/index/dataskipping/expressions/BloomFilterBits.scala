package io.hyperspace.index.dataskipping.expressions

import java.nio.ByteBuffer

/**
 * A Bloom filter over 64-bit value hashes ([[ValueHash]]), stored in the sketch table as bytes:
 * `[version: 1 byte][numHashes: int][numBits: long][words: numBits / 64 longs]`, big-endian.
 *
 * Bit positions are `(h + i * h2) mod numBits` (unsigned) for `i` in `1..numHashes`, where `h2`
 * is derived from `h`. When `numBits` is a power of two the filter can be folded in half (OR of
 * the two halves): `x mod (m / 2) == (x mod m) mod (m / 2)`, so the folded filter answers exactly
 * as one built at half the size would. That lets a file whose distinct count is not known up
 * front start large and shrink to the size its actual distinct count needs.
 */
final class BloomFilterBits private (val numHashes: Int, val numBits: Long, val words: Array[Long]) {

  /** Records the value hash `h`. */
  def put(h: Long): Unit = {
    val h2 = BloomFilterBits.second(h)
    var i = 1
    while (i <= numHashes) {
      val bit = java.lang.Long.remainderUnsigned(h + i * h2, numBits)
      words((bit >>> 6).toInt) |= 1L << (bit & 63)
      i += 1
    }
  }

  /** Whether the value hash `h` may have been recorded (false: it certainly was not). */
  def mightContain(h: Long): Boolean = BloomFilterBits.probe(h, numHashes, numBits, i => words(i))

  /** ORs `other` (same number of hashes and bits) into this filter. */
  def merge(other: BloomFilterBits): Unit = {
    require(other.numHashes == numHashes && other.numBits == numBits, "incompatible Bloom filters")
    words.indices.foreach(i => words(i) |= other.words(i))
  }

  /** Number of set bits. */
  def cardinality: Long = words.map(w => java.lang.Long.bitCount(w).toLong).sum

  /**
   * The number of distinct values recorded, estimated from the fraction of set bits
   * (Swamidass and Baldi): `-(m / k) ln(1 - X / m)`.
   */
  def estimatedDistinct: Long = {
    val x = cardinality.toDouble
    if (x >= numBits) Long.MaxValue
    else math.ceil(-(numBits.toDouble / numHashes) * math.log1p(-x / numBits)).toLong
  }

  /** This filter folded down to `targetBits` (a power of two dividing `numBits`). */
  def foldTo(targetBits: Long): BloomFilterBits = {
    require(BloomFilterBits.isPowerOfTwo(numBits) && targetBits >= 64 && numBits % targetBits == 0,
      s"cannot fold $numBits bits to $targetBits")
    if (targetBits == numBits) this
    else {
      val n = (targetBits >>> 6).toInt
      val folded = new Array[Long](n)
      words.indices.foreach(i => folded(i % n) |= words(i))
      new BloomFilterBits(numHashes, targetBits, folded)
    }
  }

  /** The serialized form stored in the sketch table. */
  def toBytes: Array[Byte] = {
    val buf = ByteBuffer.allocate(BloomFilterBits.HeaderBytes + 8 * words.length)
    buf.put(BloomFilterBits.Version).putInt(numHashes).putLong(numBits)
    words.foreach(w => buf.putLong(w))
    buf.array()
  }
}

object BloomFilterBits {
  private val Version: Byte = 1
  private val HeaderBytes = 1 + 4 + 8
  private val Ln2Squared = math.log(2) * math.log(2)

  /** Bits of an optimal filter for `n` distinct values at false positive probability `fpp`. */
  def optimalBits(n: Long, fpp: Double): Long =
    math.max(64L, math.ceil(-math.max(n, 1L) * math.log(fpp) / Ln2Squared).toLong)

  /** Hash functions of an optimal filter at `fpp` (independent of the number of values). */
  def optimalHashes(fpp: Double): Int = math.max(1, math.round(-math.log(fpp) / math.log(2)).toInt)

  /** An empty filter with at least `bits` bits, rounded up to whole 64-bit words. */
  def empty(numHashes: Int, bits: Long): BloomFilterBits = {
    val words = ((bits + 63) >>> 6).toInt
    new BloomFilterBits(numHashes, words.toLong << 6, new Array[Long](words))
  }

  /** The smallest power of two >= `n` (and >= 64). */
  def powerOfTwoAtLeast(n: Long): Long = math.max(64L, java.lang.Long.highestOneBit(n - 1) << 1)

  private def isPowerOfTwo(n: Long): Boolean = n > 0 && (n & (n - 1)) == 0

  private def second(h: Long): Long = ValueHash.mix(h) | 1L

  private def probe(h: Long, numHashes: Int, numBits: Long, word: Int => Long): Boolean = {
    val h2 = second(h)
    var i = 1
    while (i <= numHashes) {
      val bit = java.lang.Long.remainderUnsigned(h + i * h2, numBits)
      if ((word((bit >>> 6).toInt) & (1L << (bit & 63))) == 0L) return false
      i += 1
    }
    true
  }

  /** Reads a filter written by [[BloomFilterBits.toBytes]]. */
  def fromBytes(bytes: Array[Byte]): BloomFilterBits = {
    val buf = ByteBuffer.wrap(bytes)
    checkVersion(buf.get())
    val k = buf.getInt()
    val m = buf.getLong()
    new BloomFilterBits(k, m, Array.fill((m >>> 6).toInt)(buf.getLong()))
  }

  /**
   * Whether any of `hashes` may be in the serialized filter `bytes`, probing the bytes in place:
   * query time runs this once per indexed file, so it avoids copying the filter.
   */
  def mightContainAny(bytes: Array[Byte], hashes: Array[Long]): Boolean = {
    val buf = ByteBuffer.wrap(bytes)
    checkVersion(buf.get())
    val k = buf.getInt()
    val m = buf.getLong()
    hashes.exists(h => probe(h, k, m, i => buf.getLong(HeaderBytes + 8 * i)))
  }

  private def checkVersion(v: Byte): Unit = if (v != Version) {
    throw new IllegalStateException(
      s"Bloom filter sketch of format version $v; this Hyperspace reads version $Version.")
  }
}
