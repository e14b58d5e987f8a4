package io.hyperspace.explain

/**
 * Marks the lines of one plan's text that the other plan does not have, in the session's
 * display mode (plaintext markers, console colours or html).
 */
object PlanDiff {

  // Expression ids, plan ids and codegen stage ids differ between two plannings of one query,
  // and a subtree moves up a level when an Exchange above it goes: compare without the tree art.
  private def normalized(line: String): String =
    line.replaceAll("#\\d+L?", "#").replaceAll("plan_id=\\d+", "plan_id=")
      .replaceAll("\\*\\(\\d+\\) ", "").replaceAll("^[\\s:|+-]*", "").trim

  /**
   * `lines` with every line absent from `other` (by longest common subsequence) marked: between
   * `tags` (begin, end) when given, otherwise with the display mode's own markers.
   */
  def mark(lines: Seq[String], other: Seq[String], mode: String,
      tags: Option[(String, String)] = None): Seq[String] = {
    val a = lines.map(normalized)
    val b = other.map(normalized)
    val lcs = Array.ofDim[Int](a.size + 1, b.size + 1)
    for (i <- a.indices.reverse; j <- b.indices.reverse) {
      lcs(i)(j) = if (a(i) == b(j)) lcs(i + 1)(j + 1) + 1 else math.max(lcs(i + 1)(j), lcs(i)(j + 1))
    }
    val common = Array.fill(a.size)(false)
    var i = 0
    var j = 0
    while (i < a.size && j < b.size) {
      if (a(i) == b(j)) { common(i) = true; i += 1; j += 1 }
      else if (lcs(i + 1)(j) >= lcs(i)(j + 1)) i += 1
      else j += 1
    }
    lines.zipWithIndex.map { case (line, k) =>
      if (!common(k)) highlight(line, mode, tags) else if (mode == "html") escape(line) else line
    }
  }

  private def highlight(line: String, mode: String, tags: Option[(String, String)]): String = {
    val text = if (mode == "html") escape(line) else line
    tags match {
      // User tags go in verbatim (in html mode they are markup, e.g. <mark>).
      case Some((begin, end)) => s"$begin$text$end"
      case None => mode match {
          case "console" => s"\u001b[42m$text\u001b[0m"
          case "html" => s"<b>$text</b>"
          case _ => s"<----$text---->"
        }
    }
  }

  /** Text safe inside html. */
  def escape(s: String): String = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
}
