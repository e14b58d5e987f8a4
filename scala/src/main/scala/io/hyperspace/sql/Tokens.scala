package io.hyperspace.sql

import io.hyperspace.HyperspaceException

/**
 * One lexical token of a Hyperspace statement, with its place in the statement text so that
 * embedded SQL (a query, a sketch expression, a table name) can be handed to Spark's parser as
 * the user wrote it.
 */
private[sql] final case class Token(kind: Token.Kind, text: String, start: Int, end: Int) {

  /** A bare word equal to `word`, ignoring case (a backquoted identifier is never a keyword). */
  def is(word: String): Boolean = kind == Token.Word && text.equalsIgnoreCase(word)

  def isSymbol(symbol: String): Boolean = kind == Token.Symbol && text == symbol
}

private[sql] object Token {
  sealed trait Kind
  /** A bare identifier or keyword. */
  case object Word extends Kind
  /** A `backquoted` identifier; `text` is the unquoted name. */
  case object Quoted extends Kind
  /** A '...' or "..." string; `text` is the unescaped value. */
  case object Str extends Kind
  case object Number extends Kind
  /** Any other single character: ( ) , = . ; + ... */
  case object Symbol extends Kind
}

/**
 * Splits a statement into tokens the way Spark's lexer would for the parts Hyperspace reads:
 * identifiers, backquoted identifiers, strings (with Spark's backslash escapes), numbers and
 * single-character symbols; whitespace and `--` / `/* */` comments are skipped. Strings and
 * backquoted names are single tokens, so commas and parentheses inside them never confuse the
 * parser's bracket counting.
 */
private[sql] object Tokenizer {

  def apply(sql: String): IndexedSeq[Token] = {
    val out = IndexedSeq.newBuilder[Token]
    var i = 0
    val n = sql.length
    def fail(what: String, at: Int): Nothing =
      throw new HyperspaceException(s"Cannot parse Hyperspace statement: $what at position $at of: $sql")
    while (i < n) {
      val c = sql.charAt(i)
      val skipped = skipIgnored(sql, i)
      if (skipped > i) i = skipped
      else if (sql.startsWith("/*", i)) fail("unterminated comment", i)
      else if (c == '`') {
        val sb = new StringBuilder
        var j = i + 1
        var closed = false
        while (j < n && !closed) {
          if (sql.charAt(j) == '`') {
            if (j + 1 < n && sql.charAt(j + 1) == '`') { sb += '`'; j += 2 }
            else { closed = true; j += 1 }
          } else { sb += sql.charAt(j); j += 1 }
        }
        if (!closed) fail("unterminated `identifier`", i)
        out += Token(Token.Quoted, sb.toString, i, j)
        i = j
      } else if (c == '\'' || c == '"') {
        val sb = new StringBuilder
        var j = i + 1
        var closed = false
        while (j < n && !closed) {
          val d = sql.charAt(j)
          if (d == '\\' && j + 1 < n) {
            sb += unescape(sql.charAt(j + 1)); j += 2
          } else if (d == c) { closed = true; j += 1 }
          else { sb += d; j += 1 }
        }
        if (!closed) fail("unterminated string", i)
        out += Token(Token.Str, sb.toString, i, j)
        i = j
      } else if (c.isLetterOrDigit || c == '_') {
        var j = i
        while (j < n &&
          (sql.charAt(j).isLetterOrDigit || sql.charAt(j) == '_' ||
            (c.isDigit && sql.charAt(j) == '.') ||
            (c.isDigit && (sql.charAt(j) == '+' || sql.charAt(j) == '-') && "eE".contains(sql.charAt(j - 1))))) j += 1
        val text = sql.substring(i, j)
        out += Token(if (c.isDigit) Token.Number else Token.Word, text, i, j)
        i = j
      } else {
        out += Token(Token.Symbol, c.toString, i, i + 1)
        i += 1
      }
    }
    out.result()
  }

  /**
   * The first `max` words of `sql`, lower-cased, after the whitespace and comments that lead it
   * and those between them; fewer when something other than a word comes first. One pass over
   * the statement's start, with no backtracking, so that it can run on every statement Spark
   * parses.
   */
  def leadingWords(sql: String, max: Int): Seq[String] = {
    val words = Seq.newBuilder[String]
    var count = 0
    var i = skipIgnored(sql, 0)
    while (count < max && i < sql.length && (sql.charAt(i).isLetter || sql.charAt(i) == '_')) {
      var j = i
      while (j < sql.length && (sql.charAt(j).isLetterOrDigit || sql.charAt(j) == '_')) j += 1
      words += sql.substring(i, j).toLowerCase(java.util.Locale.ROOT)
      count += 1
      i = skipIgnored(sql, j)
    }
    words.result()
  }

  /**
   * The position after the whitespace and `--` / `/* */` comments at `from`; a bracketed
   * comment never closed is left where it starts, for the caller to refuse or to stop at.
   */
  private def skipIgnored(sql: String, from: Int): Int = {
    var i = from
    var moved = true
    while (moved && i < sql.length) {
      if (sql.charAt(i).isWhitespace) i += 1
      else if (sql.startsWith("--", i)) {
        val eol = sql.indexOf('\n', i)
        i = if (eol < 0) sql.length else eol + 1
      } else if (sql.startsWith("/*", i) && sql.indexOf("*/", i + 2) >= 0) i = sql.indexOf("*/", i + 2) + 2
      else moved = false
    }
    i
  }

  private def unescape(c: Char): Char = c match {
    case 'n' => '\n'
    case 't' => '\t'
    case 'r' => '\r'
    case '0' => '\u0000'
    case other => other
  }
}
