package io.hyperspace.sources

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex
import org.apache.spark.sql.types.{ByteType, DataType, DateType, IntegerType, LongType, ShortType, StringType, StructType}
import org.apache.spark.unsafe.types.UTF8String

import io.hyperspace.config.HyperspaceConf
import io.hyperspace.index.StoredSchemas
import io.hyperspace.index.dataskipping.DataSkippingFileIndex
import io.hyperspace.log.{LogEntry, SourceFile}
import io.hyperspace.shims.Casting

/**
 * A query over some directories inside an index's source — typically partition directories read
 * with `basePath` (`spark.read.option("basePath", root).parquet(s"$root/p=1")`) over an index
 * built from `root` — reads a subset of the index's files. The index can stand in for it only
 * if it keeps exactly the rows of the files under those directories:
 *
 *  - by lineage (the file id of each row), when the index has it: exact whatever the layout;
 *  - otherwise by the partition values of the directories read, when the index holds the
 *    partition columns, the query and the index find them relative to the same base directory,
 *    and no directory outside the query's holds the same values (`p=1` and `p=01` are both the
 *    integer 1). Only string, integer and date partition values are compared this way: Spark
 *    turns their spelling in a directory name into a value as a cast from string does.
 *
 * Anything else is refused with the reason, and the query reads its files.
 */
object SourceSubset {

  /**
   * The directories `source` reads, when they lie inside `entry`'s source paths without being
   * exactly those paths (so the query reads a part of what the index covers). None otherwise,
   * and for an index over glob patterns (its paths are patterns, not directories).
   */
  def directoriesWithin(entry: LogEntry, source: FileSource): Option[Seq[Path]] = {
    if (declaresGlob(entry)) return None
    val indexRoots = entry.source.rootPaths.map(qualified(source, _)).toSet
    val queryRoots = source.fsRelation.location.rootPaths.map(p => qualified(source, p.toString))
    val inside = queryRoots.nonEmpty && queryRoots.forall(r => ancestry(r).exists(indexRoots.contains))
    if (inside && queryRoots.toSet != indexRoots) Some(queryRoots.distinct) else None
  }

  /**
   * Whether `source` reads data of `entry`'s source: the same directories, directories inside or
   * around them (`basePath` reads), or directories its glob patterns match. What whyNot looks at
   * to explain an index, before the rules' own decision.
   */
  def overlaps(entry: LogEntry, source: FileSource): Boolean =
    mayOverlap(entry, Seq(ScanPaths(source.fsRelation.location.rootPaths))) && {
      val queryRoots = source.fsRelation.location.rootPaths.map(p => qualified(source, p.toString)).toSet
      val indexRoots = if (!declaresGlob(entry)) entry.source.rootPaths.map(qualified(source, _))
      else {
        val conf = source.fsRelation.sparkSession.sessionState.newHadoopConf()
        entry.source.rootPaths.flatMap { pattern =>
          val p = qualified(source, pattern)
          Option(p.getFileSystem(conf).globStatus(p)).toSeq.flatten.map(s => qualified(source, s.getPath.toString))
        }
      }
      indexRoots.exists(i => queryRoots.exists(q => ancestry(q).contains(i) || ancestry(i).contains(q)))
    }

  /**
   * A scan's root directories by their paths alone, without scheme, authority or trailing slash
   * (so no spelling of a file system hides an overlap); None when a root cannot be compared that
   * way (relative, a glob pattern) or the scan has none.
   */
  final case class ScanPaths(paths: Option[Seq[String]])

  object ScanPaths {
    def apply(roots: Seq[Path]): ScanPaths = {
      val paths = roots.map(p => pathOnly(p.toString))
      ScanPaths(if (paths.isEmpty || paths.exists(_.isEmpty)) None else Some(paths))
    }
  }

  /**
   * Whether a scan of the directories of one of `scans` may read data of `entry`'s source,
   * judged on the paths alone, with no file system call: one of the index's source roots is a
   * scan's root, or a directory above or below one. What cannot be compared by path (an index
   * over glob patterns, relative or pattern roots on either side) is taken to overlap, so this
   * is never false where [[overlaps]] is true: the rule asks it of every index on every pass,
   * before trying any rewrite (the index's roots are read once for all the plan's scans).
   */
  def mayOverlap(entry: LogEntry, scans: Seq[ScanPaths]): Boolean = scans.nonEmpty && {
    lazy val indexPaths = entry.source.rootPaths.map(pathOnly)
    declaresGlob(entry) || scans.exists(_.paths.forall { scanned =>
      indexPaths.isEmpty || indexPaths.exists(_.isEmpty) ||
      indexPaths.exists(i => scanned.exists(q => within(q, i) || within(i, q)))
    })
  }

  // The path of `s` without scheme, authority or trailing slash; empty when it is not absolute
  // or holds glob characters.
  private def pathOnly(s: String): String = {
    val p = scala.util.Try(new Path(s).toUri.getPath).toOption.getOrElse("")
    if (!p.startsWith("/") || p.exists(c => "*?[{\\".contains(c))) "" else p.stripSuffix("/")
  }

  private def within(path: String, dir: String): Boolean =
    path == dir || path.startsWith(if (dir.endsWith("/")) dir else dir + "/")

  private[hyperspace] def declaresGlob(entry: LogEntry): Boolean =
    entry.source.options.keys.exists(_.equalsIgnoreCase(HyperspaceConf.GLOBBING_PATTERN_OPTION))

  /** The index's files under `directories` (a file read directly counts as its own directory). */
  def filesUnder(entry: LogEntry, directories: Seq[Path]): Seq[SourceFile] = {
    val dirs = directories.toSet
    entry.source.files.filter(f => ancestry(new Path(f.path)).exists(dirs.contains))
  }

  /**
   * How to keep only the rows of `kept` (the index's files the query reads, none deleted when the
   * index has no lineage): Right with the scope, or Left with why the index cannot.
   */
  def scope(entry: LogEntry, source: FileSource, kept: Seq[SourceFile]): Either[String, RowScope] =
    if (entry.index.lineage) Right(ByLineage(io.hyperspace.index.covering.CoveringIndex.LineageColumn, kept.map(_.id)))
    else byPartitionValues(entry, source, kept.map(_.path).toSet).left.map(why =>
      s"the index has no lineage column to keep only their rows, and $why")

  // Types whose directory spelling Spark turns into a value exactly as a cast from string does.
  private val comparableTypes: Set[DataType] = Set(StringType, ByteType, ShortType, IntegerType, LongType, DateType)

  private def byPartitionValues(
      entry: LogEntry,
      source: FileSource,
      scoped: Set[String]): Either[String, RowScope] = {
    val queryColumns = source.fsRelation.partitionSchema
    val indexColumns = StoredSchemas.parse(entry.source.partitionSchema)
    val indexSchema = StoredSchemas.parse(entry.index.schema)
    lazy val spec = DataSkippingFileIndex.unwrap(source.fsRelation.location) match {
      case p: PartitioningAwareFileIndex => Some(p.partitionSpec())
      case _ => None
    }
    def sameColumns = queryColumns.size == indexColumns.size &&
      queryColumns.zip(indexColumns).forall { case (q, i) =>
        q.name.equalsIgnoreCase(i.name) && q.dataType == i.dataType
      }
    if (queryColumns.isEmpty) {
      Left(s"the query reads no partition columns (read the directories with option basePath=" +
        s"${entry.source.rootPaths.mkString(", ")}, as the index was built, so that they are found)")
    } else if (!sameColumns) {
      Left(s"the query's partition columns (${queryColumns.simpleString}) are not the index's " +
        s"(${indexColumns.simpleString}): they are found relative to another base path")
    } else indexColumns.find(c =>
      !indexSchema.exists(f => f.name.equalsIgnoreCase(c.name) && f.dataType == c.dataType)) match {
      case Some(c) => Left(s"the index does not hold the partition column '${c.name}' (include it in the index)")
      case None => indexColumns.find(c => !comparableTypes.contains(c.dataType)) match {
          case Some(c) => Left(s"partition column '${c.name}' is of type ${c.dataType.simpleString}; only string, " +
              "integer and date partition values are compared with the directories of the index")
          case None =>
            val partitions = spec.map(_.partitions).getOrElse(Nil)
            val queryBases = partitions.map(p => up(p.path, indexColumns.size)).distinct
            val indexBases = entry.source.files.map(f => up(new Path(f.path).getParent, indexColumns.size)).distinct
            if (queryBases.size != 1 || indexBases.size != 1 ||
              qualified(source, queryBases.head.toString) != qualified(source, indexBases.head.toString)) {
              Left(s"the query finds its partition columns relative to ${queryBases.mkString(", ")}, the index " +
                s"relative to ${indexBases.mkString(", ")}")
            } else {
              val values = partitions.map(p => indexColumns.indices.map(i => p.values.get(i, indexColumns(i).dataType)))
                .distinct
              val wanted: Set[Seq[Any]] = values.toSet
              val clash = entry.source.files.iterator.filterNot(f => scoped.contains(f.path))
                .find(f => valuesOf(new Path(f.path).getParent, indexColumns).forall(wanted.contains))
              clash match {
                case Some(f) => Left(s"the index's file ${f.path}, in a directory the query does not read, has the " +
                    "same partition values as a directory it reads")
                case None if values.isEmpty => Left("the query reads no partition directory")
                case None => Right(ByPartitionValues(indexColumns.fields.toSeq, values))
              }
            }
        }
    }
  }

  /**
   * The partition values the directory names of `dir` (its last `columns.size` levels) give, as
   * Spark parses them for these types; None (so: may clash) when a name is not `column=value`.
   */
  private def valuesOf(dir: Path, columns: StructType): Option[Seq[Any]] = {
    val names = Iterator.iterate(dir)(_.getParent).take(columns.size).map(p => if (p == null) "" else p.getName)
      .toSeq.reverse
    val parsed = names.zip(columns.fields).map { case (name, field) =>
      name.split("=", 2) match {
        case Array(col, raw) if ExternalCatalogUtils.unescapePathName(col).equalsIgnoreCase(field.name) =>
          val value = ExternalCatalogUtils.unescapePathName(raw)
          if (value == ExternalCatalogUtils.DEFAULT_PARTITION_NAME) Some(null)
          else try {
            Option(Casting.legacy(Literal(UTF8String.fromString(value)), field.dataType).eval())
          } catch { case NonFatal(_) => None }
        case _ => None
      }
    }
    if (parsed.forall(_.isDefined)) Some(parsed.map(_.get)) else None
  }

  private def up(path: Path, levels: Int): Path =
    Iterator.iterate(path)(p => if (p == null) null else p.getParent).drop(levels).next()

  /** `path` and its ancestors. */
  private def ancestry(path: Path): Iterator[Path] = Iterator.iterate(path)(_.getParent).takeWhile(_ != null)

  // One spelling per directory: trailing slashes, `file:///x` and `/x` are the same directory.
  // Paths already qualified (as listings spell them) are taken as they are: no file system call.
  private def qualified(source: FileSource, path: String): Path = {
    val p = new Path(path)
    if (p.toUri.getScheme != null && p.isAbsolute) p
    else {
      val fs = p.getFileSystem(source.fsRelation.sparkSession.sessionState.newHadoopConf())
      p.makeQualified(fs.getUri, fs.getWorkingDirectory)
    }
  }
}
