package io.hyperspace.explain

import org.apache.spark.sql.DataFrame

import io.hyperspace.config.HyperspaceConf

/** `explain(df)`: the plan with and without indexes, what differs, and which indexes are used. */
object Explainer {

  private val rule = "=" * 61

  /** The report; `verbose` adds operator counts compared between the two plans. */
  def explain(df: DataFrame, verbose: Boolean): String = {
    val mode = HyperspaceConf.explainDisplayMode(df.sparkSession)
    val tags = HyperspaceConf.explainHighlightTags(df.sparkSession)
    val planning = new QueryPlanning(df)
    val withIdx = planning.physicalWith
    val without = planning.physicalWithout
    val withLines = withIdx.treeString.linesIterator.toSeq
    val withoutLines = without.treeString.linesIterator.toSeq
    val used = Plans.indexesIn(withIdx)
    val out = new StringBuilder
    def section(title: String): Unit = out ++= s"$rule\n$title\n$rule\n"
    section("Plan with indexes:")
    PlanDiff.mark(withLines, withoutLines, mode, tags).foreach(l => out ++= l + "\n")
    out ++= "\n"
    section("Plan without indexes:")
    PlanDiff.mark(withoutLines, withLines, mode, tags).foreach(l => out ++= l + "\n")
    out ++= "\n"
    section("Indexes used:")
    if (used.isEmpty) out ++= "(none)\n"
    used.sortBy(_.name).foreach { e =>
      out ++= s"${e.name}: ${e.content.root} (LogVersion: ${e.id})\n"
    }
    Plans.skippingIn(withIdx).foreach(s => out ++= s"Data skipping: ${s.describe}\n")
    val (appended, deleted) = Plans.hybridScanFiles(withIdx)
    if (appended > 0 || deleted > 0) {
      out ++= s"Hybrid scan: $appended appended source file(s) read beside the index data; " +
        s"rows of $deleted deleted source file(s) filtered out by lineage.\n"
    }
    if (verbose) {
      out ++= "\n"
      section("Physical operator stats:")
      val a = Plans.operatorCounts(without)
      val b = Plans.operatorCounts(withIdx)
      val names = (a.keySet ++ b.keySet).toSeq.sorted
      val width = math.max(17, names.map(_.length).maxOption.getOrElse(0))
      out ++= s"${"Physical Operator".padTo(width, ' ')} | Without | With | Difference\n"
      names.foreach { n =>
        val (x, y) = (a.getOrElse(n, 0), b.getOrElse(n, 0))
        val marker = if (x != y) s"  ($n $x → $y)" else ""
        out ++= f"${n.padTo(width, ' ')} | $x%7d | $y%4d | ${y - x}%+d$marker\n"
      }
      out ++=
        s"${"Bytes scanned".padTo(width, ' ')} | ${Plans.bytesScanned(without)} → ${Plans.bytesScanned(withIdx)}\n"
    }
    val text = out.toString
    if (mode == "html") s"<pre>$text</pre>" else text
  }
}
