package io.hyperspace.index.dataskipping

/**
 * The literal start and end of a SQL LIKE pattern (`%` any string, `_` any one character,
 * `escape` makes the next character literal), e.g. `ab%c_d` has prefix `ab` and suffix `d`.
 * A pattern without wildcards is its own prefix and suffix.
 */
final case class LikePattern(pattern: String, escape: Char) {
  // (character, isWildcard) per code point.
  private lazy val tokens: Seq[(String, Boolean)] = {
    val out = Seq.newBuilder[(String, Boolean)]
    val cps = pattern.codePoints().toArray
    var i = 0
    while (i < cps.length) {
      val c = cps(i)
      if (c == escape && i + 1 < cps.length) {
        out += ((new String(Character.toChars(cps(i + 1))), false))
        i += 2
      } else {
        out += ((new String(Character.toChars(c)), c == '%' || c == '_'))
        i += 1
      }
    }
    out.result()
  }

  /** The literal text before the first wildcard, if not empty. */
  def prefix: Option[String] =
    Some(tokens.takeWhile(!_._2).map(_._1).mkString).filter(_.nonEmpty)

  /** The literal text after the last wildcard, if not empty. */
  def suffix: Option[String] =
    Some(tokens.reverse.takeWhile(!_._2).reverse.map(_._1).mkString).filter(_.nonEmpty)
}
