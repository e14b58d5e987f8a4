package io.hyperspace.index

import java.nio.charset.StandardCharsets.UTF_8
import java.util.Locale

import io.hyperspace.HyperspaceException

/**
 * The rules for index names: each name is one directory under the system path, so every
 * operation checks the name before it builds a path from it (a name like `../other/x` would
 * otherwise reach outside the system path). Names are case-insensitive: `X` and `x` are one
 * index (see [[io.hyperspace.log.NameClaims]]).
 */
object IndexNames {
  /** The most bytes (UTF-8) a name may have: a file name on common filesystems. */
  val MaxBytes = 255

  /** Fails with a message saying what is wrong with `name`, if anything is. */
  def validate(name: String): Unit = {
    def invalid(why: String): Nothing =
      throw new HyperspaceException(s"Invalid index name '${printable(name)}': $why.")
    if (name == null) invalid("the name is null")
    if (name.trim.isEmpty) invalid("the name is empty")
    // Both the name (its directory) and its case-folded key (its claim file) must fit a file name.
    val bytes = math.max(name.getBytes(UTF_8).length, key(name).getBytes(UTF_8).length)
    if (bytes > MaxBytes) invalid(s"it is $bytes bytes long in UTF-8; at most $MaxBytes are allowed")
    if (name.exists(c => Character.isISOControl(c))) invalid("it contains control characters")
    if (name.exists(c => c == '/' || c == '\\' || c == ':')) invalid("it contains a path separator (/, \\ or :)")
    if (name == "." || name == ".." || name.contains("..")) invalid("it contains '..'")
    if (name.startsWith(".") || name.startsWith("_")) {
      invalid("it starts with '.' or '_' (such directories are hidden from file listings)")
    }
    if (name != name.trim) invalid("it starts or ends with white space")
  }

  /** The case-insensitive identity of a name: two names with the same key are one index. */
  def key(name: String): String = name.toLowerCase(Locale.ROOT)

  private def printable(name: String): String =
    Option(name).map(_.flatMap(c => if (Character.isISOControl(c)) f"\\u${c.toInt}%04x" else c.toString))
      .map(s => if (s.length > 300) s.take(300) + "..." else s)
      .getOrElse("null")
}
