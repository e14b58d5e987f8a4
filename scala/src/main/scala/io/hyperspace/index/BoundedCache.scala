package io.hyperspace.index

/**
 * A thread-safe map holding at most `maxEntries` values, dropping the least recently used one
 * first. Planning caches (log entries, file sets, sketch tables) use it so that a long-running
 * driver that sees many indexes, or many versions of one, does not grow without bound.
 */
final class BoundedCache[K, V](maxEntries: Int) {
  require(maxEntries > 0, "a cache holds at least one entry")

  private val map = new java.util.LinkedHashMap[K, V](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[K, V]): Boolean = this.size() > maxEntries
  }

  /** The value under `key`, if present. */
  def get(key: K): Option[V] = map.synchronized(Option(map.get(key)))

  /** Stores `value` under `key`. */
  def put(key: K, value: V): Unit = map.synchronized { map.put(key, value); () }

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
    map.keySet().removeIf(k => matches(k))
    ()
  }

  /** Drops everything. */
  def clear(): Unit = map.synchronized(map.clear())

  /** How many values are held. */
  def size: Int = map.synchronized(map.size())
}
