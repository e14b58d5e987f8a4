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

  /**
   * The candidate reading the fewest bytes by `bytes` (a rule's estimate for its query: what the
   * index's own pruning leaves to read), then by name.
   */
  def bestBy(candidates: Seq[IndexCandidate], bytes: IndexCandidate => Long): Option[IndexCandidate] =
    candidates.map(c => (bytes(c), c)).sortBy { case (b, c) => (b, c.name) }.headOption.map(_._2)

  /** The best candidate, if any. */
  def best(candidates: Seq[IndexCandidate]): Option[IndexCandidate] = byBytesRead(candidates).headOption
}
