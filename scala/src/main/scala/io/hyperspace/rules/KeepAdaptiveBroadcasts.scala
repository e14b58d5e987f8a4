package io.hyperspace.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildSide}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.index.covering.IndexHadoopFsRelation
import io.hyperspace.log.LogEntry
import io.hyperspace.shims.FileRelation

/**
 * A join side read from a bucketed index under a filter that leaves few enough bytes for adaptive
 * execution to broadcast it ([[BroadcastSides.atRunTime]]) is read unbucketed, so Spark shuffles
 * it as it would the source, and adaptive execution measures the shuffle and broadcasts it.
 *
 * The join rule leaves such joins to Spark, but the filter rule may then read a side from an index
 * on the join key: the relation is bucketed on it, so Spark plans the join on the buckets with no
 * shuffle, which adaptive execution cannot measure, and the join stays a sort-merge join (a
 * broadcast served better). The index still prunes the files the filter cannot match, bucketed or
 * not.
 */
object KeepAdaptiveBroadcasts extends IndexRewrite with PredicateHelper {

  override def apply(spark: SparkSession, plan: LogicalPlan, indexes: Seq[LogEntry], log: DecisionLog): LogicalPlan =
    if (BroadcastSides.adaptiveThreshold(spark.sessionState.conf).isEmpty) plan
    else plan transformUp { case join: Join => unbucketSmallSide(spark, join) }

  private case class BucketedRead(scan: LogicalRelation, relation: IndexHadoopFsRelation, filters: Seq[Expression])

  private def bucketedRead(side: LogicalPlan): Option[BucketedRead] = side match {
    case chain @ ScanChain(scan @ FileRelation(_, r: IndexHadoopFsRelation), _) if r.bucketSpec.isDefined =>
      Some(BucketedRead(scan, r, chain.collect { case Filter(c, _) => splitConjunctivePredicates(c) }.flatten))
    case _ => None
  }

  private def unbucketSmallSide(spark: SparkSession, join: Join): Join = {
    val reads = Map[BuildSide, Option[BucketedRead]](
      (BuildLeft: BuildSide) -> bucketedRead(join.left),
      (org.apache.spark.sql.catalyst.optimizer.BuildRight: BuildSide) -> bucketedRead(join.right))
    // Only a bucketed read's size is unknown to adaptive execution: any other side is shuffled,
    // and measured, as Spark plans it. Without a filter Spark's estimate before running stands.
    def expected(side: BuildSide): BigInt = reads(side) match {
      case Some(read) if read.filters.nonEmpty =>
        BigInt(read.relation.location.listFiles(Nil, read.filters).flatMap(_.files).map(_.getLen).sum)
      case _ => BigInt(Long.MaxValue)
    }
    BroadcastSides.atRunTime(join, expected, spark.sessionState.conf).flatMap(a =>
      reads(a.side).map(a.side -> _)) match {
      case Some((side, read)) =>
        val r = read.relation
        val unbucketed = read.scan.copy(relation =
          new IndexHadoopFsRelation(r.entry, r.sparkSession, r.location, None, r.options))
        def replaced(plan: LogicalPlan): LogicalPlan = plan transformUp { case s if s eq read.scan => unbucketed }
        if (side == BuildLeft) join.copy(left = replaced(join.left)) else join.copy(right = replaced(join.right))
      case None => join
    }
  }
}
