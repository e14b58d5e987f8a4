package io.hyperspace.rules

/**
 * How a rule picks among usable indexes. Reading fewer bytes wins: a smaller index (plus, under
 * hybrid scan, fewer appended source bytes) means fewer files opened and less decoded. For
 * joins, avoiding shuffles comes first (see [[JoinIndexRule]]). Ties go to the name, so the
 * choice never depends on listing order.
 */
object IndexRanking {

  /** Orders candidates best first: fewest bytes read, then name. */
  def byBytesRead(candidates: Seq[IndexCandidate]): Seq[IndexCandidate] =
    candidates.sortBy(c => (c.bytesRead, c.name))

  /** The best candidate, if any. */
  def best(candidates: Seq[IndexCandidate]): Option[IndexCandidate] = byBytesRead(candidates).headOption
}
