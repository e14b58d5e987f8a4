package io.hyperspace.actions

/** Operation names as written in the log, and which may overlap (the paper's Table 1). */
object Operations {
  val CREATE = "CREATE"
  val DELETE = "DELETE"
  val OPTIMIZE = "OPTIMIZE"
  val REFRESH = "REFRESH"
  val RESTORE = "RESTORE"
  val VACUUM = "VACUUM"
  val CANCEL = "CANCEL"

  /** The operations of Table 1, in its order. */
  val all: Seq[String] = Seq(CREATE, DELETE, OPTIMIZE, REFRESH, RESTORE, VACUUM)

  // Symmetric; every pair not listed is incompatible. Create conflicts with everything: there is
  // no index yet for anything else to act on, and two creates would build two indexes.
  private val compatiblePairs: Set[(String, String)] = {
    val maintenance = Seq(DELETE, OPTIMIZE, REFRESH)
    val pairs = (for (a <- maintenance; b <- maintenance) yield (a, b)) ++
      Seq((RESTORE, RESTORE), (VACUUM, VACUUM))
    pairs.toSet
  }

  /** Whether `incoming` may proceed (after waiting) while `running` holds the index. */
  def compatible(running: String, incoming: String): Boolean =
    compatiblePairs.contains((running, incoming))
}
