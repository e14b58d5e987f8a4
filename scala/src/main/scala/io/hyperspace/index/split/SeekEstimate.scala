package io.hyperspace.index.split

import org.apache.spark.sql.catalyst.analysis.Resolver
import org.apache.spark.sql.catalyst.expressions.{Attribute, EqualNullSafe, EqualTo, Expression, GreaterThan, GreaterThanOrEqual, In, InSet, LessThan, LessThanOrEqual, Literal}
import org.apache.spark.sql.types.{ByteType, DateType, IntegerType, LongType, ShortType}

import io.hyperspace.log.{ColumnStats, LogEntry}

/**
 * How much of a scan a seek is expected to read, from the index's build statistics alone
 * ([[io.hyperspace.log.LocationStats]]), before any index data is read.
 *
 * @param keys             key values the filter pins (the product over key columns of the values
 *                         each may take); every one is assumed to be a key of the index
 * @param rowGroupsPerKey  the mean number of source row groups a key's rows lie in
 * @param rowGroups        the estimated number of row groups of the indexed files listed
 * @param fraction         the expected share of the scan's bytes the seek reads: the row groups
 *                         `keys × rowGroupsPerKey` random hits reach, plus the files the index
 *                         does not cover, which are read whole
 */
case class SeekEstimate(keys: Long, rowGroupsPerKey: Double, rowGroups: Double, fraction: Double) {
  def describe: String =
    f"$keys key value(s) × $rowGroupsPerKey%.1f row group(s) per key among about ${rowGroups.round} row groups"
}

/**
 * What an estimate is computed from: the mean number of row groups a key's rows lie in, the
 * estimated number of row groups of the indexed files a scan lists, and the scan's bytes in files
 * the index covers and in files it does not (read whole).
 */
case class SeekLayout(rowGroupsPerKey: Double, rowGroups: Double, indexedBytes: Long, wholeBytes: Long) {

  /** The expected share of the scan's bytes a seek for `keys` key values reads. */
  def fraction(keys: Long): Double = {
    // Expected share of `rowGroups` reached by `keys × rowGroupsPerKey` independent uniform hits.
    val reached = 1.0 - math.pow(1.0 - 1.0 / rowGroups, keys.toDouble * rowGroupsPerKey)
    val total = indexedBytes + wholeBytes
    if (total == 0) 0.0 else (reached * indexedBytes + wholeBytes) / total
  }

  def estimate(keys: Long): SeekEstimate = SeekEstimate(keys, rowGroupsPerKey, rowGroups, fraction(keys))

  /**
   * The most key values whose seek is expected to read at most `maxFraction` of the scan's bytes
   * (0 when not even one's is), up to `upTo`. `fraction` grows with the keys, so a bisection.
   */
  def keysWithin(maxFraction: Double, upTo: Long): Long =
    if (fraction(1) > maxFraction) 0L
    else {
      var (lo, hi) = (1L, math.max(1L, upTo))
      while (lo < hi) {
        val mid = lo + (hi - lo + 1) / 2
        if (fraction(mid) <= maxFraction) lo = mid else hi = mid - 1
      }
      lo
    }
}

object SeekEstimate {

  /**
   * The estimated fraction above which a seek is refused before its lookup, for the fallback
   * threshold `maxReadFraction`: a third of the way from it to 1. The estimate is an expected
   * value under a random layout; near the threshold a wrong refusal loses a seek that pays, a
   * wrong lookup only costs the lookup (which then decides on the real bytes), so only estimates
   * clearly above the threshold skip it.
   */
  def refusedAbove(maxReadFraction: Double): Double = maxReadFraction + (1.0 - maxReadFraction) / 3

  /**
   * The estimate for `onKeys` (conjuncts over the key columns `keys` of `entry`) on a scan
   * listing `indexedBytes` of files the index covers and `wholeBytes` of files it does not; None
   * when it cannot be told: the log predates the statistics (some file has none), or some key
   * column is not pinned to literal values by `=`, `<=>` or `IN` — except a single integral or
   * date key bounded by literal ranges, whose keys in range are estimated from each index file's
   * key range ([[keysInRange]]); other predicates are looked up.
   *
   * Hits are taken as spread at random over the row groups (keys in no particular order in the
   * source); for data clustered on the key, `rowGroupsPerKey` is about 1 and the estimate stays
   * close. Approximate distinct counts summed over files overcount keys present in several files
   * of a bucket, which lowers the estimate: errors lean towards running the lookup.
   */
  def of(
      entry: LogEntry,
      keys: Seq[String],
      onKeys: Seq[Expression],
      resolver: Resolver,
      indexedBytes: Long,
      wholeBytes: Long): Option[SeekEstimate] =
    layout(entry, indexedBytes, wholeBytes).flatMap { l =>
      val pinned = keys.map(k => valuesPinned(onKeys, a => resolver(a.name, k)))
      if (pinned.forall(_.isDefined)) {
        Some(l.estimate(pinned.flatten.map(BigInt(_)).product.min(BigInt(Long.MaxValue)).toLong))
      } else keys match {
        case Seq(k) => keysInRange(entry, k, onKeys, a => resolver(a.name, k)).map(l.estimate)
        case _ => None
      }
    }

  /**
   * The index's layout from its build statistics, for a scan listing `indexedBytes` of files it
   * covers and `wholeBytes` of files it does not; None when the log predates the statistics.
   */
  def layout(entry: LogEntry, indexedBytes: Long, wholeBytes: Long): Option[SeekLayout] = {
    val stats = entry.content.files.map(_.stats.flatMap(s => s.locations.map(s.rowCount -> _)))
    if (stats.isEmpty || stats.exists(_.isEmpty)) return None
    val rows = stats.flatten.map(_._1).sum
    val located = stats.flatten.map(_._2)
    val distinctKeys = located.map(_.keys).sum
    if (rows == 0 || distinctKeys == 0) return None
    val perKey = math.max(1.0, located.map(_.keyRowGroups).sum.toDouble / distinctKeys)
    val meanGroupBytes = math.max(1.0, located.map(_.rowGroupBytes).map(BigDecimal(_)).sum.toDouble / rows)
    Some(SeekLayout(perKey, math.max(1.0, indexedBytes / meanGroupBytes), indexedBytes, wholeBytes))
  }

  /**
   * The index's keys the conjuncts' bounds (`<`, `<=`, `>`, `>=`, `BETWEEN` with literals) allow
   * an integral or date key `key` (stored name) to take: per index file, its distinct keys times
   * the share of its [min, max] range inside the bounds, as if its keys were spread evenly over
   * that range (hash buckets hold keys from the whole domain, so each file's keys spread like the
   * source's). None without a bound, for other types, or when a file has no recorded range.
   */
  private def keysInRange(entry: LogEntry, key: String, conjuncts: Seq[Expression], isKey: Attribute => Boolean)
      : Option[Long] = {
    def integral(e: Expression): Boolean = e match {
      case a: Attribute => isKey(a) && Seq(ByteType, ShortType, IntegerType, LongType, DateType).contains(a.dataType)
      case _ => false
    }
    def value(l: Literal): Option[BigInt] = Option(l.value).collect {
      case v: Byte => BigInt(v)
      case v: Short => BigInt(v)
      case v: Int => BigInt(v)
      case v: Long => BigInt(v)
    }
    // (lower, upper) bounds, inclusive.
    val bounds: Seq[(Option[BigInt], Option[BigInt])] = conjuncts.collect {
      case GreaterThan(a, l: Literal) if integral(a) => (value(l).map(_ + 1), None)
      case GreaterThanOrEqual(a, l: Literal) if integral(a) => (value(l), None)
      case LessThan(a, l: Literal) if integral(a) => (None, value(l).map(_ - 1))
      case LessThanOrEqual(a, l: Literal) if integral(a) => (None, value(l))
      case GreaterThan(l: Literal, a) if integral(a) => (None, value(l).map(_ - 1))
      case GreaterThanOrEqual(l: Literal, a) if integral(a) => (None, value(l))
      case LessThan(l: Literal, a) if integral(a) => (value(l).map(_ + 1), None)
      case LessThanOrEqual(l: Literal, a) if integral(a) => (value(l), None)
    }
    if (bounds.isEmpty) return None
    val lo = bounds.flatMap(_._1).maxOption
    val hi = bounds.flatMap(_._2).minOption
    val perFile = entry.content.files.map { f =>
      f.stats.flatMap { s =>
        val keys = s.locations.map(_.keys).getOrElse(0L)
        s.columns.get(key) match {
          case Some(ColumnStats(Some(min), Some(max), _)) =>
            val (m, mx) = (BigInt(min), BigInt(max))
            val overlap = (hi.fold(mx)(_.min(mx)) - lo.fold(m)(_.max(m)) + 1).max(0)
            Some(BigDecimal(keys) * BigDecimal(overlap) / BigDecimal(mx - m + 1))
          case _ if keys == 0 => Some(BigDecimal(0)) // only NULL keys: no range to overlap
          case _ => None
        }
      }
    }
    if (perFile.exists(_.isEmpty)) None
    else Some(perFile.flatten.sum.setScale(0, BigDecimal.RoundingMode.CEILING).min(BigDecimal(Long.MaxValue)).toLong)
  }

  /**
   * How many values the conjuncts allow the column `isKey` accepts: the fewest among its `=`,
   * `<=>` and `IN` conjuncts with literal values; None when none pins it.
   */
  private def valuesPinned(conjuncts: Seq[Expression], isKey: Attribute => Boolean): Option[Long] = {
    def key(e: Expression): Boolean = e match {
      case a: Attribute => isKey(a)
      case _ => false
    }
    val counts = conjuncts.collect {
      case EqualTo(a, l: Literal) if key(a) => if (l.value == null) 0L else 1L
      case EqualTo(l: Literal, a) if key(a) => if (l.value == null) 0L else 1L
      case EqualNullSafe(a, _: Literal) if key(a) => 1L
      case EqualNullSafe(_: Literal, a) if key(a) => 1L
      case In(a, list) if key(a) && list.forall(_.isInstanceOf[Literal]) =>
        list.collect { case l: Literal if l.value != null => l.value }.distinct.size.toLong
      case InSet(a, set) if key(a) => set.count(_ != null).toLong
    }
    counts.minOption
  }
}
