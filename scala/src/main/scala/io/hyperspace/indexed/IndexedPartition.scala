package io.hyperspace.indexed

import scala.collection.concurrent.TrieMap
import scala.collection.mutable.ArrayBuffer

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.hyperspace.{BlockSized, TaskMemoryReservation}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

import io.hyperspace.HyperspaceException

/**
 * One partition of an Indexed DataFrame version (paper §III-C): rows stored as UnsafeRow bytes
 * in row batches, an index from each key to a packed pointer to the newest row with that key,
 * and in front of every row a link to the previous row with the same key.
 *
 * A pointer packs the batch number, the record's offset in it and the row's size (see
 * [[IndexedPartition.pointer]]), so a record is only `[link: 8][UnsafeRow bytes]`: the link is
 * the previous row's batch and offset with this row's own size in the size bits (a scan has no
 * pointer to take the size from). Rows stay 8-byte aligned. -1 is "no row".
 *
 * With a [[CompactRows]] form (`rowForm`) a record is instead `[link varints][compact row]`
 * and a pointer is the batch and the record's byte offset: see [[CompactRows]] and `write`.
 *
 * Keys whose value is one `long` (integral, date/time, floating point, small decimals; see
 * [[KeyCodec.isLong]]) are indexed in primitive [[LongPointerTable]]s; other keys in a
 * `TrieMap`.
 *
 * A partition never changes once built. [[append]] makes a new partition that shares this one's
 * batches (appending into fresh batches of its own) and this one's key index: a long-keyed
 * child puts only its own keys into a table of its own, looked up before the shared ones; a
 * trie-keyed child starts from an O(1) snapshot of the trie. Any number of versions, divergent
 * ones included, answer with their own rows.
 *
 * Batches grow geometrically from 4 KB up to the batch size (small partitions stay small) and
 * are never copied or resized once allocated: string keys in the trie point into them. A batch
 * with its JVM array header is exactly that size: G1 keeps arrays over half a heap region in
 * whole regions, so a 4 MB array plus its header would take two 4 MB regions.
 */
final class IndexedPartition private (
    val schema: StructType,
    val keyOrdinal: Int,
    val codec: KeyCodec,
    // Written only while this partition is built; children share it read-only.
    private val heads: KeyHeads,
    // A batch's bytes; empty for a packed batch (its compressed blocks are in `packs`).
    private val batches: Array[Array[Byte]],
    // Each batch's uncompressed fill, packed or not.
    private val fills: Array[Int],
    // Null for a batch kept as written; a batch's compressed blocks otherwise.
    private val packs: Array[PackedBatch],
    // batches(ownFrom..) were written by this version; the rest belong to its ancestors.
    private val ownFrom: Int,
    val rowCount: Long,
    val ownRowCount: Long,
    val keyCount: Long,
    // Index entries this version added or re-pointed: the part of the index it does not share.
    val ownTrieEntries: Long,
    val batchSize: Int,
    val packing: BatchPacking,
    // The compact form of the stored rows ([[CompactRows]]); null: UnsafeRows.
    private[indexed] val rowForm: CompactRows) extends BlockSized with Serializable {

  import IndexedPartition._

  /** Number of fields of the stored rows. */
  def numFields: Int = schema.length

  /** Bytes of row batches this version allocated (shared ancestors' batches excluded). */
  def ownBatchBytes: Long = (ownFrom until batches.length).iterator.map(heapBytesOf).sum

  /** Bytes of all row batches this version reads, its ancestors' included. */
  def totalBatchBytes: Long = batches.indices.iterator.map(heapBytesOf).sum

  /** The lengths of the arrays of compressed bytes this version reads. */
  private[indexed] def packedChunkLengths: Seq[Int] =
    packs.iterator.filter(_ != null).flatMap(_.chunks.map(_.length)).toSeq

  /** Row batches this version reads that are compressed. */
  def packedBatches: Int = packs.count(_ != null)

  /** Bytes a [[Reader]] needs to keep every block of the packed batches this version reads decoded. */
  def decodedBlocksBytes: Long =
    packs.iterator.filter(_ != null).map(_.blocks.toLong).sum * (packing.blockBytes + 1024)

  private def heapBytesOf(batch: Int): Long =
    if (packs(batch) == null) batches(batch).length.toLong else packs(batch).heapBytes

  /** Bytes of row data (records without unused batch space) this version reads. */
  def usedBatchBytes: Long = fills.iterator.map(_.toLong).sum

  /** Heap bytes (measured for tables, estimated for a trie) of the key index this version owns. */
  def ownTrieBytes: Long = heads.ownBytes

  /** Whether the keys are in primitive tables (else in a trie). */
  def hasLongKeys: Boolean = heads.isInstanceOf[LongHeads]

  /**
   * What the block manager accounts for this partition: the memory it added, not what it
   * shares with the version it was appended to (that is accounted to that version's block).
   */
  override def blockSizeInBytes: Long = ownBatchBytes + ownTrieBytes + dictionaryBytes + 256L

  /**
   * Heap bytes of the compact form's dictionaries. A version's dictionaries are copies of its
   * parent's with its own values added, so each version accounts for all of them.
   */
  def dictionaryBytes: Long = if (rowForm == null) 0L else rowForm.dictionaryBytes

  /** Whether rows are stored in the compact form (else as UnsafeRows). */
  def isCompact: Boolean = rowForm != null

  /** The newest-first pointers of the rows with key `key` (a [[KeyCodec.key]]; null matches nothing). */
  def pointers(key: AnyRef): Iterator[Long] =
    if (key == null) Iterator.empty else chain(heads.head(key))

  /** The newest-first pointers of the rows whose key is `row(ordinal)` (of the key's type). */
  def pointersOf(row: InternalRow, ordinal: Int): Iterator[Long] =
    if (row.isNullAt(ordinal)) Iterator.empty else chain(heads.headOfRow(row, ordinal))

  private def chain(head: Long): Iterator[Long] = chain(head, newReader())

  private def chain(head: Long, reader: Reader): Iterator[Long] =
    if (head == NoRow) Iterator.empty else new ChainIterator(head, reader)

  /** A reusable row view for [[rowAt]]. */
  def newRowView(): UnsafeRow = new UnsafeRow(numFields)

  /**
   * Reads rows and links, decoding the blocks of packed batches. `slots` decoded blocks are kept
   * (direct-mapped by batch and block), so a reader that comes back to a block does not decode
   * it again. Not thread-safe: one per task or iterator.
   */
  final class Reader private[IndexedPartition] (slots: Int, pool: ArrayBuffer[Array[Byte]] = null) {
    // With a slot for every block (a join task's reader), slots are taken in the order blocks are
    // first read, so the pages hold only the blocks read: a small probe side reads a few blocks
    // spread over the whole partition, and a slot per block number would allocate nearly every
    // page for them. With fewer slots than blocks, a block's slot is its number modulo the slots.
    private val dense = slots.toLong >= blockBase.last
    private val slotOfBlock = if (dense) new Array[Int](blockBase.last.toInt) else null // slot + 1
    private var nextSlot = 0
    private val slotKeys = if (dense) null else Array.fill(slots)(-1L)
    // Decoded blocks live in pages of equal slots, each allocated when a slot of it is first
    // used (or taken from `pool`, pages an earlier partition's reader of the task gave back): a
    // join task's blocks as thousands of small arrays would be copied over and over by young
    // collections, and as one array of them all it would be zeroed in full and be a G1
    // humongous object however few blocks the task reads. A page stays under 512 KB. A block
    // longer than a slot (a row much bigger than the block size) gets an array of its own.
    private val slotBytes = packing.blockBytes + 1024
    private val pageShift = 31 - Integer.numberOfLeadingZeros(math.max(1, (512 * 1024 - 16) / slotBytes))
    private val pageSlots = 1 << pageShift
    private val pages = new Array[Array[Byte]]((slots + pageSlots - 1) / pageSlots)
    private val oversized = new Array[Array[Byte]](slots)
    private var rowBuffer = new Array[Byte](64)
    // Offset in the array `locate` returned of the record it was asked for.
    private var at = 0
    // The compact form's decoded row, varint scratch and the end of the last record read.
    private val rowWriter = if (rowForm == null) null else rowForm.newRowWriter()
    private val scratch = new Array[Long](1)
    private[IndexedPartition] var lastEnd = 0
    // The columns a compact row is decoded with (null: all); the others are left null.
    private var wanted: Array[Boolean] = null

    /**
     * Decodes only the columns flagged in `columns` (of the stored schema) of the compact rows
     * this reader produces, leaving the others null; null decodes all. UnsafeRows are unaffected.
     */
    def decodeOnly(columns: Array[Boolean]): this.type = { wanted = columns; this }

    private def page(n: Int): Array[Byte] = {
      if (pages(n) == null) {
        val bytes = pageSlots * slotBytes
        val i = if (pool == null) -1 else pool.lastIndexWhere(_.length == bytes)
        pages(n) = if (i >= 0) pool.remove(i) else new Array[Byte](bytes)
      }
      pages(n)
    }

    /** Gives this reader's pages to its pool; the reader must not be used afterwards. */
    def release(): Unit = if (pool != null) {
      pages.indices.foreach { n => if (pages(n) != null) { pool += pages(n); pages(n) = null } }
    }

    private def locate(batch: Int, offset: Int): Array[Byte] = {
      val packed = packs(batch)
      if (packed == null) { at = offset; batches(batch) }
      else {
        val block = packed.blockOf(offset)
        val key = blockBase(batch) + block
        var slot = 0
        var decoded = false
        if (dense) {
          val s = slotOfBlock(key.toInt)
          if (s > 0) { slot = s - 1; decoded = true }
          else slot = nextSlot
        } else {
          // Consecutive blocks never share a slot; with a slot per block, none do.
          slot = if (key < slots) key.toInt else (key % slots).toInt
          decoded = slotKeys(slot) == key
        }
        val length = packed.blockLength(block)
        val big = length > slotBytes
        if (!decoded) {
          if (!dense) slotKeys(slot) = -1L
          if (big) {
            if (oversized(slot) == null || oversized(slot).length < length) oversized(slot) = new Array[Byte](length)
            packed.decode(block, oversized(slot), 0)
          } else {
            packed.decode(block, page(slot >>> pageShift), (slot & (pageSlots - 1)) * slotBytes)
          }
          if (dense) { slotOfBlock(key.toInt) = slot + 1; nextSlot += 1 }
          else slotKeys(slot) = key
        }
        if (big) { at = offset - packed.starts(block); oversized(slot) }
        else { at = (slot & (pageSlots - 1)) * slotBytes + offset - packed.starts(block); pages(slot >>> pageShift) }
      }
    }

    def linkAt(batch: Int, offset: Int): Long = {
      val bytes = locate(batch, offset)
      Platform.getLong(bytes, Platform.BYTE_ARRAY_OFFSET + at)
    }

    /**
     * Points `view` at the row stored at `pointer` and returns it. A packed row is copied out of
     * its decoded block (which a later link read may evict), so `view` stays valid until the
     * next call, as for a row of a plain batch.
     */
    def rowAt(pointer: Long, view: UnsafeRow): UnsafeRow = {
      if (rowForm != null) return compactRowAt(pointer, view)
      val b = batchOf(pointer)
      val size = rowSize(b, sizeWordsOf(pointer))
      val bytes = locate(b, offsetOf(pointer))
      if (packs(b) == null) view.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + at + HeaderBytes, size)
      else {
        if (rowBuffer.length < size) rowBuffer = new Array[Byte](math.max(size, rowBuffer.length * 2))
        System.arraycopy(bytes, at + HeaderBytes, rowBuffer, 0, size)
        view.pointTo(rowBuffer, Platform.BYTE_ARRAY_OFFSET, size)
      }
      view
    }

    // A compact row is decoded into this reader's row writer: `view` is valid until the next call.
    private def compactRowAt(pointer: Long, view: UnsafeRow): UnsafeRow = {
      val bytes = batches(batchOf(pointer))
      var pos = CompactRows.getVarLong(bytes, compactOffsetOf(pointer), scratch)
      if ((scratch(0) & 1L) != 0L) pos = CompactRows.getVarLong(bytes, pos, scratch)
      lastEnd = rowForm.decode(bytes, pos, rowWriter, scratch, wanted)
      val row = rowWriter.getRow
      view.pointTo(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes)
      view
    }

    /** The pointer of the previous row with the key of the compact row at `pointer`, or -1. */
    def compactLinkOf(pointer: Long): Long = {
      val b = batchOf(pointer)
      val offset = compactOffsetOf(pointer)
      val bytes = batches(b)
      val pos = CompactRows.getVarLong(bytes, offset, scratch)
      val v = scratch(0)
      if (v == 0L) NoRow
      else if ((v & 1L) == 0L) compactPointer(b, offset - (v >>> 1).toInt)
      else {
        CompactRows.getVarLong(bytes, pos, scratch)
        compactPointer((v >>> 1).toInt, scratch(0).toInt)
      }
    }

    /** The newest-first pointers of the rows whose key is `row(ordinal)`, read with this reader. */
    def pointersOf(row: InternalRow, ordinal: Int): Iterator[Long] =
      if (row.isNullAt(ordinal)) Iterator.empty else chain(heads.headOfRow(row, ordinal), this)

    /** The pointer of the newest row whose key is `row(ordinal)`, or [[IndexedPartition.NoRow]]. */
    def headOf(row: InternalRow, ordinal: Int): Long =
      if (row.isNullAt(ordinal)) NoRow else heads.headOfRow(row, ordinal)

    /** The pointer of the row before the one at `pointer` with the same key, or `NoRow`. */
    def previous(pointer: Long): Long =
      if (rowForm != null) compactLinkOf(pointer)
      else {
        val link = linkAt(batchOf(pointer), offsetOf(pointer))
        if (batchOf(link) == NoBatch) NoRow
        else {
          // The link has the previous row's place; its size is in that row's own link.
          val previousSize = linkAt(batchOf(link), offsetOf(link)) & SizeEscape
          (link & ~SizeEscape.toLong) | previousSize
        }
      }

    /** The pointers from `pointer` (included) down its key's chain, read with this reader. */
    def chainFrom(pointer: Long): Iterator[Long] = chain(pointer, this)
  }

  // The number of the first block of each batch among all packed batches' blocks.
  @transient private lazy val blockBase: Array[Long] =
    packs.scanLeft(0L)((n, p) => if (p == null) n else n + p.blocks)

  /** A reader for a few lookups: it keeps a handful of decoded blocks. */
  def newReader(): Reader = new Reader(8)

  /**
   * A reader for many random reads (a join task): it keeps up to `maxBytes` of decoded blocks,
   * as many as the partition has when they fit, in pages taken from `pool` when it has some.
   */
  def newReader(maxBytes: Long, pool: ArrayBuffer[Array[Byte]] = null): Reader = {
    val blocks = packs.iterator.filter(_ != null).map(_.blocks.toLong).sum
    val fit = maxBytes / (packing.blockBytes + 1024)
    new Reader(math.max(8L, math.min(blocks, fit)).toInt, pool)
  }

  /** Points `view` at the row stored at `pointer` (a single read; use a [[Reader]] for many). */
  def rowAt(pointer: Long, view: UnsafeRow): UnsafeRow = newReader().rowAt(pointer, view)

  // An escaped size is a row alone in its batch: the rest of the batch.
  private def rowSize(batch: Int, sizeWords: Int): Int =
    if (sizeWords == SizeEscape) fills(batch) - HeaderBytes else sizeWords << 3

  /** The rows with key `key`, newest first, as one reused row view. */
  def lookup(key: AnyRef): Iterator[UnsafeRow] = {
    val view = newRowView()
    val reader = newReader()
    (if (key == null) Iterator.empty else chain(heads.head(key), reader)).map(reader.rowAt(_, view))
  }

  /**
   * Every row in insertion order (null keys included), with its pointer; one reused view. With
   * `columns`, a compact row decodes only those (see [[Reader.decodeOnly]]).
   */
  def scanWithPointers(columns: Array[Boolean] = null): Iterator[(Long, UnsafeRow)] = new Iterator[(Long, UnsafeRow)] {
    private val view = newRowView()
    private val reader = new Reader(1).decodeOnly(columns)
    private var batch = 0
    private var offset = 0
    private def settle(): Unit =
      while (batch < batches.length && offset >= fills(batch)) { batch += 1; offset = 0 }
    override def hasNext: Boolean = { settle(); batch < batches.length }
    override def next(): (Long, UnsafeRow) = {
      settle()
      // A compact record delimits itself; an UnsafeRow record's size is in its header's link.
      val p =
        if (rowForm != null) compactPointer(batch, offset)
        else pointer(batch, offset, (reader.linkAt(batch, offset) & SizeEscape).toInt)
      reader.rowAt(p, view)
      offset = if (rowForm != null) reader.lastEnd else offset + HeaderBytes + view.getSizeInBytes
      (p, view)
    }
  }

  /** Every row in insertion order, as one reused row view. */
  def iterator: Iterator[UnsafeRow] = scanWithPointers().map(_._2)

  /**
   * A new version with `rows` appended (rows of this partition's schema). This partition is
   * left as it is and keeps answering with its own rows.
   */
  def append(rows: Iterator[InternalRow], partition: Int = -1): IndexedPartition =
    write(schema, keyOrdinal, codec, batchSize, packing, heads.childWriter(codec), batches, fills,
      packs, rows, rowCount, keyCount, partition, rowForm)

  private final class ChainIterator(private var next0: Long, reader: Reader) extends Iterator[Long] {
    override def hasNext: Boolean = next0 != NoRow
    override def next(): Long = {
      val p = next0
      next0 = reader.previous(p)
      p
    }
  }

  // Java serialization (replicated or serialized storage levels, disk spill) writes the rows and
  // each key's newest pointer once; keys are re-read from the rows. Ancestors' batches are
  // copied in: a deserialized partition shares nothing.
  private def writeReplace(): AnyRef =
    new SerializedPartition(schema, keyOrdinal, batchSize, packing, batches, fills, packs,
      heads.all.toArray, rowCount, rowForm)
}

/** The serialized form of an [[IndexedPartition]]. */
private final class SerializedPartition(
    schema: StructType,
    keyOrdinal: Int,
    batchSize: Int,
    packing: BatchPacking,
    batches: Array[Array[Byte]],
    fills: Array[Int],
    packs: Array[PackedBatch],
    pointers: Array[Long],
    rowCount: Long,
    rowForm: CompactRows) extends Serializable {

  private def readResolve(): AnyRef = IndexedPartition.restore(schema, keyOrdinal, batchSize,
    packing, batches, fills, packs, pointers, rowCount, rowForm)
}

object IndexedPartition {

  /** Bytes in front of every stored row: the link to the previous row with its key. */
  val HeaderBytes: Int = 8

  /** Bytes of a JVM byte array's header (compressed class pointers). */
  val ArrayHeaderBytes: Int = 16

  /** First batch allocated by a version: one OS page, as the paper's smallest batch. */
  val InitialBatchBytes: Int = 4096

  /** "No row": the end of a chain, an absent key. Its batch bits are [[NoBatch]]. */
  val NoRow: Long = -1L

  // A pointer is [batch: 20 bits][offset / 8: 27 bits][row size / 8: 17 bits]. Offsets and sizes
  // are multiples of 8 (UnsafeRows are word-aligned), so batches may be up to 1 GB (the batch
  // size's bound) and a row up to 1 MB; a bigger row gets a batch of its own and the size
  // SizeEscape, its size then being the batch's fill.
  private val OffsetBits = 27
  private val SizeBits = 17

  /** The widths of a pointer's fields from the high bits down: batch, offset / 8, size / 8. */
  private[indexed] val PointerFields: Array[Int] = Array(64 - OffsetBits - SizeBits, OffsetBits, SizeBits)

  /** The batch number of [[NoRow]]: no batch has it. */
  val NoBatch: Int = (1 << 20) - 1

  /** Row batches a partition can have (its ancestors' included). */
  val MaxBatches: Int = NoBatch

  /** The size bits of a row stored alone in its batch. */
  val SizeEscape: Int = (1 << SizeBits) - 1

  /** The pointer of the record at byte `offset` of batch `batch`, a row of `sizeWords` words. */
  def pointer(batch: Int, offset: Int, sizeWords: Int): Long =
    (batch.toLong << (OffsetBits + SizeBits)) | ((offset >>> 3).toLong << SizeBits) | sizeWords

  // A compact row's pointer is [batch: 20 bits][byte offset: 44 bits]: compact rows are not
  // word-aligned, and their size is in their encoding.
  private val CompactOffsetBits = OffsetBits + SizeBits

  private def compactPointer(batch: Int, offset: Int): Long = (batch.toLong << CompactOffsetBits) | offset.toLong
  private def compactOffsetOf(p: Long): Int = (p & ((1L << CompactOffsetBits) - 1)).toInt

  /** Most bytes of a compact record's link: a batch number and a byte offset as varints. */
  private val MaxLinkBytes = 10

  private def batchOf(p: Long): Int = (p >>> (OffsetBits + SizeBits)).toInt
  private def offsetOf(p: Long): Int = (((p >>> SizeBits) & ((1L << OffsetBits) - 1)) << 3).toInt
  private def sizeWordsOf(p: Long): Int = (p & SizeEscape).toInt

  /**
   * Estimated heap bytes per trie entry (its S-node, the boxed pointer and its share of the
   * branching nodes), key object excluded: Spark's SizeEstimator measures about 89 bytes per
   * entry with a boxed long key on a 200K-entry trie (TrieSizeCalibrationSuite keeps this true).
   */
  val TrieEntryBytes: Long = 72L

  /**
   * Builds a partition from `rows` (any InternalRow of `schema`), keyed on `keyOrdinal`.
   * `partition` is its number in the index, for error messages (-1: the running task's).
   */
  def build(
      schema: StructType,
      keyOrdinal: Int,
      batchSize: Int,
      rows: Iterator[InternalRow],
      packing: BatchPacking = BatchPacking.Plain,
      partition: Int = -1): IndexedPartition = {
    val codec = KeyCodec(schema(keyOrdinal).dataType)
    // The compact form needs keys outside the batches (a trie's string keys are views of the
    // stored UnsafeRows) and is not compressed further in blocks.
    val rowForm = if (packing.compactRows && !packing.enabled && codec.isLong && CompactRows.supports(schema)) {
      CompactRows(schema)
    } else null
    write(schema, keyOrdinal, codec, batchSize, packing, KeyHeads.writer(codec), Array.empty,
      Array.empty, Array.empty, rows, 0L, 0L, partition, rowForm)
  }

  private def write(
      schema: StructType,
      keyOrdinal: Int,
      codec: KeyCodec,
      batchSize: Int,
      packing: BatchPacking,
      index: HeadsWriter,
      sharedBatches: Array[Array[Byte]],
      sharedFills: Array[Int],
      sharedPacks: Array[PackedBatch],
      rows: Iterator[InternalRow],
      sharedRows: Long,
      sharedKeys: Long,
      partition: Int,
      rowForm: CompactRows): IndexedPartition = {
    // Rows from a shuffle are unsafe rows already; code is generated only for others.
    lazy val toUnsafe = UnsafeProjection.create(schema)
    val view = new UnsafeRow(schema.length)
    val batches = ArrayBuffer.from(sharedBatches)
    val fills = ArrayBuffer.from(sharedFills)
    val packs = ArrayBuffer.from(sharedPacks)
    val ownFrom = batches.length
    // Only when no key object points into the batches (single-long keys): a packed batch's
    // original is dropped.
    val packing0 = if (index.keysOutsideBatches) packing else BatchPacking.Plain
    var current: Array[Byte] = null
    var fill = 0
    var nextSize = InitialBatchBytes
    var added = 0L
    val memory = TaskMemoryReservation.forCurrentTask()
    var indexReserved = 0L

    // Every batch, and the key index's growth so far, is reserved before it is allocated: a
    // partition that does not fit in the memory the task can get fails here, clearly, rather than
    // taking the executor's heap down.
    def reserve(batchBytes: Long): Unit = memory.foreach { m =>
      val indexGrowth = index.heapBytes - indexReserved
      if (!m.reserve(batchBytes + indexGrowth)) {
        throw outOfTaskMemory(schema(keyOrdinal).name, partition,
          s"needs more than ${mb(m.reserved + batchBytes + indexGrowth)} to build ($added rows so far)", m.reserved)
      }
      indexReserved += indexGrowth
    }

    // A batch no later row goes into is compressed now (when it saves memory), so that the
    // partition never holds more than one uncompressed batch besides its packed ones.
    def seal(): Unit = if (packing0.enabled) {
      val b = batches.length - 1
      val plain = batches(b)
      val end = (offset: Int) => {
        val sizeWords = (Platform.getLong(plain, Platform.BYTE_ARRAY_OFFSET + offset) & SizeEscape).toInt
        if (sizeWords == SizeEscape) fills(b) else offset + HeaderBytes + (sizeWords << 3)
      }
      PackedBatch.pack(plain, fills(b), packing0, end).foreach { packed =>
        reserve(packed.heapBytes)
        batches(b) = Array.emptyByteArray
        packs(b) = packed
        memory.foreach(_.release(plain.length.toLong + ArrayHeaderBytes))
      }
    }

    def startBatch(need: Int, alone: Boolean): Unit = {
      if (current != null) { fills(fills.length - 1) = fill; seal() }
      if (batches.length >= MaxBatches) {
        throw new HyperspaceException(s"An Indexed DataFrame partition cannot have more than " +
          s"$MaxBatches row batches (its versions' included); create the index with more " +
          "partitions or a larger spark.hyperspace.indexed.batchSize.")
      }
      val size = if (alone) need else math.max(need, nextSize - ArrayHeaderBytes)
      if (need <= batchSize - ArrayHeaderBytes) nextSize = math.min(batchSize, nextSize * 2)
      reserve(size.toLong + ArrayHeaderBytes)
      current = new Array[Byte](size)
      batches += current
      fills += 0
      packs += null
      fill = 0
    }

    // Compact records are [link: varints][encoded row]: the link is 0 (no previous row with the
    // key), the distance back to it doubled (in this batch) or its batch doubled plus one and
    // then its offset.
    val rowWriter = if (rowForm == null) null else rowForm.writer()
    def writeCompact(row: InternalRow): Unit = {
      rowWriter.encode(row)
      val need = MaxLinkBytes + rowWriter.encodedLength
      val alone = need > batchSize - ArrayHeaderBytes
      if (alone || current == null || fill + need > current.length) startBatch(need, alone)
      val b = batches.length - 1
      val p = compactPointer(b, fill)
      val previous = if (row.isNullAt(keyOrdinal)) NoRow else index.swap(row, keyOrdinal, p)
      fill =
        if (previous == NoRow) CompactRows.putVarLong(current, fill, 0L)
        else if (batchOf(previous) == b)
          CompactRows.putVarLong(current, fill, (fill - compactOffsetOf(previous)).toLong << 1)
        else {
          val at = CompactRows.putVarLong(current, fill, (batchOf(previous).toLong << 1) | 1L)
          CompactRows.putVarLong(current, at, compactOffsetOf(previous).toLong)
        }
      System.arraycopy(rowWriter.encoded, 0, current, fill, rowWriter.encodedLength)
      fill += rowWriter.encodedLength
      added += 1
      if (alone) { fills(fills.length - 1) = fill; current = null }
    }

    try {
      if (rowWriter != null) while (rows.hasNext) writeCompact(rows.next())
      else while (rows.hasNext) {
        val row = rows.next() match {
          case u: UnsafeRow if u.numFields == schema.length => u
          case other => toUnsafe(other)
        }
        val size = row.getSizeInBytes
        val need = HeaderBytes + size
        // Too big for the size bits (or, never seen from Spark, not word-aligned): alone in a batch.
        val alone = size % 8 != 0 || (size >>> 3) >= SizeEscape
        if (alone || current == null || fill + need > current.length) startBatch(need, alone)
        val sizeWords = if (alone) SizeEscape else size >>> 3
        val p = pointer(batches.length - 1, fill, sizeWords)
        val base = Platform.BYTE_ARRAY_OFFSET + fill
        row.writeToMemory(current, base + HeaderBytes)
        // The key is read back from the stored copy, so a string key points into the batch.
        view.pointTo(current, base + HeaderBytes, size)
        val previous = if (view.isNullAt(keyOrdinal)) NoRow else index.swap(view, keyOrdinal, p)
        Platform.putLong(current, base, (previous & ~SizeEscape.toLong) | sizeWords)
        fill += need
        added += 1
        if (alone) { fills(fills.length - 1) = fill; seal(); current = null }
      }
      if (current != null) {
        fills(fills.length - 1) = fill
        seal()
        // The last batch's free tail would stay allocated for the life of the version (no later
        // write uses it: children write batches of their own). Only when no key object points into
        // the batch (single-long keys), so the copy frees the original.
        if (packs.last == null && index.keysOutsideBatches && fill < current.length &&
          memory.forall(_.reserve(fill.toLong))) {
          batches(batches.length - 1) = java.util.Arrays.copyOf(current, fill)
        }
      }
      new IndexedPartition(schema, keyOrdinal, codec, index.result(), batches.toArray, fills.toArray,
        packs.toArray, ownFrom, sharedRows + added, added, sharedKeys + index.newKeys,
        index.ownEntries, batchSize, packing, if (rowWriter == null) null else rowWriter.result())
    } finally {
      // The block manager accounts the partition once it stores it.
      memory.foreach(_.releaseAll())
    }
  }

  private def mb(bytes: Long): String = f"${bytes / 1048576.0}%.1f MB"

  /**
   * The error of this task's partition of the index on `keyColumn`, which `needs` (what for and
   * how much) more execution memory than the task can get, having `had` reserved.
   */
  private def outOfTaskMemory(keyColumn: String, partition: Int, needs: String, had: Long): HyperspaceException = {
    // One task may build several partitions (IndexedData.materialize): the task's number is only
    // the partition's when the caller does not know it.
    val which = if (partition >= 0) partition.toString
    else Option(TaskContext.get()).map(_.partitionId().toString).getOrElse("?")
    new HyperspaceException(s"Indexed DataFrame on '$keyColumn': partition $which $needs, more " +
      s"execution memory than its task can get (had ${mb(had)}). Create the index with more " +
      "partitions, or give the executors more memory (spark.executor.memory, spark.memory.fraction).")
  }

  private[indexed] def restore(
      schema: StructType,
      keyOrdinal: Int,
      batchSize: Int,
      packing: BatchPacking,
      batches: Array[Array[Byte]],
      fills: Array[Int],
      packs: Array[PackedBatch],
      pointers: Array[Long],
      rowCount: Long,
      rowForm: CompactRows): IndexedPartition = {
    val codec = KeyCodec(schema(keyOrdinal).dataType)
    val index = KeyHeads.writer(codec)
    val view = new UnsafeRow(schema.length)
    val part = new IndexedPartition(schema, keyOrdinal, codec, KeyHeads.writer(codec).result(),
      batches, fills, packs, 0, rowCount, rowCount, 0L, 0L, batchSize, packing, rowForm)
    // A partition read back (from disk, a serialized level or another executor) is held by the
    // task that reads it, outside the block manager's memory: its task reserves execution memory
    // for it, or fails clearly, until it ends.
    val memory = TaskMemoryReservation.forCurrentTask()
    memory.foreach(_ =>
      TaskContext.get().addTaskCompletionListener[Unit](_ =>
        memory.foreach(_.releaseAll())))
    def reserve(bytes: Long, what: String): Unit = memory.foreach { m =>
      if (!m.reserve(bytes)) {
        val had = m.reserved
        m.releaseAll()
        throw outOfTaskMemory(schema(keyOrdinal).name, -1,
          s"read back from its serialized form needs ${mb(had + bytes)} for its $what", had)
      }
    }
    reserve(part.totalBatchBytes, "row batches")
    val reader = part.newReader()
    var indexReserved = 0L
    pointers.iterator.zipWithIndex.foreach { case (p, i) =>
      index.swap(reader.rowAt(p, view), keyOrdinal, p)
      if ((i & 0xffff) == 0xffff) {
        reserve(index.heapBytes - indexReserved, "key index")
        indexReserved = index.heapBytes
      }
    }
    reserve(index.heapBytes - indexReserved, "key index")
    new IndexedPartition(schema, keyOrdinal, codec, index.result(), batches, fills, packs, 0, rowCount,
      rowCount, pointers.length.toLong, pointers.length.toLong, batchSize, packing, rowForm)
  }
}

/** A version's index from each key to its newest row's pointer; read-only once built. */
private[indexed] sealed trait KeyHeads {

  /** The newest pointer of the non-null key object `key` (a [[KeyCodec.key]]), or -1. */
  def head(key: AnyRef): Long

  /** The newest pointer of the non-null key `row(ordinal)`, or -1. */
  def headOfRow(row: InternalRow, ordinal: Int): Long

  /** Every key's newest pointer, once per key. */
  def all: Iterator[Long]

  /** Heap bytes of the part of the index this version does not share. */
  def ownBytes: Long

  /** A writer for a child version: starts from this index, never writes into it. */
  def childWriter(codec: KeyCodec): HeadsWriter
}

/** Builds the key index of one version while its rows are written. */
private[indexed] sealed trait HeadsWriter {

  /** Makes `pointer` the newest row of the non-null key `row(ordinal)`; returns the previous one or -1. */
  def swap(row: InternalRow, ordinal: Int, pointer: Long): Long

  /** Keys no older version had. */
  def newKeys: Long

  /** Keys this version added or re-pointed. */
  def ownEntries: Long

  /** Heap bytes written so far (measured for a table, estimated for a trie). */
  def heapBytes: Long

  /** Whether no key object refers to the row batches (they may then be copied). */
  def keysOutsideBatches: Boolean

  def result(): KeyHeads
}

private[indexed] object KeyHeads {
  def writer(codec: KeyCodec): HeadsWriter =
    if (codec.isLong) new LongHeadsWriter(codec, Array.empty)
    else new TrieHeadsWriter(codec, TrieMap.empty[AnyRef, java.lang.Long], isChild = false)
}

/** Long keys: the version's own table (if any), then the shared ones, newest first. */
private[indexed] final class LongHeads(codec: KeyCodec, layers: LongPointerTable.Layers, owned: Int)
  extends KeyHeads {
  override def head(key: AnyRef): Long = layers.get(codec.longOf(key))
  override def headOfRow(row: InternalRow, ordinal: Int): Long = layers.get(codec.longKey(row, ordinal))
  override def all: Iterator[Long] = layers.heads
  override def ownBytes: Long = layers.tables.iterator.take(owned).map(_.heapBytes).sum
  override def childWriter(codec: KeyCodec): HeadsWriter = new LongHeadsWriter(codec, layers.tables)
  /** Number of tables a lookup may probe. */
  def depth: Int = layers.tables.length
}

private final class LongHeadsWriter(codec: KeyCodec, shared: Array[LongPointerTable])
  extends HeadsWriter {
  private val own = LongPointerTable.empty(IndexedPartition.PointerFields)
  private val sharedLayers = new LongPointerTable.Layers(shared)
  private var added = 0L

  override def swap(row: InternalRow, ordinal: Int, pointer: Long): Long = {
    val key = codec.longKey(row, ordinal)
    val mine = own.put(key, pointer)
    if (mine != LongPointerTable.Empty) mine
    else {
      val older = sharedLayers.get(key)
      if (older == LongPointerTable.Empty) added += 1
      older
    }
  }
  override def newKeys: Long = added
  override def ownEntries: Long = own.size.toLong
  override def heapBytes: Long = own.heapBytes
  override def keysOutsideBatches: Boolean = true
  override def result(): KeyHeads = {
    val (tables, owned) = LongPointerTable.stack(own.trimmed(), shared)
    new LongHeads(codec, new LongPointerTable.Layers(tables), owned)
  }
}

/** Other keys: a concurrent trie, snapshotted in O(1) for a child. */
private[indexed] final class TrieHeads(
    codec: KeyCodec,
    trie: TrieMap[AnyRef, java.lang.Long],
    ownEntries: Long,
    ownKeyBytes: Long) extends KeyHeads {
  import IndexedPartition.TrieEntryBytes

  // A read-only snapshot never copies nodes on reads, which a mutable trie does after any
  // snapshot has been taken of it (as every append does).
  private lazy val reader: scala.collection.Map[AnyRef, java.lang.Long] = trie.readOnlySnapshot()

  override def head(key: AnyRef): Long = {
    val p = reader.getOrElse(key, null)
    if (p == null) LongPointerTable.Empty else p.longValue()
  }
  override def headOfRow(row: InternalRow, ordinal: Int): Long = head(codec.key(row, ordinal))
  override def all: Iterator[Long] = reader.valuesIterator.map(_.longValue())
  override def ownBytes: Long = ownEntries * TrieEntryBytes + ownKeyBytes
  override def childWriter(codec: KeyCodec): HeadsWriter =
    new TrieHeadsWriter(codec, trie.snapshot(), isChild = true)
}

private final class TrieHeadsWriter(
    codec: KeyCodec,
    trie: TrieMap[AnyRef, java.lang.Long],
    isChild: Boolean) extends HeadsWriter {
  private var added = 0L
  private var touched = 0L
  private var keyBytes = 0L
  // Keys this append already wrote: re-pointing one again copies no further trie nodes.
  private val seenOwn = new java.util.HashSet[AnyRef]()

  override def swap(row: InternalRow, ordinal: Int, pointer: Long): Long = {
    val key = codec.key(row, ordinal)
    val previous = trie.getOrElse(key, null)
    trie.update(key, java.lang.Long.valueOf(pointer))
    if (previous == null) {
      added += 1
      keyBytes += codec.keyHeapBytes(key)
      if (isChild) seenOwn.add(key)
    } else if (isChild && seenOwn.add(key)) {
      touched += 1
    }
    if (previous == null) LongPointerTable.Empty else previous.longValue()
  }
  override def newKeys: Long = added
  override def ownEntries: Long = added + touched
  override def heapBytes: Long = ownEntries * IndexedPartition.TrieEntryBytes + keyBytes
  // String keys are views of the stored rows.
  override def keysOutsideBatches: Boolean = false
  override def result(): KeyHeads = new TrieHeads(codec, trie, ownEntries, keyBytes)
}
