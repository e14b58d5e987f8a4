package io.hyperspace.index.dataskipping.expressions

import java.nio.ByteBuffer

/**
 * A set of longs in one open-addressing array: 8 bytes per slot instead of a boxed hash set's
 * ~50 per element, which matters because a Bloom filter sketch keeps every distinct hash of a
 * file until it knows how large the filter has to be.
 */
final class LongOpenSet(initialCapacity: Int = 64) {
  // 0 marks an empty slot, so the value 0 is tracked on its own.
  private var slots = new Array[Long](LongOpenSet.roundUp(initialCapacity * 2))
  private var count = 0
  private var hasZero = false

  /** The number of elements. */
  def size: Int = count + (if (hasZero) 1 else 0)

  /** Adds `v`; returns whether it was new. */
  def add(v: Long): Boolean = {
    if (v == 0L) {
      val added = !hasZero
      hasZero = true
      return added
    }
    if ((count + 1) * 2 > slots.length) grow()
    insert(slots, v)
  }

  private def insert(into: Array[Long], v: Long): Boolean = {
    val mask = into.length - 1
    var i = (ValueHash.mix(v) & mask).toInt
    while (into(i) != 0L) {
      if (into(i) == v) return false
      i = (i + 1) & mask
    }
    into(i) = v
    if (into eq slots) count += 1
    true
  }

  private def grow(): Unit = {
    val bigger = new Array[Long](slots.length * 2)
    slots.foreach(v => if (v != 0L) insert(bigger, v))
    slots = bigger
  }

  /** Calls `f` on every element. */
  def foreach(f: Long => Unit): Unit = {
    if (hasZero) f(0L)
    slots.foreach(v => if (v != 0L) f(v))
  }

  /** The elements as a compact byte array (count, then the values). */
  def toBytes: Array[Byte] = {
    val buf = ByteBuffer.allocate(4 + 8 * size)
    buf.putInt(size)
    foreach(v => buf.putLong(v))
    buf.array()
  }
}

object LongOpenSet {
  private def roundUp(n: Int): Int = Integer.highestOneBit(math.max(n, 2) - 1) << 1

  /** Reads what [[LongOpenSet.toBytes]] wrote, from `buf`'s position. */
  def read(buf: ByteBuffer): LongOpenSet = {
    val n = buf.getInt()
    val set = new LongOpenSet(math.max(n, 16))
    (0 until n).foreach(_ => set.add(buf.getLong()))
    set
  }
}
