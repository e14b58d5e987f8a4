package io.hyperspace.indexed

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias, View}

import io.hyperspace.HyperspaceException

/**
 * Indexed DataFrames by name, for SQL and Spark Connect: an indexed table is a session temporary
 * view whose plan is exactly an Indexed DataFrame version. The view is the only record — there
 * is no registry to fall out of step with the catalog — so `spark.table(name)`, SQL and Connect
 * clients all see the version the view holds, and replacing or dropping the view is all an
 * append or uncache does to the name.
 */
object IndexedTables {

  /**
   * Builds and caches an Indexed DataFrame over `source` keyed on `keyColumn`, and names it
   * `name` (a temporary view). A name already holding an indexed table is refused, so its cached
   * memory is never orphaned by a silent replacement.
   */
  def cache(spark: SparkSession, name: String, keyColumn: String, numPartitions: Option[Int],
      source: DataFrame): IndexedDataFrame = {
    if (find(spark, name).isDefined) {
      throw new HyperspaceException(s"Cannot cache indexed table '$name': an indexed table of " +
        "that name exists in this session; UNCACHE INDEXED TABLE it first.")
    }
    val created = numPartitions match {
      case Some(n) => IndexedDataFrame.create(source, keyColumn, n)
      case None => IndexedDataFrame.create(source, keyColumn)
    }
    val cached = created.cache()
    cached.createOrReplaceTempView(name)
    cached
  }

  /**
   * Appends `rows` to the indexed table `name`: the new version is cached and takes the name; the
   * previous version's blocks are released (the new one holds its rows, and lineage rebuilds
   * them if a partition is lost).
   */
  def append(spark: SparkSession, name: String, rows: DataFrame): IndexedDataFrame = {
    val current = get(spark, name, "append to")
    val next = current.appendRows(rows).cache()
    next.createOrReplaceTempView(name)
    current.unpersist()
    next
  }

  /** Frees the indexed table `name`'s memory and drops the name; false when there is none. */
  def uncache(spark: SparkSession, name: String, ifExists: Boolean): Boolean = find(spark, name) match {
    case Some(idf) =>
      spark.catalog.dropTempView(name)
      idf.unpersist()
      true
    case None if ifExists => false
    case None => get(spark, name, "uncache"); false // get fails, naming the tables there are
  }

  /** The indexed tables of this session, by name. */
  def list(spark: SparkSession): Seq[(String, IndexedDataFrame)] =
    spark.catalog.listTables().collect().toSeq.filter(_.isTemporary).flatMap { t =>
      find(spark, t.name).map(t.name -> _)
    }.sortBy(_._1)

  /** The Indexed DataFrame the temporary view `name` holds, if it is one. */
  def find(spark: SparkSession, name: String): Option[IndexedDataFrame] = {
    val plan = try Some(spark.table(quoted(name)).queryExecution.analyzed)
    catch { case _: org.apache.spark.sql.AnalysisException => None }
    plan.flatMap(indexedView).map(data => new IndexedDataFrame(spark, data))
  }

  /** The indexed table `name`, or an error saying it cannot `action` it and naming those there are. */
  def get(spark: SparkSession, name: String, action: String): IndexedDataFrame =
    find(spark, name).getOrElse {
      val known = list(spark).map(_._1)
      throw new HyperspaceException(s"Cannot $action indexed table '$name': no indexed table of " +
        s"that name in this session (indexed tables: " +
        s"${if (known.isEmpty) "none" else known.mkString(", ")}).")
    }

  private def indexedView(plan: LogicalPlan): Option[IndexedData] = plan match {
    case SubqueryAlias(_, inner) => indexedView(inner)
    case v: View if v.isTempView =>
      v.child match {
        case r: IndexedRelation => Some(r.data)
        case _ => None
      }
    case _ => None
  }

  private def quoted(name: String): String = "`" + name.replace("`", "``") + "`"
}
