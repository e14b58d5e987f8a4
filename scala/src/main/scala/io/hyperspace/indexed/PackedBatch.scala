package io.hyperspace.indexed

import java.util.concurrent.ConcurrentLinkedQueue

import com.github.luben.zstd.{Zstd, ZstdCompressCtx, ZstdDecompressCtx}
import net.jpountz.lz4.LZ4Factory

import io.hyperspace.HyperspaceException

/**
 * How an Indexed DataFrame keeps its sealed row batches: as written (`none`), or compressed in
 * blocks of about `blockBytes` with `codec` (`lz4`, `zstd`), so that a lookup decodes only the
 * block holding a row. `compactRows`: rows are written in the [[CompactRows]] form where it
 * applies (keys of one long value, atomic columns, `none`), else as UnsafeRows.
 */
final case class BatchPacking(codec: String, blockBytes: Int, compactRows: Boolean = false) {
  def enabled: Boolean = codec != "none"
  private[indexed] def blockCodec: BlockCodec = BlockCodec(codec)
}

object BatchPacking {
  val Plain: BatchPacking = BatchPacking("none", 4096)
  val Codecs: Set[String] = Set("none", "lz4", "zstd")
}

/** A codec of single blocks (no framing: the sizes are in the [[PackedBatch]] directory). */
private[indexed] sealed trait BlockCodec extends Serializable {
  def name: String
  def maxCompressedLength(length: Int): Int
  /** Compresses `src[srcOffset, +length)` into `dst` from 0; returns the compressed length. */
  def compress(src: Array[Byte], srcOffset: Int, length: Int, dst: Array[Byte]): Int
  /** Decodes `src[srcOffset, +length)` into exactly `dst[dstOffset, +dstLength)`. */
  def decompress(src: Array[Byte], srcOffset: Int, length: Int, dst: Array[Byte], dstOffset: Int,
      dstLength: Int): Unit
}

private[indexed] object BlockCodec {
  def apply(name: String): BlockCodec = name match {
    case "lz4" => Lz4Block
    case "zstd" => ZstdBlock
    case other => throw new HyperspaceException(s"Unknown Indexed DataFrame batch codec '$other'; " +
        s"use one of ${BatchPacking.Codecs.toSeq.sorted.mkString(", ")}.")
  }
}

/** LZ4 (lz4-java, a Spark dependency): the fastest to decode. */
private[indexed] case object Lz4Block extends BlockCodec {
  @transient private lazy val factory = LZ4Factory.fastestInstance()
  override def name: String = "lz4"
  override def maxCompressedLength(length: Int): Int = factory.fastCompressor().maxCompressedLength(length)
  override def compress(src: Array[Byte], srcOffset: Int, length: Int, dst: Array[Byte]): Int =
    factory.fastCompressor().compress(src, srcOffset, length, dst, 0, dst.length)
  override def decompress(src: Array[Byte], srcOffset: Int, length: Int, dst: Array[Byte],
      dstOffset: Int, dstLength: Int): Unit = {
    val n = factory.safeDecompressor().decompress(src, srcOffset, length, dst, dstOffset, dstLength)
    if (n != dstLength) throw new IllegalStateException(s"lz4 block decoded to $n bytes, not $dstLength")
  }
}

/**
 * Zstandard at level 1 (zstd-jni, a Spark dependency): about a third smaller than LZ4 on rows.
 * Native contexts are pooled (at most one per concurrently decoding thread, kept for the JVM's
 * life): creating one per block would cost more than decoding it.
 */
private[indexed] case object ZstdBlock extends BlockCodec {
  private val decoders = new ConcurrentLinkedQueue[ZstdDecompressCtx]()
  private val encoders = new ConcurrentLinkedQueue[ZstdCompressCtx]()
  override def name: String = "zstd"
  override def maxCompressedLength(length: Int): Int = Zstd.compressBound(length.toLong).toInt
  override def compress(src: Array[Byte], srcOffset: Int, length: Int, dst: Array[Byte]): Int = {
    val ctx = Option(encoders.poll()).getOrElse(new ZstdCompressCtx().setLevel(1))
    try ctx.compressByteArray(dst, 0, dst.length, src, srcOffset, length)
    finally encoders.offer(ctx)
  }
  override def decompress(src: Array[Byte], srcOffset: Int, length: Int, dst: Array[Byte],
      dstOffset: Int, dstLength: Int): Unit = {
    val ctx = Option(decoders.poll()).getOrElse(new ZstdDecompressCtx())
    val n = try ctx.decompressByteArray(dst, dstOffset, dstLength, src, srcOffset, length)
    finally decoders.offer(ctx)
    if (n != dstLength) throw new IllegalStateException(s"zstd block decoded to $n bytes, not $dstLength")
  }
}

/**
 * A sealed row batch compressed in blocks. Blocks hold whole records (a block ends at the first
 * record boundary at or past the block size), so a record is decoded from one block. `starts`
 * has each block's offset in the uncompressed batch and then the batch's fill; block `k` is
 * `chunks(chunkOf(k))` up to `ends(k)`, from the previous block's end in the same chunk (or 0).
 * Pointers keep addressing uncompressed offsets.
 *
 * The compressed bytes are in chunks of at most [[PackedBatch.ChunkBytes]]: G1 gives an array
 * of half a heap region or more whole regions of its own (regions are 1 MB and up), so one
 * array of an arbitrary ~1 MB per batch would take up to twice its size of heap.
 */
private[indexed] final class PackedBatch(
    val codec: BlockCodec,
    val chunks: Array[Array[Byte]],
    val chunkOf: Array[Int],
    val starts: Array[Int],
    val ends: Array[Int]) extends Serializable {

  def blocks: Int = ends.length

  // Every block but the last is at least 2^windowShift long, so a window of that many bytes
  // holds at most one block start: the block of an offset is its window's first block or the
  // next one (a lookup per row read, where a binary search cost as much as the decoding).
  private val windowShift: Int = {
    val shortest = (0 until blocks - 1).iterator.map(k => starts(k + 1) - starts(k)).minOption
    31 - Integer.numberOfLeadingZeros(math.max(1, shortest.getOrElse(starts(blocks))))
  }
  @transient private lazy val windowFirst: Array[Int] = {
    val windows = new Array[Int]((starts(blocks) >> windowShift) + 1)
    var k = 0
    windows.indices.foreach { w =>
      while (k + 1 < blocks && starts(k + 1) <= (w << windowShift)) k += 1
      windows(w) = k
    }
    windows
  }

  /** Heap bytes: the compressed chunks and the directory, with their array headers. */
  def heapBytes: Long = chunks.iterator.map(16L + _.length).sum + 16L + 4L * chunks.length +
    4 * 16L +
    4L *
    (starts.length + ends.length + chunkOf.length + (starts(blocks) >> windowShift) + 1) + 32L

  /** The block holding the record at uncompressed `offset`. */
  def blockOf(offset: Int): Int = {
    var k = windowFirst(offset >> windowShift)
    while (k + 1 < blocks && starts(k + 1) <= offset) k += 1
    k
  }

  def blockLength(block: Int): Int = starts(block + 1) - starts(block)

  /** Decodes `block` into `dst` from `dstOffset` (at least [[blockLength]] bytes there). */
  def decode(block: Int, dst: Array[Byte], dstOffset: Int): Unit = {
    val chunk = chunkOf(block)
    val from = if (block == 0 || chunkOf(block - 1) != chunk) 0 else ends(block - 1)
    codec.decompress(chunks(chunk), from, ends(block) - from, dst, dstOffset, blockLength(block))
  }
}

private[indexed] object PackedBatch {

  /** Largest chunk of compressed bytes (with its array header: under half of a 1 MB region). */
  val ChunkBytes: Int = 256 * 1024 - 16

  /**
   * `batch[0, fill)` compressed in blocks, or None when that would not save an eighth of it.
   * `recordEnd(offset)` is the end of the record starting at `offset`.
   */
  def pack(batch: Array[Byte], fill: Int, packing: BatchPacking, recordEnd: Int => Int): Option[PackedBatch] = {
    val codec = packing.blockCodec
    val starts = scala.collection.mutable.ArrayBuilder.make[Int]
    val ends = scala.collection.mutable.ArrayBuilder.make[Int]
    val chunkOf = scala.collection.mutable.ArrayBuilder.make[Int]
    val chunks = scala.collection.mutable.ArrayBuffer[Array[Byte]]()
    var scratch = new Array[Byte](codec.maxCompressedLength(packing.blockBytes) + 64)
    val out = new java.io.ByteArrayOutputStream(math.min(ChunkBytes, fill / 2 + 64))
    var start = 0
    while (start < fill) {
      var end = start
      while (end < fill && end - start < packing.blockBytes) end = recordEnd(end)
      val need = codec.maxCompressedLength(end - start)
      if (scratch.length < need) scratch = new Array[Byte](need)
      val n = codec.compress(batch, start, end - start, scratch)
      if (out.size() > 0 && out.size() + n > ChunkBytes) {
        chunks += out.toByteArray
        out.reset()
      }
      out.write(scratch, 0, n)
      starts += start
      ends += out.size()
      chunkOf += chunks.length
      start = end
    }
    starts += fill
    if (out.size() > 0) chunks += out.toByteArray
    val packed = new PackedBatch(codec, chunks.toArray, chunkOf.result(), starts.result(), ends.result())
    if (packed.heapBytes <= fill - fill / 8) Some(packed) else None
  }
}
