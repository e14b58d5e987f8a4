package io.hyperspace.advisor

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.{DataFrame, SparkSession}

import io.hyperspace.{Hyperspace, HyperspaceException}
import io.hyperspace.index.{IndexConfig, IndexKindConfig}
import io.hyperspace.index.dataskipping.DataSkippingIndexConfig
import io.hyperspace.index.split.SplitIndexConfig
import io.hyperspace.index.zorder.ZOrderCoveringIndexConfig

/** What a recommended index does for one query: planned without indexes vs with all recommended ones. */
final case class QueryEvidence(
    query: String,
    weight: Double,
    bytesBefore: Long,
    bytesAfter: Long,
    exchangesBefore: Int,
    exchangesAfter: Int,
    sortsBefore: Int,
    sortsAfter: Int) {
  override def toString: String =
    s"'$query' (weight $weight): bytes read $bytesBefore → $bytesAfter, Exchange $exchangesBefore → " +
      s"$exchangesAfter, Sort $sortsBefore → $sortsAfter"
}

object QueryEvidence {

  private[advisor] def write(array: com.fasterxml.jackson.databind.node.ArrayNode, queries: Seq[QueryEvidence]): Unit =
    queries.foreach { q =>
      val o = array.addObject()
      o.put("query", q.query)
      o.put("weight", q.weight)
      o.put("bytesBefore", q.bytesBefore)
      o.put("bytesAfter", q.bytesAfter)
      o.put("exchangesBefore", q.exchangesBefore)
      o.put("exchangesAfter", q.exchangesAfter)
      o.put("sortsBefore", q.sortsBefore)
      o.put("sortsAfter", q.sortsAfter)
    }

  /** `queries` as a JSON array. */
  def toJson(queries: Seq[QueryEvidence]): String = {
    val mapper = new ObjectMapper()
    val array = mapper.createArrayNode()
    write(array, queries)
    mapper.writeValueAsString(array)
  }
}

/**
 * One recommended index (covering, Z-order covering or data skipping): its config, the source it indexes, its estimated size and
 * build cost (bytes read from the source plus bytes written), the benefit it had when the
 * advisor chose it (weighted bytes of reads, shuffles and sorts removed, see [[PlanCost]]) and
 * the queries whose plans use it. `sourceSql` names the source in SQL (a table, or
 * `format`.`path` for a single directory) when it can be named so.
 */
final case class RecommendedIndex(
    rank: Int,
    config: IndexKindConfig,
    source: String,
    sourceSql: Option[String],
    estimatedSizeBytes: Long,
    estimatedBuildBytes: Long,
    benefit: Long,
    queries: Seq[QueryEvidence])(val sourceDf: DataFrame) {
  /** The columns the index is keyed on (for a data skipping index, its sketches). */
  def indexedColumns: Seq[String] = RecommendedIndex.columnsOf(config)._1

  /** The columns the index stores besides (none for a data skipping index). */
  def includedColumns: Seq[String] = RecommendedIndex.columnsOf(config)._2

  /** The config as the JSON its kind's `configFromJson` reads (how Python rebuilds it). */
  def configJson: String = RecommendedIndex.configJson(config)

  override def toString: String = {
    val what = config match {
      case d: DataSkippingIndexConfig => s"data skipping with ${d.sketches.map(_.describe).mkString(", ")}"
      case s: SplitIndexConfig => s"split on (${s.indexedColumns.mkString(", ")})"
      case _ =>
        val kind = if (config.isInstanceOf[ZOrderCoveringIndexConfig]) "Z-order covering" else "covering"
        s"$kind on (${indexedColumns.mkString(", ")}) incl. (${includedColumns.mkString(", ")})"
    }
    s"$rank. ${config.name}: $what over $source; ~$estimatedSizeBytes bytes, build reads+writes " +
      s"~$estimatedBuildBytes bytes, benefit $benefit\n" + queries.map("   serves " + _).mkString("\n")
  }
}

object RecommendedIndex {

  private[hyperspace] def columnsOf(config: IndexKindConfig): (Seq[String], Seq[String]) = config match {
    case c: IndexConfig => (c.indexedColumns, c.includedColumns)
    case z: ZOrderCoveringIndexConfig => (z.indexedColumns, z.includedColumns)
    case d: DataSkippingIndexConfig => (d.sketches.map(_.describe), Nil)
    case s: SplitIndexConfig => (s.indexedColumns, Nil)
    case _ => (Nil, Nil)
  }

  private[hyperspace] def configJson(config: IndexKindConfig): String = config match {
    case d: DataSkippingIndexConfig => d.toJson
    case c @ (_: IndexConfig | _: ZOrderCoveringIndexConfig | _: SplitIndexConfig) =>
      val mapper = new ObjectMapper()
      val node = mapper.createObjectNode()
      node.put("name", c.name)
      val indexed = node.putArray("indexedColumns")
      columnsOf(c)._1.foreach(col => indexed.add(col))
      val included = node.putArray("includedColumns")
      columnsOf(c)._2.foreach(col => included.add(col))
      // A split index has no included columns; its config JSON has no such field.
      if (c.isInstanceOf[SplitIndexConfig]) node.remove("includedColumns")
      mapper.writeValueAsString(node)
    case other => throw new HyperspaceException(s"The advisor does not recommend indexes of kind ${other.kindName}.")
  }
}

/**
 * A candidate the advisor planned (or could not fit) but did not recommend, and why: `reason`
 * is one of the codes of [[RejectedCandidate]]'s companion, `detail` says it in words (the
 * sizes, the benefit it had, the chosen indexes that serve its queries instead).
 */
final case class RejectedCandidate(
    config: IndexKindConfig,
    source: String,
    estimatedSizeBytes: Long,
    reason: String,
    detail: String) {
  def name: String = config.name

  override def toString: String =
    s"${config.name} (${config.kindName} on ${RecommendedIndex.columnsOf(config)._1.mkString(", ")}, ~$estimatedSizeBytes " +
      s"bytes): $reason — $detail"
}

object RejectedCandidate {
  /** It did not fit in what was left of the budget. */
  val OverBudget = "over_budget"
  /** The maximum count was reached while it still had a benefit. */
  val MaxIndexes = "max_indexes"
  /** It had a benefit until chosen indexes came to serve the same queries (as well or better). */
  val Superseded = "superseded"
  /** No query's plan ever used it to advantage. */
  val NoBenefit = "no_benefit"
  /** Chosen during the search, then dropped: no plan used it once all chosen indexes were in place. */
  val Unused = "unused"
}

/**
 * The advisor's answer: the indexes ranked in the order chosen, with the workload's cost
 * (weighted bytes read, shuffled and sorted) without indexes and with all of them, and the
 * candidates not recommended with the reason for each (`rejected`).
 */
final case class Recommendations(
    spark: SparkSession,
    indexes: Seq[RecommendedIndex],
    candidatesConsidered: Int,
    budgetBytes: Option[Long],
    maxIndexes: Option[Int],
    workloadCostBefore: Long,
    workloadCostAfter: Long,
    elapsedMs: Long,
    rejected: Seq[RejectedCandidate] = Nil) {

  def totalSizeBytes: Long = indexes.map(_.estimatedSizeBytes).sum

  /**
   * Builds every recommended index, in rank order; returns their names. An index whose name is
   * taken, or whose build fails, stops here with an error naming it; the ones built before stay.
   */
  def createAll(): Seq[String] = indexes.map { r =>
    try Hyperspace(spark).createIndex(r.sourceDf, r.config)
    catch {
      case e: HyperspaceException =>
        throw new HyperspaceException(
          s"Creating recommended index '${r.config.name}' (rank ${r.rank}) failed" +
            s"${if (r.rank > 1) s" after building ${indexes.take(r.rank - 1).map(_.config.name).mkString(", ")}" else ""}: " +
            e.getMessage, e)
    }
    r.config.name
  }

  override def toString: String = {
    val limits =
      s"budget ${budgetBytes.fold("none")(b => s"$b bytes")}, at most ${maxIndexes.fold("any number")(_.toString)}"
    val head = s"${indexes.size} index(es) recommended of $candidatesConsidered candidate(s) ($limits; " +
      s"~$totalSizeBytes bytes in total; workload cost $workloadCostBefore → $workloadCostAfter bytes; $elapsedMs ms)"
    val notChosen =
      if (rejected.isEmpty) Nil else s"not recommended (${rejected.size}):" +: rejected.map("   " + _.toString)
    ((head +: indexes.map(_.toString)) ++ notChosen).mkString("\n")
  }

  /** The recommendations as JSON, for Python. */
  def toJson: String = {
    val mapper = new ObjectMapper()
    val root = mapper.createObjectNode()
    root.put("candidatesConsidered", candidatesConsidered)
    budgetBytes.fold(root.putNull("budgetBytes"))(b => root.put("budgetBytes", b))
    maxIndexes.fold(root.putNull("maxIndexes"))(k => root.put("maxIndexes", k))
    root.put("workloadCostBefore", workloadCostBefore)
    root.put("workloadCostAfter", workloadCostAfter)
    root.put("elapsedMs", elapsedMs)
    val arr = root.putArray("indexes")
    indexes.foreach { r =>
      val n: ObjectNode = arr.addObject()
      n.put("rank", r.rank)
      n.put("name", r.config.name)
      n.put("kind", r.config.kindName)
      n.put("config", r.configJson)
      val indexed = n.putArray("indexedColumns")
      r.indexedColumns.foreach(c => indexed.add(c))
      val included = n.putArray("includedColumns")
      r.includedColumns.foreach(c => included.add(c))
      n.put("source", r.source)
      n.put("estimatedSizeBytes", r.estimatedSizeBytes)
      n.put("estimatedBuildBytes", r.estimatedBuildBytes)
      n.put("benefit", r.benefit)
      r.sourceSql.fold(n.putNull("sourceSql"))(n.put("sourceSql", _))
      QueryEvidence.write(n.putArray("queries"), r.queries)
    }
    val rejectedArray = root.putArray("rejected")
    rejected.foreach { r =>
      val n: ObjectNode = rejectedArray.addObject()
      n.put("name", r.config.name)
      n.put("kind", r.config.kindName)
      n.put("config", RecommendedIndex.configJson(r.config))
      val indexed = n.putArray("indexedColumns")
      RecommendedIndex.columnsOf(r.config)._1.foreach(c => indexed.add(c))
      val included = n.putArray("includedColumns")
      RecommendedIndex.columnsOf(r.config)._2.foreach(c => included.add(c))
      n.put("source", r.source)
      n.put("estimatedSizeBytes", r.estimatedSizeBytes)
      n.put("reason", r.reason)
      n.put("detail", r.detail)
    }
    mapper.writeValueAsString(root)
  }
}
