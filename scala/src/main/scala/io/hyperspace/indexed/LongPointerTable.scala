package io.hyperspace.indexed

/**
 * An open-addressing hash table from a `long` key to a `long` row pointer, in two primitive
 * arrays: no boxed keys or values, no nodes (about 21 bytes per key at its final load of 0.75,
 * where a `TrieMap` of boxed longs takes ~88).
 *
 * It is written only while the partition version that owns it is built ([[put]]), then
 * [[trimmed]] to its final size and never written again, so versions can share it. Pointer
 * `-1` marks an empty slot (it is also "no row" for callers), so every `long` is a valid key,
 * `0`, `Long.MinValue` and `Long.MaxValue` included.
 *
 * Slots are chosen by multiplying a 32-bit hash by the capacity (not by masking a power of two),
 * so the trimmed table can have exactly the capacity its load calls for.
 */
final class LongPointerTable private (private var keys: Array[Long], private var values: Array[Long]) {
  import LongPointerTable._

  private var count = 0

  /** Number of keys. */
  def size: Int = count

  /** Number of slots. */
  def capacity: Int = keys.length

  /** Heap bytes of the two arrays, their JVM headers included. */
  def heapBytes: Long = 16L * keys.length + 2 * ArrayHeaderBytes + ObjectBytes

  /** The pointer of `key`, or -1 when the key is absent. */
  def get(key: Long): Long = {
    val ks = keys
    val vs = values
    if (ks.length == 0) return Empty
    var i = slot(key, ks.length)
    while (true) {
      val v = vs(i)
      if (v == Empty || ks(i) == key) return v
      i += 1
      if (i == ks.length) i = 0
    }
    Empty
  }

  /**
   * Maps `key` to `pointer` (not -1) and returns the previous pointer, or -1. Only while the
   * owning version is built: the table must not be shared yet.
   */
  def put(key: Long, pointer: Long): Long = {
    require(pointer != Empty, "-1 marks an empty slot")
    if ((count + 1).toLong * 4 > keys.length.toLong * 3) resize(math.max(16L, keys.length * 2L))
    val ks = keys
    val vs = values
    var i = slot(key, ks.length)
    while (vs(i) != Empty && ks(i) != key) {
      i += 1
      if (i == ks.length) i = 0
    }
    val previous = vs(i)
    if (previous == Empty) count += 1
    ks(i) = key
    vs(i) = pointer
    previous
  }

  /** This table at the smallest capacity that keeps its load at most 0.75 (this one if it is). */
  def trimmed(): LongPointerTable = {
    val tight = capacityFor(count)
    if (tight >= keys.length) this
    else {
      val out = new LongPointerTable(new Array[Long](tight), emptyValues(tight))
      foreach((k, v) => out.put(k, v))
      out
    }
  }

  /** Calls `f(key, pointer)` for every entry, in slot order. */
  def foreach(f: (Long, Long) => Unit): Unit = {
    var i = 0
    while (i < keys.length) {
      if (values(i) != Empty) f(keys(i), values(i))
      i += 1
    }
  }

  private def resize(newCapacity: Long): Unit = {
    if (newCapacity > MaxCapacity) {
      throw new IllegalStateException(s"an index partition cannot hold more than ${MaxCapacity * 3 / 4} keys")
    }
    val oldKeys = keys
    val oldValues = values
    keys = new Array[Long](newCapacity.toInt)
    values = emptyValues(newCapacity.toInt)
    count = 0
    var i = 0
    while (i < oldKeys.length) {
      if (oldValues(i) != Empty) put(oldKeys(i), oldValues(i))
      i += 1
    }
  }
}

object LongPointerTable {

  /** The pointer of an empty slot and of an absent key. */
  val Empty: Long = -1L

  private val ArrayHeaderBytes = 16L
  private val ObjectBytes = 24L
  // Java arrays hold at most Int.MaxValue - a few elements.
  private val MaxCapacity = (Int.MaxValue - 8).toLong

  /** An empty table that grows as keys are put. */
  def empty(): LongPointerTable = new LongPointerTable(new Array[Long](0), new Array[Long](0))

  private def emptyValues(n: Int): Array[Long] = {
    val a = new Array[Long](n)
    java.util.Arrays.fill(a, Empty)
    a
  }

  // One slot more than the load bound, so a probe for an absent key always meets an empty slot.
  private def capacityFor(n: Int): Int =
    if (n == 0) 1 else math.min(MaxCapacity, n.toLong * 4 / 3 + 1).toInt

  /**
   * The home slot of `key` among `capacity` slots: a 64-bit finalizer (so keys that differ only
   * in their high bits, or that are multiples of the partition count, still spread) whose high
   * 32 bits are scaled to the capacity.
   */
  private def slot(key: Long, capacity: Int): Int = {
    var h = key
    h = (h ^ (h >>> 33)) * 0xff51afd7ed558ccdL
    h = (h ^ (h >>> 33)) * 0xc4ceb9fe1a85ec53L
    h ^= h >>> 33
    (((h >>> 32) * capacity.toLong) >>> 32).toInt
  }

  /**
   * The keys of a version: its own table first, then the ones it shares with its ancestors,
   * newest first. A key's pointer is the one in the newest layer that has it (the newest row
   * with the key: an append links its rows to the older ones through the row chain).
   */
  final class Layers(val tables: Array[LongPointerTable]) {

    /** The pointer of `key` in the newest layer holding it, or -1. */
    def get(key: Long): Long = {
      var i = 0
      while (i < tables.length) {
        val p = tables(i).get(key)
        if (p != Empty) return p
        i += 1
      }
      Empty
    }

    /** Every key's newest pointer, once per key. */
    def heads: Iterator[Long] = tables.indices.iterator.flatMap { i =>
      val out = Array.newBuilder[Long]
      tables(i).foreach { (k, v) =>
        var shadowed = false
        var j = 0
        while (!shadowed && j < i) { shadowed = tables(j).get(k) != Empty; j += 1 }
        if (!shadowed) out += v
      }
      out.result()
    }
  }

  /**
   * Most layers a version looks a key up in. Past it an append merges layers (into a table of
   * its own) so a lookup of an absent key stays a few probes however many appends came before.
   */
  val MaxLayers: Int = 8

  /**
   * The layers of a child version whose own keys are `own`, over its parent's `shared` ones,
   * and how many of the returned tables the child owns (0 or 1; the rest are shared). Merging
   * keeps the oldest (base) table shared unless the deltas have grown to half its size, so a
   * long series of small appends copies small deltas, not the whole base.
   */
  def stack(own: LongPointerTable, shared: Array[LongPointerTable]): (Array[LongPointerTable], Int) = {
    val all = (own +: shared).filter(_.size > 0)
    if (all.isEmpty) (Array(own), 1)
    else if (all.length <= MaxLayers) {
      if (all.head eq own) (all, 1) else (all, 0)
    } else {
      val base = all.last
      val deltas = all.init
      val deltaKeys = deltas.map(_.size.toLong).sum
      val toMerge = if (deltaKeys * 2 >= base.size) all else deltas
      val merged = merge(toMerge)
      (if (toMerge.length == all.length) Array(merged) else Array(merged, base), 1)
    }
  }

  /** One table with every key of `newestFirst`, each at its newest pointer. */
  private[indexed] def merge(newestFirst: Array[LongPointerTable]): LongPointerTable = {
    val out = empty()
    newestFirst.reverseIterator.foreach(t => t.foreach((k, v) => out.put(k, v)))
    out.trimmed()
  }
}
