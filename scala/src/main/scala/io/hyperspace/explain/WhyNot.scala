package io.hyperspace.explain

import org.apache.spark.sql.DataFrame

import io.hyperspace.index.{IndexCatalog, IndexSummary}
import io.hyperspace.log.States
import io.hyperspace.rules.{Decisions, Reason}

/**
 * `whyNot(df)`: for each index, whether the query uses it, or the reasons it does not — as the
 * optimizer rule decided them in a recording run over the query ([[QueryPlanning.decisions]]).
 * Nothing is decided here; this only puts the recorded decisions into words.
 */
object WhyNot {

  /** One line per index (or only `indexName`): used, or why not. */
  def whyNot(df: DataFrame, indexName: Option[String]): String = {
    val catalog = new IndexCatalog(df.sparkSession)
    val summaries = catalog.summaries().filter(s => indexName.forall(_.equalsIgnoreCase(s.name)))
    if (indexName.isDefined && summaries.isEmpty) {
      throw new io.hyperspace.HyperspaceIndexNotFoundException(s"Index '${indexName.get}' does not exist.")
    }
    lazy val decisions = new QueryPlanning(df).decisions
    val lines = summaries.sortBy(_.name).map(s => s"${s.name}: ${describe(s, decisions)}")
    if (lines.isEmpty) "No indexes exist." else lines.mkString("\n")
  }

  private def describe(s: IndexSummary, decisions: => Decisions): String =
    if (s.state != States.ACTIVE) Reason.NotActive(s.state).describe
    else {
      val d = decisions
      d.blocked match {
        case Some(blocked) =>
          val ifOn = d.ifRewriting.map(on =>
            outcome(s, on) match {
              case None => "; with rewriting on it would be used"
              case Some(why) => s"; with rewriting on it would not be used either: $why"
            })
          blocked.describe + ifOn.getOrElse("")
        case None => outcome(s, d).getOrElse(("used by this query" +: atRunTime(s, d)).mkString("; "))
      }
    }

  /** What an index will decide once the query runs (join pruning), said beside its use while planning. */
  private def atRunTime(s: IndexSummary, d: Decisions): Seq[String] =
    d.reasonsFor(s.name).collect { case r: Reason.DecidedAtRunTime => r.describe }

  /** None when the index is used; otherwise the reasons it is not, in words. */
  private def outcome(s: IndexSummary, d: Decisions): Option[String] =
    if (d.isUsed(s.name)) None
    else Some(d.reasonsFor(s.name) match {
      // Not among the ACTIVE indexes the rules were given: disabled, or of a kind this JVM cannot use
      // (the catalog says why).
      case Seq() => Option(s.stateReason).filter(_.nonEmpty).map(Reason.Unusable).getOrElse(Reason.NotEnabled).describe
      case reasons => reasons.map(_.describe).mkString("; ")
    })
}
