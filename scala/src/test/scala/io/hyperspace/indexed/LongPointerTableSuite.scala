package io.hyperspace.indexed

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

/** The primitive key table and its layering over shared tables, against a plain Scala map. */
class LongPointerTableSuite extends AnyFunSuite {
  import LongPointerTable.Empty

  private def tableOf(entries: Iterable[(Long, Long)]): LongPointerTable = {
    val t = LongPointerTable.empty()
    entries.foreach { case (k, v) => t.put(k, v) }
    t
  }

  private def contents(t: LongPointerTable): Map[Long, Long] = {
    val b = Map.newBuilder[Long, Long]
    t.foreach((k, v) => b += k -> v)
    b.result()
  }

  test("an empty table finds nothing, any key") {
    val t = LongPointerTable.empty()
    Seq(0L, 1L, -1L, Long.MinValue, Long.MaxValue).foreach(k => assert(t.get(k) == Empty))
    assert(t.trimmed().get(5L) == Empty && t.size == 0)
  }

  test("zero, negative, min and max keys are ordinary keys; -1 cannot be a pointer") {
    val special = Seq(0L, -1L, 1L, Long.MinValue, Long.MaxValue, Long.MinValue + 1, Long.MaxValue - 1)
    val t = tableOf(special.zipWithIndex.map { case (k, i) => k -> i.toLong })
    special.zipWithIndex.foreach { case (k, i) => assert(t.get(k) == i.toLong, s"key $k") }
    assert(t.get(2L) == Empty && t.size == special.size)
    assert(t.trimmed().get(Long.MinValue) == 3L)
    intercept[IllegalArgumentException](t.put(7L, Empty))
  }

  test("put returns the previous pointer and overwrites it") {
    val t = LongPointerTable.empty()
    assert(t.put(42L, 1L) == Empty)
    assert(t.put(42L, 2L) == 1L)
    assert(t.get(42L) == 2L && t.size == 1)
  }

  test("colliding and clustered keys: differential against a map through growth and trimming") {
    val rand = new Random(11)
    // Keys equal in their low bits, in their high bits, multiples of partition counts, dense runs.
    val keys = (0 until 3000).map(i => i.toLong << 32) ++ (0 until 3000).map(i => i.toLong) ++
      (0 until 3000).map(i => i.toLong * 200) ++ (0 until 3000).map(i => -i.toLong * 16) ++
      (0 until 3000).map(_ => rand.nextLong())
    val expected = scala.collection.mutable.HashMap.empty[Long, Long]
    val t = LongPointerTable.empty()
    rand.shuffle(keys ++ keys.take(5000)).zipWithIndex.foreach { case (k, i) =>
      assert(t.put(k, i.toLong) == expected.getOrElse(k, Empty))
      expected(k) = i.toLong
    }
    assert(t.size == expected.size)
    val trimmed = t.trimmed()
    assert(trimmed.size == expected.size)
    assert(trimmed.size.toDouble / trimmed.capacity <= 0.75)
    assert(trimmed.size.toDouble / trimmed.capacity > 0.7, "trimmed to its load, not a power of two")
    Seq(t, trimmed).foreach { table =>
      expected.foreach { case (k, v) => assert(table.get(k) == v, s"key $k") }
      (0 until 2000).foreach { _ =>
        val k = rand.nextLong()
        assert(table.get(k) == expected.getOrElse(k, Empty))
      }
      assert(contents(table) == expected.toMap)
    }
    // 16 bytes a slot: ~21 bytes a key, not the ~88 of a trie of boxed longs.
    assert(trimmed.heapBytes.toDouble / trimmed.size < 22.0)
  }

  test("deltas over a shared base: newest layer wins and the base is never written") {
    val base = tableOf((0L until 1000L).map(k => k -> k)).trimmed()
    val before = contents(base)
    val deltaA = tableOf(Seq(5L -> 10005L, 2000L -> 12000L)).trimmed()
    val deltaB = tableOf(Seq(5L -> 20005L, 3000L -> 23000L)).trimmed()
    val (a, ownedA) = LongPointerTable.stack(deltaA, Array(base))
    val (b, ownedB) = LongPointerTable.stack(deltaB, Array(base))
    assert(ownedA == 1 && ownedB == 1 && (a.last eq base) && (b.last eq base))
    val la = new LongPointerTable.Layers(a)
    val lb = new LongPointerTable.Layers(b)
    assert(la.get(5L) == 10005L && lb.get(5L) == 20005L)
    assert(la.get(3000L) == Empty && lb.get(2000L) == Empty)
    assert(la.get(6L) == 6L && lb.get(999L) == 999L)
    assert(contents(base) == before)
    // Every key once, at its newest pointer.
    assert(la.heads.toSeq.sorted == ((0L until 1000L).filter(_ != 5L) ++ Seq(10005L, 12000L)).sorted)
    // An append that adds no keys owns no table.
    val (same, owned) = LongPointerTable.stack(LongPointerTable.empty().trimmed(), a)
    assert(owned == 0 && same.sameElements(a))
  }

  test("many versions: each answers with its own keys, lookups stay within MaxLayers tables") {
    val rand = new Random(3)
    val base = tableOf((0L until 5000L).map(k => k -> k)).trimmed()
    // Each version: its layers and the map it must answer with.
    var versions = Vector((Array(base), (0L until 5000L).map(k => k -> k).toMap))
    (1 to 200).foreach { v =>
      val (parentLayers, parentMap) = versions(rand.nextInt(versions.size)) // divergent too
      val own = (0 until 1 + rand.nextInt(40)).map { _ =>
        val k = if (rand.nextBoolean()) rand.nextInt(5000).toLong else rand.nextLong()
        k -> (1000000L * v + rand.nextInt(1000000))
      }.toMap
      val (layers, _) = LongPointerTable.stack(tableOf(own).trimmed(), parentLayers)
      assert(layers.length <= LongPointerTable.MaxLayers, s"version $v")
      versions :+= (layers -> (parentMap ++ own))
    }
    versions.zipWithIndex.foreach { case ((layers, expected), v) =>
      val l = new LongPointerTable.Layers(layers)
      expected.foreach { case (k, p) => assert(l.get(k) == p, s"version $v key $k") }
      assert(l.heads.size == expected.size, s"version $v")
      assert(l.get(-424242424242L) == Empty)
    }
    assert(contents(base) == (0L until 5000L).map(k => k -> k).toMap)
  }

  test("a long series of small appends keeps the big base shared") {
    val base = tableOf((0L until 100000L).map(k => k -> k)).trimmed()
    var layers = Array(base)
    (1 to 100).foreach { v =>
      layers = LongPointerTable.stack(tableOf(Seq((200000L + v) -> v.toLong)).trimmed(), layers)._1
      assert(layers.last eq base, s"append $v copied the base")
    }
    val l = new LongPointerTable.Layers(layers)
    (1 to 100).foreach(v => assert(l.get(200000L + v) == v.toLong))
    assert(l.get(77L) == 77L)
  }

  test("packed slots: keys within 2^32 - 2 of each other and short pointers, one long a slot") {
    val rand = new Random(5)
    val bases = Seq(0L, -7L, Long.MinValue, Long.MaxValue - 3000000L, 1L << 40)
    bases.foreach { base =>
      val expected = (0 until 20000).map { _ =>
        val k = base + rand.nextInt(3000000)
        k -> IndexedPartition.pointer(rand.nextInt(12), rand.nextInt(1 << 19) << 3, 1 + rand.nextInt(20))
      }.toMap
      val t = LongPointerTable.empty(IndexedPartition.PointerFields)
      expected.foreach { case (k, v) => t.put(k, v) }
      val packed = t.trimmed()
      assert(packed.isPacked && !t.isPacked && packed.size == expected.size)
      // 8 bytes a slot at a load of 0.75: under 11 bytes a key (two arrays: ~21).
      assert(packed.heapBytes.toDouble / packed.size < 11.0, s"base $base")
      expected.foreach { case (k, v) => assert(packed.get(k) == v, s"base $base key $k") }
      assert(contents(packed) == expected)
      // Absent keys: next to present ones, below the base, 2^32 away (same low bits of the
      // distance), and the extremes.
      val probes = expected.keys.take(300).flatMap(k => Seq(k + 1, k - 1, k + (1L << 32), k - (1L << 32))) ++
        Seq(base - 1, base + 0xffffffffL, base + 0xfffffffeL, Long.MinValue, Long.MaxValue, 0L, -1L)
      probes.foreach(k => assert(packed.get(k) == expected.getOrElse(k, Empty), s"base $base absent $k"))
      intercept[IllegalStateException](packed.put(base, 1L))
    }
  }

  test("tables whose keys or pointers do not fit 32 + 32 bits stay two arrays") {
    val fields = IndexedPartition.PointerFields
    def trimmedOf(entries: Seq[(Long, Long)]): LongPointerTable = {
      val t = LongPointerTable.empty(fields)
      entries.foreach { case (k, v) => t.put(k, v) }
      t.trimmed()
    }
    val small = IndexedPartition.pointer(1, 64, 6)
    assert(trimmedOf(Seq(0L -> small, 0xfffffffeL -> small)).isPacked)
    assert(!trimmedOf(Seq(0L -> small, 0xffffffffL -> small)).isPacked)
    assert(!trimmedOf(Seq(Long.MinValue -> small, Long.MaxValue -> small)).isPacked)
    // A row alone in its batch has all 17 size bits set; with a large offset and batch: 46 bits.
    val wide = IndexedPartition.pointer(5000, 8 << 20, IndexedPartition.SizeEscape)
    val t = trimmedOf(Seq(1L -> small, 2L -> wide))
    assert(!t.isPacked && t.get(2L) == wide && t.get(1L) == small)
    // Merging packed layers keeps the pointer fields: the merged table is packed again.
    val layers = (0 until LongPointerTable.MaxLayers + 1).foldLeft(Array.empty[LongPointerTable]) { (acc, v) =>
      LongPointerTable.stack(trimmedOf(Seq(v.toLong -> IndexedPartition.pointer(v, 8 * v, 6))), acc)._1
    }
    assert(layers.length < LongPointerTable.MaxLayers + 1 && layers.forall(_.isPacked))
    val l = new LongPointerTable.Layers(layers)
    (0 to LongPointerTable.MaxLayers).foreach(v => assert(l.get(v.toLong) == IndexedPartition.pointer(v, 8 * v, 6)))
  }
}
