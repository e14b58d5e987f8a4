package io.hyperspace.rules

import io.hyperspace.log.LogEntry

/**
 * How a rule picks among usable indexes. Reading fewer bytes wins: a smaller index means fewer
 * files opened and less decoded. For joins, avoiding shuffles comes first (see
 * [[JoinIndexRule]]). Ties go to the name, so the choice never depends on listing order.
 */
object IndexRanking {

  /** Orders candidates best first: fewest index bytes, then name. */
  def byBytesRead(candidates: Seq[LogEntry]): Seq[LogEntry] =
    candidates.sortBy(e => (e.content.sizeInBytes, e.name))

  /** The best candidate, if any. */
  def best(candidates: Seq[LogEntry]): Option[LogEntry] = byBytesRead(candidates).headOption
}
