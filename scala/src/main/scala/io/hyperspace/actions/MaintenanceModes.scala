package io.hyperspace.actions

import java.util.Locale

import io.hyperspace.HyperspaceException

/** The modes of refresh and optimize (paper Table 2), as users spell them. */
object MaintenanceModes {
  val Full = "full"
  val Incremental = "incremental"
  val Quick = "quick"

  /** Refresh modes: rebuild, index only the changes, or only record the changes. */
  val refreshModes: Seq[String] = Seq(Full, Incremental, Quick)

  /** Optimize modes: merge small files per bucket, or leave one file per bucket. */
  val optimizeModes: Seq[String] = Seq(Quick, Full)

  /** `mode` (any case) as a refresh mode, or an error naming the index and the valid modes. */
  def refreshMode(indexName: String, mode: String): String = parse("refresh", indexName, mode, refreshModes)

  /** `mode` (any case) as an optimize mode, or an error naming the index and the valid modes. */
  def optimizeMode(indexName: String, mode: String): String = parse("optimize", indexName, mode, optimizeModes)

  private def parse(operation: String, indexName: String, mode: String, valid: Seq[String]): String = {
    val normalized = Option(mode).map(_.trim.toLowerCase(Locale.ROOT)).getOrElse("")
    if (!valid.contains(normalized)) {
      throw new HyperspaceException(
        s"Cannot $operation index '$indexName': unknown mode '$mode'; use one of ${valid.mkString(", ")}.")
    }
    normalized
  }
}
