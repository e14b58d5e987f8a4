package io.hyperspace.index

import java.util.ServiceLoader

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

import io.hyperspace.HyperspaceException
import io.hyperspace.index.covering.CoveringIndexKind
import io.hyperspace.index.dataskipping.DataSkippingIndexKind
import io.hyperspace.index.split.SplitIndex
import io.hyperspace.index.zorder.ZOrderCoveringIndex
import io.hyperspace.log.{IndexDefinition, LogEntry}

/**
 * The index kinds this JVM knows: the built-in covering, data skipping, Z-order covering and split kinds, and every
 * [[IndexKind]] listed in a `META-INF/services/io.hyperspace.index.IndexKind` file on the
 * classpath (so a jar, or a test's classpath, adds a kind without touching the core). Everything
 * that differs by kind is found here from the log's kind string, and nowhere else.
 */
object IndexKinds extends Logging {

  private val builtIns: Seq[IndexKind] = Seq(CoveringIndexKind, DataSkippingIndexKind, ZOrderCoveringIndex, SplitIndex)

  // Loaded once: the classpath of a driver does not change while it runs.
  private lazy val registered: Map[String, IndexKind] = {
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    val found = try ServiceLoader.load(classOf[IndexKind], loader).asScala.toSeq
    catch {
      case NonFatal(e) =>
        logWarning(s"Hyperspace could not load the index kinds listed on the classpath: $e", e)
        Nil
    }
    found.foldLeft(builtIns.map(k => k.name -> k).toMap) { (kinds, kind) =>
      kinds.get(kind.name) match {
        case Some(existing) if existing.getClass != kind.getClass =>
          logWarning(s"Hyperspace ignores index kind ${kind.getClass.getName}: the kind name '${kind.name}' is " +
            s"already taken by ${existing.getClass.getName}.")
          kinds
        case _ => kinds + (kind.name -> kind)
      }
    }
  }

  /** The names of the registered kinds, sorted. */
  def names: Seq[String] = registered.keys.toSeq.sorted

  /** The kind named `name`, if registered. */
  def find(name: String): Option[IndexKind] = registered.get(name)

  /** The kind of `definition` (of index `indexName`), or a [[HyperspaceException]] naming both. */
  def of(definition: IndexDefinition, indexName: String): IndexKind =
    find(definition.kind).getOrElse(throw unknown(definition.kind, indexName))

  /** The kind of `entry`'s index. */
  def of(entry: LogEntry): IndexKind = of(entry.index, entry.name)

  /** The kind a user config names. */
  def of(config: IndexKindConfig): IndexKind =
    find(config.kindName).getOrElse(throw unknown(config.kindName, config.name))

  /** The kind named `name` for index `indexName` (e.g. a config passed as JSON with its kind name). */
  def named(name: String, indexName: String): IndexKind = find(name).getOrElse(throw unknown(name, indexName))

  /** Whether `entry`'s kind is registered and takes part in `family`'s rewrites. */
  def offers(entry: LogEntry, family: RewriteFamily): Boolean = find(entry.index.kind).exists(_.rewrites == family)

  /** The error for an index whose kind is not registered in this JVM. */
  def unknown(kind: String, indexName: String): HyperspaceException =
    new HyperspaceException(
      s"Index '$indexName' is of kind '$kind', which this Hyperspace does not know; registered kinds: " +
        s"${names.mkString(", ")}. Add the jar that provides the kind (it lists it in " +
        "META-INF/services/io.hyperspace.index.IndexKind), or upgrade Hyperspace.")
}
