package io.hyperspace.advisor

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.execution.datasources.LogicalRelation

import io.hyperspace.rules.CandidateIndexes
import io.hyperspace.shims.EquiJoin

/**
 * How one query uses one scanned relation, read off its optimized plan (no index): the columns
 * it needs from it, the columns its filters pin to values or ranges, and the key sets of the
 * equi-joins whose side is this relation alone. Top-level columns only; names as in the
 * relation's schema.
 */
private[advisor] final case class RelationUse(
    relation: LogicalRelation,
    key: String,
    needed: Seq[String],
    equality: Seq[String],
    range: Seq[String],
    joinKeys: Seq[Seq[String]],
    /**
     * Per equality-filtered column: the values its conjuncts look up (Catalyst's internal form,
     * of the column's type), or None when one of them is not the bare column against literals of
     * its type (a cast, a function): a hypothetical value sketch must hold every looked-up value
     * a file may have, and those the advisor cannot name.
     */
    lookups: Map[String, Option[Seq[Any]]] = Map.empty,
    /** Every column a filter conjunct over this relation alone references (a sketch can serve only those). */
    filtered: Seq[String] = Nil,
    /** Per column (by name): the filter conjuncts that reference it and no other column. */
    conjunctsOn: Map[String, Seq[Expression]] = Map.empty)

private[advisor] object QueryShape extends PredicateHelper {

  /**
   * The identity of a scanned relation across queries: its format and root paths (two queries
   * reading the same files get the same candidates, and a merged candidate serves both).
   */
  def keyOf(relation: LogicalRelation): Option[String] =
    CandidateIndexes.sourceScan(relation).map { fs =>
      fs.fileFormat.toString + ":" + fs.location.rootPaths.map(_.toString).sorted.mkString(",")
    }

  def uses(optimized: LogicalPlan): Seq[RelationUse] = {
    val relations = optimized.collect { case r: LogicalRelation if keyOf(r).isDefined => r }
    // Every column an operator reads, or the query returns (a bare scan has no operator above).
    val referenced = AttributeSet(optimized.collect { case p if p.children.nonEmpty => p.references }.flatten) ++
      optimized.outputSet
    val conjuncts = optimized.collect { case f: Filter => splitConjunctivePredicates(f.condition) }.flatten
    val joinSides = optimized.collect { case EquiJoin(_, lk, rk, _, _, _, _) => Seq(lk, rk) }.flatten
    relations.map { r =>
      val own = r.outputSet
      def single(e: Expression): Option[Attribute] = e.references.toSeq match {
        case Seq(a) if own.contains(a) => Some(a)
        case _ => None
      }
      def nameOf(a: Attribute): String = r.output.find(_.exprId == a.exprId).map(_.name).getOrElse(a.name)
      val equality = conjuncts.flatMap {
        case EqualTo(l, v) if v.foldable => single(l)
        case EqualTo(v, r) if v.foldable => single(r)
        case EqualNullSafe(l, v) if v.foldable => single(l)
        case EqualNullSafe(v, r) if v.foldable => single(r)
        case In(value, list) if list.nonEmpty && list.forall(_.foldable) => single(value)
        case InSet(value, _) => single(value)
        case _ => None
      }.map(nameOf).distinct
      val range = conjuncts.flatMap {
        case c: BinaryComparison if !c.isInstanceOf[EqualTo] && !c.isInstanceOf[EqualNullSafe] =>
          if (c.right.foldable) single(c.left) else if (c.left.foldable) single(c.right) else None
        case _ => None
      }.map(nameOf).distinct.filterNot(equality.contains)
      // The values each equality conjunct looks up, when it is the column itself against literals of its type.
      def values(column: Expression, list: Seq[Expression]): Option[Seq[Any]] = column match {
        case a: Attribute if list.forall(v => v.foldable && v.dataType == a.dataType) =>
          Some(list.map(_.eval()).filter(_ != null))
        case _ => None
      }
      val lookedUp = conjuncts.flatMap {
        case EqualTo(l, v) if v.foldable => single(l).map(a => nameOf(a) -> values(l, Seq(v)))
        case EqualTo(v, r) if v.foldable => single(r).map(a => nameOf(a) -> values(r, Seq(v)))
        case EqualNullSafe(l, v) if v.foldable => single(l).map(a => nameOf(a) -> values(l, Seq(v)))
        case EqualNullSafe(v, r) if v.foldable => single(r).map(a => nameOf(a) -> values(r, Seq(v)))
        case In(value, list) if list.nonEmpty && list.forall(_.foldable) =>
          single(value).map(a => nameOf(a) -> values(value, list))
        case InSet(value, set) => single(value).map(a =>
            nameOf(a) ->
              (value match {
                case _: Attribute => Some(set.toSeq.filter(_ != null))
                case _ => None
              }))
        case _ => None
      }
      val lookups = lookedUp.groupBy(_._1).map { case (c, vs) =>
        c -> (if (vs.forall(_._2.isDefined)) Some(vs.flatMap(_._2.get).distinct) else None)
      }
      val filtered = conjuncts.flatMap(c => single(c).toSeq).map(nameOf).distinct
      val conjunctsOn = conjuncts.flatMap(c => single(c).map(a => nameOf(a) -> c)).groupBy(_._1)
        .map { case (n, cs) => n -> cs.map(_._2) }
      val joinKeys = joinSides.flatMap { keys =>
        val attrs = keys.map(single)
        if (keys.nonEmpty && attrs.forall(_.isDefined)) Some(attrs.flatten.map(nameOf).distinct) else None
      }.distinct
      RelationUse(r, keyOf(r).get, r.output.filter(referenced.contains).map(_.name).distinct, equality, range, joinKeys,
        lookups, filtered, conjunctsOn)
    }
  }
}
