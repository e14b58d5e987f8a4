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
}
