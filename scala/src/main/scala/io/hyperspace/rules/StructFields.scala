package io.hyperspace.rules

import scala.collection.mutable

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.Resolver
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression, GetStructField}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.types.DataType

import io.hyperspace.index.StoredSchemas
import io.hyperspace.index.covering.{CoveringIndex, IndexColumn}
import io.hyperspace.log.LogEntry

/**
 * The struct fields a query reads out of a scanned relation's columns — `nested.leaf.id` is a
 * chain of `GetStructField`s over the relation's attribute `nested` — and how a covering index
 * holding them as flat columns ([[IndexColumn]]) stands in for them.
 *
 * A chain is always taken whole (`nested.leaf.id`, not `nested.leaf`): it is covered by the
 * index column of its path, or of a struct on its path (the rest read out of that column), as
 * long as the value keeps its type. A relation column used otherwise (the whole struct, or
 * through an array or map accessor) must be an index column itself.
 */
object StructFields {

  /** A struct field read: `expr`, the chain of `fields` below the relation's `attribute`. */
  final case class FieldRead(attribute: Attribute, fields: Seq[String], expr: Expression) {
    /** The path from the relation's column down to the field. */
    def path: Seq[String] = attribute.name +: fields
    /** The dotted name, as index columns are named. */
    def name: String = IndexColumn(path).name
  }

  /** What a plan reads of a relation: columns used whole, and struct fields read out of columns. */
  final case class Reads(whole: Seq[Attribute], fields: Seq[FieldRead])

  /** A chain of struct field accesses over an attribute: (attribute, field names from the top). */
  object FieldChain {
    def unapply(e: Expression): Option[(Attribute, Seq[String])] = e match {
      case g @ GetStructField(child, ordinal, _) =>
        val name = g.childSchema(ordinal).name
        child match {
          case a: Attribute => Some((a, Seq(name)))
          case FieldChain(a, fields) => Some((a, fields :+ name))
          case _ => None
        }
      case _ => None
    }
  }

  /** What `exprs` read of `relation`'s columns. */
  def readsOf(exprs: Seq[Expression], relation: LogicalRelation): Reads = readsOf(exprs, relation.outputSet)

  /** What `exprs` read of the columns `of`. */
  def readsOf(exprs: Seq[Expression], of: AttributeSet): Reads = {
    val whole = mutable.LinkedHashSet[Attribute]()
    val fields = mutable.LinkedHashSet[FieldRead]()
    def walk(e: Expression): Unit = e match {
      case FieldChain(a, fs) if of.contains(a) => fields += FieldRead(a, fs, e)
      case a: Attribute if of.contains(a) => whole += a
      case other => other.children.foreach(walk)
    }
    exprs.foreach(walk)
    Reads(whole.toSeq, fields.toSeq)
  }

  /**
   * What the [[ScanChain]] `chain` reads of its `relation`: a Project reads what its list (and
   * the Filter below it) reads; a bare scan or Filter passes every column up whole.
   */
  def readsOf(chain: LogicalPlan, relation: LogicalRelation): Reads = chain match {
    case Project(list, Filter(condition, r: LogicalRelation)) if r eq relation => readsOf(list :+ condition, r)
    case Project(list, r: LogicalRelation) if r eq relation => readsOf(list, r)
    case _ => Reads(relation.output, Nil)
  }

  /**
   * The index column standing in for each of `reads` in `entry`, or None when some read is not
   * covered: the index column of the field's path, or of the struct on its path nearest to the
   * field, whose value read out yields the field's type.
   */
  def coverage(entry: LogEntry, reads: Seq[FieldRead], resolver: Resolver): Option[Map[FieldRead, IndexColumn]] = {
    if (reads.isEmpty) return Some(Map.empty)
    val types = storedTypes(entry)
    val (indexed, included) = CoveringIndex.columnsOf(entry.index)
    val nested = (indexed ++ included).filter(_.isNested)
    val found = reads.map { read =>
      val within = nested.filter(c =>
        c.path.size <= read.path.size &&
          c.path.zip(read.path).forall { case (a, b) => resolver(a, b) })
      val best = within.sortBy(-_.path.size).headOption.filter { c =>
        val flat = AttributeReference(c.storedName, types(c.storedName))()
        IndexColumn.extract(flat, read.path.drop(c.path.size)).exists(v => sameType(v.dataType, read.expr.dataType))
      }
      best.map(read -> _)
    }
    if (found.forall(_.isDefined)) Some(found.flatten.toMap) else None
  }

  /** Whether `entry`'s index column `column` is the field `read` reads (same path). */
  def isColumn(column: IndexColumn, read: FieldRead, resolver: Resolver): Boolean =
    column.path.size == read.path.size && column.path.zip(read.path).forall { case (a, b) => resolver(a, b) }

  /**
   * `chain` (a [[ScanChain]] over `relation`) reading `candidate` instead: the field reads are
   * replaced by the index's flat columns (`covered`, from [[coverage]]), the relation by the
   * index scan. The chain's output (names, ids, order) stays what it was. `bySplits`: the index's
   * files read with file splits, not by bucket ([[HybridScan.replace]]).
   */
  def replaceScan(
      spark: SparkSession,
      chain: LogicalPlan,
      relation: LogicalRelation,
      candidate: IndexCandidate,
      covered: Map[FieldRead, IndexColumn],
      keepBuckets: Boolean,
      bySplits: Boolean = false): LogicalPlan = {
    val columns = covered.values.toSeq.distinct.sortBy(_.storedName)
    val scan = HybridScan.replace(spark, candidate, relation, keepBuckets, columns, bySplits)
    if (covered.isEmpty) {
      return chain transformUp { case r: LogicalRelation if r eq relation => scan }
    }
    val flat = columns.map(c => c.storedName -> scan.output.find(_.name == c.storedName).get).toMap
    val byRead = covered.map { case (read, c) => (read.attribute.exprId, read.fields) -> (read, c) }
    val rewritten = chain transformUp {
      case r: LogicalRelation if r eq relation => scan
      case node if node ne relation =>
        node transformExpressionsDown {
          case FieldChain(a, fs) if byRead.contains((a.exprId, fs)) =>
            val (read, c) = byRead((a.exprId, fs))
            IndexColumn.extract(flat(c.storedName), read.path.drop(c.path.size)).get
        }
    }
    if (rewritten.output.map(_.exprId) == chain.output.map(_.exprId)) rewritten
    else Project(chain.output, rewritten)
  }

  /** Whether `reads` read index column `column`: the top-level column, or the field at its path. */
  def reads(reads: Reads, column: IndexColumn, resolver: Resolver): Boolean =
    if (column.isNested) reads.fields.exists(isColumn(column, _, resolver))
    else reads.whole.exists(a => resolver(a.name, column.path.head))

  /**
   * The names of what `reads` needs that `entry` does not hold, sorted: top-level columns by
   * name, struct fields by dotted path (`nested.leaf.tag`).
   */
  def uncovered(entry: LogEntry, reads: Reads, resolver: Resolver): Seq[String] = {
    val (indexed, included) = CoveringIndex.columnsOf(entry.index)
    val topLevel = (indexed ++ included).filterNot(_.isNested)
    val wholeMissing = reads.whole.filterNot(a => topLevel.exists(c => resolver(c.path.head, a.name))).map(_.name)
    val fieldsMissing = reads.fields.filter(f => coverage(entry, Seq(f), resolver).isEmpty).map(_.name)
    (wholeMissing ++ fieldsMissing).distinct.sorted
  }

  private def storedTypes(entry: LogEntry): Map[String, DataType] =
    StoredSchemas.parse(entry.index.schema).fields.map(f => f.name -> f.dataType).toMap

  private def sameType(a: DataType, b: DataType): Boolean = DataTypeUtils.sameType(a, b)
}
