package io.hyperspace.index.covering

import scala.util.control.NonFatal

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.analysis.{Resolver, UnresolvedAttribute}
import org.apache.spark.sql.catalyst.expressions.{Expression, GetStructField}
import org.apache.spark.sql.catalyst.util.QuotingUtils
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructField, StructType}

import io.hyperspace.HyperspaceException

/**
 * A column of a covering index: a top-level source column (`path` of one name) or a field of a
 * struct column reached through nested structs (`Seq("nested", "leaf", "id")`), with the names
 * spelled as the source's schema spells them.
 *
 * The index data stores every column at the top level. A nested field gets a flat column named
 * [[IndexColumn.NestedPrefix]] + its dotted path (parts quoted where they hold dots or
 * backquotes, so the path can be read back unambiguously). The log's `indexedColumns` /
 * `includedColumns` hold [[name]]: the dotted path users wrote, as `indexes()` shows it.
 */
final case class IndexColumn(path: Seq[String]) {
  require(path.nonEmpty, "an index column has a name")

  /** Whether the column is a field inside a struct column. */
  def isNested: Boolean = path.size > 1

  /**
   * How the log, `indexes()` and messages name the column: a top-level column as the source
   * spells it (even with dots in it, as before nested columns existed), a nested field as its
   * dotted path.
   */
  def name: String = if (isNested) path.map(QuotingUtils.quoteIfNeeded).mkString(".") else path.head

  /** The column's name in the index data. */
  def storedName: String = if (isNested) IndexColumn.NestedPrefix + name else path.head

  /** The source's value of this column, named [[storedName]]: what the index data stores. */
  def fromSource: Column = {
    val whole = col(IndexColumn.quote(path.head))
    if (!isNested) whole else path.tail.foldLeft(whole)((c, f) => c.getField(f)).as(storedName)
  }

  /**
   * The nested field read out of `struct`, an expression of the type of the column `path.head`
   * (or a pruned version of it), by field names; None if a field is missing from the type.
   */
  def extractFrom(struct: Expression): Option[Expression] =
    IndexColumn.extract(struct, path.tail)
}

object IndexColumn {
  /** Reserved prefix of the index data columns holding nested fields. */
  val NestedPrefix = "__hs_nested."

  /** The index column an index data column stores (the inverse of [[IndexColumn.storedName]]). */
  def fromStoredName(stored: String): IndexColumn =
    if (stored.startsWith(NestedPrefix))
      IndexColumn(UnresolvedAttribute.parseAttributeName(stored.drop(NestedPrefix.length)))
    else IndexColumn(Seq(stored))

  /**
   * The column `name` denotes in `schema` (by `resolver`) with its field as the index stores it
   * (named [[IndexColumn.storedName]]; nullable when any struct on the way is). `name` is a
   * top-level column as written (`a.b` names a top-level column of that name if there is one),
   * or a dotted path into structs, parts backquoted where they contain dots (`` `a.b`.c ``).
   * Errors name the index and the column.
   */
  def resolve(indexName: String, schema: StructType, resolver: Resolver, name: String): (IndexColumn, StructField) = {
    def fail(why: String): Nothing =
      throw new HyperspaceException(s"Column '$name' of index '$indexName' $why")
    def topLevel(n: String): (IndexColumn, StructField) = schema.fields.filter(f => resolver(f.name, n)) match {
      case Array(f) => (IndexColumn(Seq(f.name)), f)
      case Array() => fail(s"is not in the source; its columns are ${schema.fieldNames.mkString(", ")}.")
      case many => fail(s"is ambiguous: it matches ${many.map(_.name).mkString(", ")}.")
    }
    // A name that does not parse as a path (an odd backquote) can still be a top-level column.
    val parts = try UnresolvedAttribute.parseAttributeName(name)
    catch { case NonFatal(_) => Seq(name) }
    val literal = schema.fields.exists(f => resolver(f.name, name))
    if (parts.size == 1) topLevel(parts.head)
    else resolvePath(schema, resolver, parts) match {
      case Right(_) if literal =>
        fail("is ambiguous: the source has a top-level column of that name and a struct field at that path; " +
          s"write ${quote(name)} (backquoted) for the top-level column.")
      case Right((path, field)) =>
        val column = IndexColumn(path)
        (column, field.copy(name = column.storedName))
      case Left(_) if literal => topLevel(name)
      case Left(why) => fail(why)
    }
  }

  /**
   * The source spelling of `parts` (a path of two or more names) and its leaf field, nullable
   * when any struct on the path is; or why the path names no struct field.
   */
  private def resolvePath(schema: StructType, resolver: Resolver, parts: Seq[String])
      : Either[String, (Seq[String], StructField)] = {
    // Walks down one part at a time; `done` is the spelled path so far, `nullable` whether any
    // struct on it is.
    def walk(current: DataType, rest: Seq[String], done: Seq[String], nullable: Boolean, leaf: Option[StructField])
        : Either[String, (Seq[String], StructField)] = (rest, current) match {
      case (Seq(), _) => Right((done, leaf.get.copy(nullable = nullable)))
      case (part +: more, s: StructType) =>
        val within = if (done.isEmpty) "the source" else s"struct '${done.mkString(".")}'"
        s.fields.filter(f => resolver(f.name, part)) match {
          case Array(f) => walk(f.dataType, more, done :+ f.name, nullable || f.nullable, Some(f))
          case Array() =>
            Left(s"is not in the source: $within has no field '$part' (its fields are ${s.fieldNames.mkString(", ")}).")
          case many =>
            Left(s"is ambiguous: $within has fields ${many.map(_.name).mkString(", ")} matching '$part'.")
        }
      case (_, other) =>
        val kind = other match {
          case _: ArrayType => "an array"
          case _: MapType => "a map"
          case t => s"of type ${t.simpleString}"
        }
        Left(s"cannot be indexed: '${done.mkString(".")}' is $kind, not a struct; only fields of (nested) " +
          "structs can be index columns, fields inside arrays and maps are not supported.")
    }
    walk(schema, parts, Nil, nullable = false, None)
  }

  /** `fields` read one inside the other out of `value`, by name (exact spelling). */
  def extract(value: Expression, fields: Seq[String]): Option[Expression] =
    fields.foldLeft(Option(value)) { (current, field) =>
      current.flatMap { e =>
        e.dataType match {
          case s: StructType =>
            Some(s.fieldNames.indexOf(field)).filter(_ >= 0).map(i => GetStructField(e, i, Some(field)))
          case _ => None
        }
      }
    }

  private[index] def quote(name: String): String = s"`${name.replace("`", "``")}`"
}
