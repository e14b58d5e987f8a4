package io.hyperspace.indexed

/**
 * An open-addressing hash table from a `long` key to a `long` row pointer, in primitive arrays:
 * no boxed keys or values, no nodes.
 *
 * It is written only while the partition version that owns it is built ([[put]]), then
 * [[trimmed]] to its final size and never written again, so versions can share it. Pointer
 * `-1` marks an empty slot (it is also "no row" for callers), so every `long` is a valid key,
 * `0`, `Long.MinValue` and `Long.MaxValue` included.
 *
 * While it is written a slot is two `long`s (a key array and a pointer array: 16 bytes). The
 * trimmed table packs a slot into one `long` when it can: the key as its distance from the
 * smallest key in the high 32 bits, the pointer with each of its bit fields (`fields`, widths
 * from the high bits down, e.g. a row pointer's batch, offset and size) cut to the bits its
 * largest value needs in the low 32. A partition's keys usually span less than 2^32 and its
 * pointers need about 25 of their 64 bits, so a key costs ~11 bytes instead of ~21, and a probe
 * reads one array instead of two. Tables whose keys or pointers do not fit stay two arrays.
 *
 * Slots are chosen by multiplying a 32-bit hash by the capacity (not by masking a power of two),
 * so the trimmed table can have exactly the capacity its load calls for.
 */
final class LongPointerTable private (
    private var keys: Array[Long],
    private var values: Array[Long],
    // Widths of the pointer's bit fields, from the high bits down (sum 64).
    private[indexed] val fields: Array[Int],
    // The packed layout (then `keys` and `values` are null): key - keyBase << 32 | packed pointer.
    private val slots: Array[Long],
    private val keyBase: Long,
    // Bits each field of a pointer keeps in a packed slot.
    private val packedWidths: Array[Int]) {
  import LongPointerTable._

  private var count = 0

  /** Number of keys. */
  def size: Int = count

  /** Number of slots. */
  def capacity: Int = if (slots != null) slots.length else keys.length

  /** Whether slots are packed into one `long` each. */
  def isPacked: Boolean = slots != null

  /** Heap bytes of the arrays, their JVM headers included. */
  def heapBytes: Long =
    if (slots != null) 8L * slots.length + ArrayHeaderBytes + ObjectBytes
    else 16L * keys.length + 2 * ArrayHeaderBytes + ObjectBytes

  private def pack(pointer: Long): Long = {
    var out = 0L
    var shift = 64
    var i = 0
    while (i < fields.length) {
      shift -= fields(i)
      out = (out << packedWidths(i)) | ((pointer >>> shift) & mask(fields(i)))
      i += 1
    }
    out
  }

  private def unpack(packed: Long): Long = {
    var out = 0L
    var shift = 0
    var i = fields.length - 1
    var from = 0
    while (i >= 0) {
      out |= ((packed >>> from) & mask(packedWidths(i))) << shift
      from += packedWidths(i)
      shift += fields(i)
      i -= 1
    }
    out
  }

  private def getPacked(key: Long): Long = {
    val k = key - keyBase
    // Modular distance: a key below the base or too far above it is absent.
    if (java.lang.Long.compareUnsigned(k, MaxKeyDistance) > 0) return Empty
    val ss = slots
    var i = slot(key, ss.length)
    while (true) {
      val s = ss(i)
      if (s == EmptySlot) return Empty
      if ((s >>> 32) == k) return unpack(s & 0xffffffffL)
      i += 1
      if (i == ss.length) i = 0
    }
    Empty
  }

  /** The pointer of `key`, or -1 when the key is absent. */
  def get(key: Long): Long = {
    if (slots != null) return getPacked(key)
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
    if (slots != null) throw new IllegalStateException("a trimmed table is never written")
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

  /**
   * This table at the smallest capacity that keeps its load at most 0.75, packed when its keys
   * and pointers fit (this one if it is already as small and cannot be packed).
   */
  def trimmed(): LongPointerTable = {
    if (slots != null) return this
    val tight = capacityFor(count)
    packedForm(tight).getOrElse {
      if (tight >= keys.length) this
      else {
        val out = new LongPointerTable(new Array[Long](tight), emptyValues(tight), fields, null, 0L, null)
        foreach((k, v) => out.put(k, v))
        out
      }
    }
  }

  // The packed table of these entries at `capacity` slots, if they fit in 32 + 32 bits.
  private def packedForm(capacity: Int): Option[LongPointerTable] = {
    if (count == 0) return None
    var minKey = Long.MaxValue
    var maxKey = Long.MinValue
    val maxField = new Array[Long](fields.length)
    foreach { (k, v) =>
      if (k < minKey) minKey = k
      if (k > maxKey) maxKey = k
      var shift = 64
      var i = 0
      while (i < fields.length) {
        shift -= fields(i)
        maxField(i) = math.max(maxField(i), (v >>> shift) & mask(fields(i)))
        i += 1
      }
    }
    val widths = maxField.map(m => 64 - java.lang.Long.numberOfLeadingZeros(m))
    val spread = maxKey - minKey
    // A key distance of all ones would make the slot -1 (empty) whatever the pointer.
    if (spread < 0 || spread > MaxKeyDistance || widths.sum > 32) None
    else {
      val out = new LongPointerTable(null, null, fields, emptyValues(capacity), minKey, widths)
      val ss = out.slots
      foreach { (k, v) =>
        var i = slot(k, ss.length)
        while (ss(i) != EmptySlot) {
          i += 1
          if (i == ss.length) i = 0
        }
        ss(i) = ((k - minKey) << 32) | out.pack(v)
      }
      out.count = count
      Some(out)
    }
  }

  /** Calls `f(key, pointer)` for every entry, in slot order. */
  def foreach(f: (Long, Long) => Unit): Unit = {
    if (slots != null) {
      var i = 0
      while (i < slots.length) {
        val s = slots(i)
        if (s != EmptySlot) f(keyBase + (s >>> 32), unpack(s & 0xffffffffL))
        i += 1
      }
      return
    }
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

  /**
   * An empty table that grows as keys are put. `fields` are the widths of the pointers' bit
   * fields, from the high bits down (one 64-bit field: the pointer is an opaque `long`).
   */
  def empty(fields: Array[Int] = Array(64)): LongPointerTable = {
    require(fields.sum == 64 && fields.forall(_ > 0), "pointer fields must cover 64 bits")
    new LongPointerTable(new Array[Long](0), new Array[Long](0), fields, null, 0L, null)
  }

  private val EmptySlot = -1L
  // Largest key distance from the base a packed slot holds: 2^32 - 2 (all ones is reserved).
  private val MaxKeyDistance = 0xfffffffeL

  private def mask(bits: Int): Long = if (bits >= 64) -1L else (1L << bits) - 1

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
    val out = empty(newestFirst.head.fields)
    newestFirst.reverseIterator.foreach(t => t.foreach((k, v) => out.put(k, v)))
    out.trimmed()
  }
}
