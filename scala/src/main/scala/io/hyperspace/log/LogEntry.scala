package io.hyperspace.log

import scala.annotation.meta.{field, getter}

import com.fasterxml.jackson.annotation.{JsonIgnore, JsonInclude}
import com.fasterxml.jackson.databind.{DeserializationFeature, JsonNode, ObjectMapper, SerializationFeature}
import com.fasterxml.jackson.module.scala.DefaultScalaModule

import io.hyperspace.HyperspaceCorruptedLogException
import io.hyperspace.sources.FileKey

/** Index states (docs/log-format.md, "States"). */
object States {
  val ACTIVE = "ACTIVE"
  val DELETED = "DELETED"
  val DOESNOTEXIST = "DOESNOTEXIST"
  val CREATING = "CREATING"
  val REFRESHING = "REFRESHING"
  val OPTIMIZING = "OPTIMIZING"
  val DELETING = "DELETING"
  val RESTORING = "RESTORING"
  val VACUUMING = "VACUUMING"

  val stable: Set[String] = Set(ACTIVE, DELETED, DOESNOTEXIST)
  val transient: Set[String] = Set(CREATING, REFRESHING, OPTIMIZING, DELETING, RESTORING, VACUUMING)

  /** Whether `state` is stable (readers use only stable entries). */
  def isStable(state: String): Boolean = stable.contains(state)
}

/** Who wrote an entry: lets a later operation tell whether a transient entry's process lives. */
case class Owner(host: String, pid: Long, startedAt: Long)

object Owner {
  /** This JVM. */
  lazy val current: Owner = Owner(
    scala.util.Try(java.net.InetAddress.getLocalHost.getHostName).getOrElse("unknown"),
    ProcessHandle.current().pid(),
    ProcessHandle.current().info().startInstant().map[Long](_.toEpochMilli).orElse(0L))

  /**
   * Whether `owner` is a process running on this host now: its pid is alive and, when both
   * start times are known, started when the owner did (a reused pid is another process).
   */
  def isAliveOnThisHost(owner: Owner): Boolean =
    owner.host == current.host && {
      val handle = ProcessHandle.of(owner.pid).filter(_.isAlive)
      handle.isPresent && {
        val started = handle.get.info().startInstant().map[Long](_.toEpochMilli).orElse(0L)
        owner.startedAt == 0L || started == 0L || math.abs(started - owner.startedAt) <= StartTimeSlackMs
      }
    }

  // Start times are read from the OS with a resolution of a clock tick; allow for rounding.
  private val StartTimeSlackMs = 2000L

  /** Whether `owner` is a process on this host that is no longer running. */
  def isDeadOnThisHost(owner: Owner): Boolean =
    owner.host == current.host && !isAliveOnThisHost(owner)
}

/** What the index is (kind and kind-specific definition). */
case class IndexDefinition(
    kind: String,
    kindVersion: Int,
    indexedColumns: Seq[String],
    includedColumns: Seq[String],
    numBuckets: Int,
    lineage: Boolean,
    schema: String,
    properties: Map[String, String] = Map.empty)

/**
 * One index data file; `path` is relative to the index root and starts with its data version
 * directory (`v__=2/part-...parquet`), because incremental refresh and optimize keep using the
 * untouched files of earlier versions.
 */
case class ContentFile(
    path: String,
    size: Long,
    modificationTime: Long,
    @(JsonInclude @field @getter)(JsonInclude.Include.NON_ABSENT) stats: Option[FileStats] = None) {
  /** The data version directory the file lies in. */
  @JsonIgnore
  def dataVersion: Option[Int] = Content.versionOf(path.takeWhile(_ != '/'))
  /** The file name, without its version directory. */
  @JsonIgnore
  def name: String = path.substring(path.lastIndexOf('/') + 1)
}

/**
 * What a kind recorded of the rows of one data file (the Z-order covering index: its indexed
 * columns), so a query can tell from the log alone that a file holds no matching row.
 *
 * @param rowCount  the file's number of rows
 * @param columns   per stored column name (as in `index.schema`): its range in this file
 * @param locations what a split index file holds of source locations (absent for other kinds and
 *                  in logs written before it was recorded)
 */
case class FileStats(
    rowCount: Long,
    columns: Map[String, ColumnStats],
    @(JsonInclude @field @getter)(JsonInclude.Include.NON_ABSENT) locations: Option[LocationStats] = None)

/**
 * A split index data file's locations, so a seek can estimate how many source row groups a filter
 * on the keys reaches before reading any index data (approximate counts, HyperLogLog++).
 *
 * @param keys          distinct key values (tuples, for several key columns) in the file
 * @param keyRowGroups  distinct (key, source file, row group) triples in the file
 * @param rowGroupBytes the sum over the file's rows of the compressed bytes of the row group each
 *                      row lies in (divided by `rowCount`: the row-weighted mean row group size)
 */
case class LocationStats(keys: Long, keyRowGroups: Long, rowGroupBytes: Long)

/**
 * The smallest and largest non-null value of a column in one file, in Spark's ordering, written
 * as text in the column's type (docs/log-format.md, "content"); both absent when every value is
 * NULL. A column whose values cannot be written exactly has no entry in [[FileStats.columns]].
 */
case class ColumnStats(min: Option[String], max: Option[String], nullCount: Long)

/**
 * The index data: the files under `root`, and `dataVersion`, the version directory the operation
 * that wrote this entry wrote into (new files always go to a new version directory).
 */
case class Content(root: String, dataVersion: Int, files: Seq[ContentFile]) {
  /** Total bytes of the index data files. */
  def sizeInBytes: Long = files.map(_.size).sum
  /** The directory this entry's operation wrote into. */
  def dataPath: String = s"$root/${Content.versionDirName(dataVersion)}"
  /** The fully qualified path of `file`. */
  def pathOf(file: ContentFile): String = s"$root/${file.path}"
  /** The data versions whose directories hold this entry's files (and the one it wrote). */
  def versionsUsed: Set[Int] = files.flatMap(_.dataVersion).toSet + dataVersion
}

object Content {
  /** Name of the directory of data version `v`. */
  def versionDirName(v: Int): String = s"v__=$v"
  private val VersionDir = "v__=(\\d+)".r
  /** The data version a directory name denotes, if it is a version directory. */
  def versionOf(dirName: String): Option[Int] = dirName match {
    case VersionDir(v) => scala.util.Try(v.toInt).toOption
    case _ => None
  }
}

/**
 * One source file the index was built from; identity is (path, size, modificationTime,
 * deletionVector). `deletionVector` is the unique id of the Delta deletion vector the file's rows
 * were read with (absent when it has none, and for file sources): the index holds the rows left
 * after it, so a file whose deletion vector changed is another file.
 */
case class SourceFile(
    path: String,
    size: Long,
    modificationTime: Long,
    id: Long,
    @(JsonInclude @field @getter)(JsonInclude.Include.NON_ABSENT) deletionVector: Option[String] = None) {
  /** The file's identity: a file rewritten in place, or masked otherwise, is another file. */
  @JsonIgnore
  def key: FileKey = FileKey(path, size, modificationTime, deletionVector)
}

/**
 * The data an index was built from. `files` are the source files the index data covers;
 * `appendedFiles` and `deletedFiles` are changes a quick refresh recorded without touching the
 * data (queries make up for them with hybrid scan), empty otherwise.
 */
case class Source(
    format: String,
    rootPaths: Seq[String],
    options: Map[String, String],
    schema: String,
    partitionSchema: String,
    table: Option[String],
    files: Seq[SourceFile],
    appendedFiles: Seq[SourceFile],
    deletedFiles: Seq[SourceFile]) {
  /** Total bytes of the source files the index data covers. */
  def sizeInBytes: Long = files.map(_.size).sum

  /** The source files as of the newest refresh: indexed, minus recorded deletes, plus appends. */
  @JsonIgnore
  def currentFiles: Seq[SourceFile] = {
    val deleted = deletedFiles.map(_.key).toSet
    files.filterNot(f => deleted.contains(f.key)) ++ appendedFiles
  }

  /** Whether a quick refresh recorded changes the index data does not reflect. */
  @JsonIgnore
  def hasPendingChanges: Boolean = appendedFiles.nonEmpty || deletedFiles.nonEmpty
}

/** A fingerprint of the source file set. */
case class Signature(provider: String, value: String)

object Signature {
  val Provider = "FileSetMD5"

  /** The FileSetMD5 signature of `files` (docs/log-format.md, "signature"). */
  def of(files: Seq[SourceFile]): Signature = {
    val text = files.sortBy(_.path)
      .map(f => s"${f.path}\t${f.size}\t${f.modificationTime}").mkString("\n")
    val md5 = java.security.MessageDigest.getInstance("MD5")
      .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8))
    Signature(Provider, md5.map("%02x".format(_)).mkString)
  }
}

/** One immutable log entry (docs/log-format.md, "Entry"). */
case class LogEntry(
    specVersion: Int,
    id: Long,
    name: String,
    state: String,
    operation: String,
    timestamp: Long,
    enabled: Boolean,
    owner: Owner,
    index: IndexDefinition,
    content: Content,
    source: Source,
    signature: Signature,
    extra: Map[String, String] = Map.empty,
    incarnation: Option[String] = None) {

  /**
   * What names this entry for good, across every index ever created at this place: the index
   * root, the incarnation (a random id chosen by the create and kept by every later entry, so
   * an index deleted, vacuumed and created again under the same name is another index although
   * its ids restart at 0) and the id. Entries written before incarnations existed fall back to
   * their own timestamp. Caches of anything derived from an entry are keyed by this.
   */
  @JsonIgnore
  def identity: (String, String, Long) =
    (content.root, incarnation.getOrElse(s"legacy@$timestamp"), id)

  /** Whether readers may use this entry. */
  @JsonIgnore
  def isStable: Boolean = States.isStable(state)

  /** The table version this entry was built from, when its source is a table format's table. */
  @JsonIgnore
  def tableVersion: Option[Long] =
    if (signature.provider.endsWith("Version")) signature.value.toLongOption else None

  /** Whether this entry describes an index that was never built (whatIf's estimates). */
  @JsonIgnore
  def isHypothetical: Boolean = operation == LogEntry.HypotheticalOperation

  /** This entry as the next one in the log, in `newState`, written by `operation` now. */
  def next(newState: String, newOperation: String): LogEntry =
    copy(id = id + 1, state = newState, operation = newOperation,
      timestamp = System.currentTimeMillis(), owner = Owner.current,
      enabled = newState == States.ACTIVE)

  /** The JSON text of this entry. */
  def toJson: String = LogEntry.mapper.writeValueAsString(this)
}

object LogEntry {
  /** The spec version this code writes and reads. */
  val SpecVersion = 1

  /** A fresh incarnation id, for the first entry of a newly created index. */
  def newIncarnation(): String = java.util.UUID.randomUUID().toString

  /** The operation of whatIf's in-memory entries; never written to a log. */
  val HypotheticalOperation = "WHATIF"

  private[log] val mapper: ObjectMapper = {
    val m = new ObjectMapper()
    m.registerModule(DefaultScalaModule)
    m.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
    m.configure(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES, true)
    m.configure(SerializationFeature.INDENT_OUTPUT, true)
    m.setSerializationInclusion(JsonInclude.Include.ALWAYS)
    m
  }

  /** Parses an entry; `where` (the file) is named in the error if it is not a valid entry. */
  def fromJson(json: String, where: String): LogEntry = {
    val (tree, entry) = try {
      val tree = mapper.readTree(json)
      // readTree reads an empty or blank file as a missing node; readValue would refuse it.
      if (tree == null || !tree.isObject) throw new IllegalArgumentException("not a JSON object")
      (tree, mapper.treeToValue(tree, classOf[LogEntry]))
    } catch {
      case e: Exception =>
        throw new HyperspaceCorruptedLogException(
          s"Corrupted index log entry $where: ${firstLine(e.getMessage)}", e)
    }
    missingField(entry, tree, "").foreach { field =>
      throw new HyperspaceCorruptedLogException(s"Corrupted index log entry $where: field '$field' is missing.")
    }
    if (entry.specVersion != SpecVersion) {
      throw new HyperspaceCorruptedLogException(
        s"Index log entry $where has specVersion ${entry.specVersion}; this Hyperspace reads " +
          s"version $SpecVersion. Upgrade Hyperspace to read this index.")
    }
    if (!States.stable.contains(entry.state) && !States.transient.contains(entry.state)) {
      throw new HyperspaceCorruptedLogException(
        s"Corrupted index log entry $where: unknown state '${entry.state}'.")
    }
    entry
  }

  /**
   * The first required field (not an Option, no default) absent from `node`, the JSON `value` was
   * read from. Asked of the JSON, not of `value`: what Jackson puts in place of an absent field
   * differs between its versions (null for a Seq in Spark 4.0's, an empty Seq in Spark 4.2's), and
   * an entry missing its files must never read as an index of no files.
   */
  private def missingField(value: Any, node: JsonNode, path: String): Option[String] = value match {
    case p: Product if p.productArity > 0 && node != null && node.isObject && !p.isInstanceOf[Option[_]] =>
      val defaulted = hasDefault(p.getClass)
      p.productElementNames.zip(p.productIterator).zipWithIndex.flatMap { case ((name, v), i) =>
        val child = node.get(name)
        val absent = child == null || child.isNull
        if (absent && !v.isInstanceOf[Option[_]] && !defaulted(i)) Some(s"$path.$name".stripPrefix("."))
        else if (absent) None
        else missingField(v, child, s"$path.$name")
      }.nextOption()
    case _: scala.collection.Map[_, _] => None
    case seq: Iterable[_] if node != null && node.isArray =>
      seq.iterator.zipWithIndex.flatMap { case (v, i) => missingField(v, node.get(i), s"$path[$i]") }.nextOption()
    case _ => None
  }

  // Whether the case class's i-th parameter has a default: its companion's `<init>$default$<i+1>`.
  private def hasDefault(caseClass: Class[_]): Int => Boolean = {
    val companion = scala.util.Try(Class.forName(caseClass.getName + "$", false, caseClass.getClassLoader))
    val names = companion.map(_.getMethods.map(_.getName).toSet).getOrElse(Set.empty[String])
    i => names.contains("$lessinit$greater$default$" + (i + 1))
  }

  private def firstLine(s: String): String =
    Option(s).map(_.linesIterator.take(1).mkString).getOrElse("unreadable")
}
