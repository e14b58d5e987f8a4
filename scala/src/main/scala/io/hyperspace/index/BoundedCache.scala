package io.hyperspace.index

/**
 * A thread-safe map holding at most `maxEntries` values, and values of at most `maxWeight` in
 * total as `weigh` measures them, dropping the least recently used ones first. Planning caches
 * (log entries, file sets, sketch tables) use it so that a long-running driver that sees many
 * indexes, many versions of one, or a few huge ones, does not grow without bound. A single value
 * heavier than `maxWeight` is still kept (alone), so the newest lookup is always served.
 */
final class BoundedCache[K, V](maxEntries: Int, maxWeight: Long = Long.MaxValue, weigh: V => Long = (_: V) => 1L) {
  require(maxEntries > 0, "a cache holds at least one entry")
  require(maxWeight > 0, "a cache holds values of some weight")

  // Guarded by `map`.
  private var weight = 0L

  private val map = new java.util.LinkedHashMap[K, V](16, 0.75f, true)

  /** The value under `key`, if present. */
  def get(key: K): Option[V] = map.synchronized(Option(map.get(key)))

  /** Stores `value` under `key`, then drops the least recently used values while over a bound. */
  def put(key: K, value: V): Unit = map.synchronized {
    val previous = map.put(key, value)
    if (previous != null) weight -= weigh(previous)
    weight += weigh(value)
    val eldest = map.entrySet().iterator()
    while (map.size() > 1 && (map.size() > maxEntries || weight > maxWeight)) {
      weight -= weigh(eldest.next().getValue)
      eldest.remove()
    }
  }

  /**
   * The value under `key`, computed by `compute` (outside the lock, so a slow computation does
   * not block other keys; two threads may then both compute, and the later result is kept).
   */
  def getOrElseUpdate(key: K, compute: => V): V = get(key).getOrElse {
    val value = compute
    put(key, value)
    value
  }

  /** Drops every key `matches` accepts. */
  def removeIf(matches: K => Boolean): Unit = map.synchronized {
    val entries = map.entrySet().iterator()
    while (entries.hasNext) {
      val e = entries.next()
      if (matches(e.getKey)) {
        weight -= weigh(e.getValue)
        entries.remove()
      }
    }
  }

  /** Drops everything. */
  def clear(): Unit = map.synchronized {
    map.clear()
    weight = 0L
  }

  /** How many values are held. */
  def size: Int = map.synchronized(map.size())

  /** The total weight of the values held. */
  def totalWeight: Long = map.synchronized(weight)
}
