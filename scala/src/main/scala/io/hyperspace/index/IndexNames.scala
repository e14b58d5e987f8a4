package io.hyperspace.index

import io.hyperspace.HyperspaceException

/** The rules for index names: each name is one directory under the system path. */
object IndexNames {
  val MaxLength = 255

  /** Fails with a message saying what is wrong with `name`, if anything is. */
  def validate(name: String): Unit = {
    def invalid(why: String): Nothing =
      throw new HyperspaceException(s"Invalid index name '${printable(name)}': $why.")
    if (name == null || name.trim.isEmpty) invalid("the name is empty")
    if (name.length > MaxLength) invalid(s"it is ${name.length} characters long; at most $MaxLength are allowed")
    if (name.exists(c => Character.isISOControl(c))) invalid("it contains control characters")
    if (name.exists(c => c == '/' || c == '\\' || c == ':')) invalid("it contains a path separator (/, \\ or :)")
    if (name == "." || name == ".." || name.contains("..")) invalid("it contains '..'")
    if (name.startsWith(".") || name.startsWith("_")) {
      invalid("it starts with '.' or '_' (such directories are hidden from file listings)")
    }
    if (name != name.trim) invalid("it starts or ends with white space")
  }

  private def printable(name: String): String =
    Option(name).map(_.flatMap(c => if (Character.isISOControl(c)) f"\\u${c.toInt}%04x" else c.toString))
      .getOrElse("null")
}
