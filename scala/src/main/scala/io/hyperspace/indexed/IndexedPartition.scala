package io.hyperspace.indexed

import scala.collection.concurrent.TrieMap
import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.hyperspace.BlockSized
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * One partition of an Indexed DataFrame version (paper §III-C): rows stored as UnsafeRow bytes
 * in row batches, a concurrent trie from each key to a packed pointer to the newest row with
 * that key, and in front of every row a backward pointer to the previous row with the same key.
 *
 * A record is `[previous pointer: 8][row size: 4][padding: 4][UnsafeRow bytes]`, so rows stay
 * 8-byte aligned. A pointer packs the batch number (high 32 bits) and the record's offset in it
 * (low 32 bits); -1 ends a chain.
 *
 * A partition never changes once built. [[append]] makes a new partition that shares this one's
 * batches (appending into fresh batches of its own) and starts from an O(1) snapshot of this
 * one's trie, so any number of versions, divergent ones included, answer with their own rows.
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
    // Written only while this partition is built; children take snapshots of it.
    private val trie: TrieMap[AnyRef, java.lang.Long],
    private val batches: Array[Array[Byte]],
    private val fills: Array[Int],
    // batches(ownFrom..) were written by this version; the rest belong to its ancestors.
    private val ownFrom: Int,
    val rowCount: Long,
    val ownRowCount: Long,
    val keyCount: Long,
    // Trie entries this version added or re-pointed: the part of the trie it does not share.
    val ownTrieEntries: Long,
    private val ownKeyBytes: Long,
    val batchSize: Int) extends BlockSized with Serializable {

  import IndexedPartition._

  // A read-only snapshot never copies nodes on reads, which a mutable trie does after any
  // snapshot has been taken of it (as every append does).
  @transient private lazy val reader: scala.collection.Map[AnyRef, java.lang.Long] =
    trie.readOnlySnapshot()

  /** Number of fields of the stored rows. */
  def numFields: Int = schema.length

  /** Bytes of row batches this version allocated (shared ancestors' batches excluded). */
  def ownBatchBytes: Long = batches.iterator.drop(ownFrom).map(_.length.toLong).sum

  /** Bytes of all row batches this version reads, its ancestors' included. */
  def totalBatchBytes: Long = batches.iterator.map(_.length.toLong).sum

  /** Bytes of row data (records without unused batch space) this version reads. */
  def usedBatchBytes: Long = fills.iterator.map(_.toLong).sum

  /** Estimated heap bytes of the trie entries this version owns (not shared with ancestors). */
  def ownTrieBytes: Long = ownTrieEntries * TrieEntryBytes + ownKeyBytes

  /**
   * What the block manager accounts for this partition: the memory it added, not what it
   * shares with the version it was appended to (that is accounted to that version's block).
   */
  override def blockSizeInBytes: Long = ownBatchBytes + ownTrieBytes + 256L

  /** The newest-first pointers of the rows with key `key` (null matches nothing). */
  def pointers(key: AnyRef): Iterator[Long] = {
    if (key == null) return Iterator.empty
    val head = reader.getOrElse(key, null)
    if (head == null) Iterator.empty else new ChainIterator(head.longValue())
  }

  /** A reusable row view for [[rowAt]]. */
  def newRowView(): UnsafeRow = new UnsafeRow(numFields)

  /** Points `view` at the row stored at `pointer` and returns it. */
  def rowAt(pointer: Long, view: UnsafeRow): UnsafeRow = {
    val batch = batches((pointer >>> 32).toInt)
    val offset = Platform.BYTE_ARRAY_OFFSET + (pointer & 0xffffffffL).toInt
    view.pointTo(batch, offset + HeaderBytes, Platform.getInt(batch, offset + 8))
    view
  }

  /** The rows with key `key`, newest first, as one reused row view. */
  def lookup(key: AnyRef): Iterator[UnsafeRow] = {
    val view = newRowView()
    pointers(key).map(rowAt(_, view))
  }

  /** Every row in insertion order (null keys included), with its pointer; one reused view. */
  def scanWithPointers(): Iterator[(Long, UnsafeRow)] = new Iterator[(Long, UnsafeRow)] {
    private val view = newRowView()
    private var batch = 0
    private var offset = 0
    private def settle(): Unit =
      while (batch < batches.length && offset >= fills(batch)) { batch += 1; offset = 0 }
    override def hasNext: Boolean = { settle(); batch < batches.length }
    override def next(): (Long, UnsafeRow) = {
      settle()
      val pointer = (batch.toLong << 32) | offset
      rowAt(pointer, view)
      offset += HeaderBytes + view.getSizeInBytes
      (pointer, view)
    }
  }

  /** Every row in insertion order, as one reused row view. */
  def iterator: Iterator[UnsafeRow] = scanWithPointers().map(_._2)

  /**
   * A new version with `rows` appended (rows of this partition's schema). This partition is
   * left as it is and keeps answering with its own rows.
   */
  def append(rows: Iterator[InternalRow]): IndexedPartition =
    write(this, schema, keyOrdinal, codec, batchSize, trie.snapshot(), batches, fills, rows,
      rowCount, keyCount)

  private def previousOf(pointer: Long): Long = {
    val batch = batches((pointer >>> 32).toInt)
    Platform.getLong(batch, Platform.BYTE_ARRAY_OFFSET + (pointer & 0xffffffffL).toInt)
  }

  private final class ChainIterator(private var next0: Long) extends Iterator[Long] {
    override def hasNext: Boolean = next0 != -1L
    override def next(): Long = {
      val p = next0
      next0 = previousOf(p)
      p
    }
  }

  // Java serialization (replicated or serialized storage levels, disk spill) writes the rows and
  // the trie's pointers once; keys are re-read from the rows. Ancestors' batches are copied in:
  // a deserialized partition shares nothing.
  private def writeReplace(): AnyRef = {
    val pointers = reader.valuesIterator.map(_.longValue()).toArray
    new SerializedPartition(schema, keyOrdinal, batchSize, batches, fills, pointers, rowCount)
  }
}

/** The serialized form of an [[IndexedPartition]]. */
private final class SerializedPartition(
    schema: StructType,
    keyOrdinal: Int,
    batchSize: Int,
    batches: Array[Array[Byte]],
    fills: Array[Int],
    pointers: Array[Long],
    rowCount: Long) extends Serializable {

  private def readResolve(): AnyRef =
    IndexedPartition.restore(schema, keyOrdinal, batchSize, batches, fills, pointers, rowCount)
}

object IndexedPartition {

  /** Bytes in front of every stored row. */
  val HeaderBytes: Int = 16

  /** Bytes of a JVM byte array's header (compressed class pointers). */
  val ArrayHeaderBytes: Int = 16

  /** First batch allocated by a version: one OS page, as the paper's smallest batch. */
  val InitialBatchBytes: Int = 4096

  /**
   * Estimated heap bytes per trie entry (its S-node, the boxed pointer and its share of the
   * branching nodes), key object excluded: Spark's SizeEstimator measures about 89 bytes per
   * entry with a boxed long key on a 200K-entry trie (TrieSizeCalibrationSuite keeps this true).
   */
  val TrieEntryBytes: Long = 72L

  /** Builds a partition from `rows` (any InternalRow of `schema`), keyed on `keyOrdinal`. */
  def build(
      schema: StructType,
      keyOrdinal: Int,
      batchSize: Int,
      rows: Iterator[InternalRow]): IndexedPartition = {
    val codec = KeyCodec(schema(keyOrdinal).dataType)
    write(null, schema, keyOrdinal, codec, batchSize, TrieMap.empty[AnyRef, java.lang.Long],
      Array.empty, Array.empty, rows, 0L, 0L)
  }

  private def write(
      parent: IndexedPartition,
      schema: StructType,
      keyOrdinal: Int,
      codec: KeyCodec,
      batchSize: Int,
      trie: TrieMap[AnyRef, java.lang.Long],
      sharedBatches: Array[Array[Byte]],
      sharedFills: Array[Int],
      rows: Iterator[InternalRow],
      sharedRows: Long,
      sharedKeys: Long): IndexedPartition = {
    val toUnsafe = UnsafeProjection.create(schema)
    val view = new UnsafeRow(schema.length)
    val batches = ArrayBuffer.from(sharedBatches)
    val fills = ArrayBuffer.from(sharedFills)
    val ownFrom = batches.length
    var current: Array[Byte] = null
    var fill = 0
    var nextSize = InitialBatchBytes
    var added = 0L
    var newKeys = 0L
    var touched = 0L
    var keyBytes = 0L
    // Keys this append already wrote: re-pointing one again copies no further trie nodes.
    val seenOwn = new java.util.HashSet[AnyRef]()

    def startBatch(need: Int): Unit = {
      if (current != null) fills(fills.length - 1) = fill
      val size = math.max(need, nextSize - ArrayHeaderBytes)
      if (need <= batchSize - ArrayHeaderBytes) nextSize = math.min(batchSize, nextSize * 2)
      current = new Array[Byte](size)
      batches += current
      fills += 0
      fill = 0
    }

    while (rows.hasNext) {
      val row = rows.next() match {
        case u: UnsafeRow if u.numFields == schema.length => u
        case other => toUnsafe(other)
      }
      val size = row.getSizeInBytes
      val need = HeaderBytes + size
      if (current == null || fill + need > current.length) startBatch(need)
      val batchNo = batches.length - 1
      val pointer = (batchNo.toLong << 32) | fill
      val base = Platform.BYTE_ARRAY_OFFSET + fill
      row.writeToMemory(current, base + HeaderBytes)
      Platform.putInt(current, base + 8, size)
      // The key is read back from the stored copy, so a string key points into the batch.
      view.pointTo(current, base + HeaderBytes, size)
      val key = codec.key(view, keyOrdinal)
      if (key == null) {
        Platform.putLong(current, base, -1L)
      } else {
        val previous = trie.getOrElse(key, null)
        Platform.putLong(current, base, if (previous == null) -1L else previous.longValue())
        trie.update(key, java.lang.Long.valueOf(pointer))
        if (previous == null) {
          newKeys += 1
          keyBytes += codec.keyHeapBytes(key)
          if (parent != null) seenOwn.add(key)
        } else if (parent != null && seenOwn.add(key)) {
          touched += 1
        }
      }
      fill += need
      added += 1
    }
    if (current != null) fills(fills.length - 1) = fill
    val ownEntries = newKeys + touched
    new IndexedPartition(schema, keyOrdinal, codec, trie, batches.toArray, fills.toArray, ownFrom,
      sharedRows + added, added, sharedKeys + newKeys, ownEntries, keyBytes, batchSize)
  }

  private[indexed] def restore(
      schema: StructType,
      keyOrdinal: Int,
      batchSize: Int,
      batches: Array[Array[Byte]],
      fills: Array[Int],
      pointers: Array[Long],
      rowCount: Long): IndexedPartition = {
    val codec = KeyCodec(schema(keyOrdinal).dataType)
    val trie = TrieMap.empty[AnyRef, java.lang.Long]
    val view = new UnsafeRow(schema.length)
    var keyBytes = 0L
    pointers.foreach { p =>
      val batch = batches((p >>> 32).toInt)
      val offset = Platform.BYTE_ARRAY_OFFSET + (p & 0xffffffffL).toInt
      view.pointTo(batch, offset + HeaderBytes, Platform.getInt(batch, offset + 8))
      val key = codec.key(view, keyOrdinal)
      keyBytes += codec.keyHeapBytes(key)
      trie.update(key, java.lang.Long.valueOf(p))
    }
    new IndexedPartition(schema, keyOrdinal, codec, trie, batches, fills, 0, rowCount, rowCount,
      pointers.length.toLong, pointers.length.toLong, keyBytes, batchSize)
  }
}
