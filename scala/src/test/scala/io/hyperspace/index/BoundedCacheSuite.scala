package io.hyperspace.index

import org.scalatest.funsuite.AnyFunSuite

class BoundedCacheSuite extends AnyFunSuite {

  test("holds at most maxEntries values, dropping the least recently used") {
    val cache = new BoundedCache[Int, String](3)
    (1 to 3).foreach(i => cache.put(i, s"v$i"))
    assert(cache.get(1).contains("v1")) // 1 is now the most recently used
    cache.put(4, "v4")
    assert(cache.size == 3 && cache.get(2).isEmpty && cache.get(1).nonEmpty && cache.get(4).nonEmpty)
    (5 to 100).foreach(i => cache.put(i, s"v$i"))
    assert(cache.size == 3)
  }

  test("holds values of at most maxWeight in total, keeping a single heavier value alone") {
    val cache = new BoundedCache[String, Seq[Int]](100, maxWeight = 10, weigh = _.size.toLong)
    cache.put("a", Seq.fill(4)(0))
    cache.put("b", Seq.fill(4)(0))
    assert(cache.totalWeight == 8 && cache.size == 2)
    cache.put("c", Seq.fill(4)(0)) // 12 > 10: the eldest goes
    assert(cache.get("a").isEmpty && cache.size == 2 && cache.totalWeight == 8)
    cache.put("c", Seq.fill(1)(0)) // replacing a value counts its new weight only
    assert(cache.totalWeight == 5)
    cache.put("huge", Seq.fill(50)(0))
    assert(cache.size == 1 && cache.get("huge").nonEmpty && cache.totalWeight == 50)
    cache.removeIf(_ == "huge")
    assert(cache.size == 0 && cache.totalWeight == 0)
    cache.put("d", Seq(1, 2))
    cache.clear()
    assert(cache.totalWeight == 0)
  }
}
