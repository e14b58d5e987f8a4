package io.hyperspace.sql

import java.io.File
import java.nio.charset.StandardCharsets
import java.util.zip.ZipFile

import scala.jdk.CollectionConverters._

/**
 * Spark's own SQL test corpus: the files under `sql-tests/inputs/` of the line's spark-sql
 * test-sources jar (build.sbt's `sqlCorpusJar`), cut into statements the way Spark's
 * `SQLQueryTestSuite` cuts them, so the statements here are the ones Spark tests itself with.
 */
object SparkSqlCorpus {

  /** A file of the corpus: its path under `sql-tests/inputs/`, its `--SET` settings, its statements. */
  final case class CorpusFile(name: String, settings: Seq[(String, String)], statements: Seq[String])

  private val InputsPrefix = "sql-tests/inputs/"

  /** The jar build.sbt resolved, from the test JVM's environment. */
  def jarFromEnvironment(): File = {
    val path = sys.env.getOrElse("HYPERSPACE_SQL_CORPUS_JAR",
      throw new IllegalStateException(
        "HYPERSPACE_SQL_CORPUS_JAR is not set: run the suite through sbt (build.sbt sets it)"))
    val jar = new File(path)
    require(jar.isFile, s"HYPERSPACE_SQL_CORPUS_JAR names no file: $path")
    jar
  }

  /** Every `.sql` file of the corpus in `jar`, by name. */
  def load(jar: File): Seq[CorpusFile] = {
    val zip = new ZipFile(jar)
    val texts = try {
      zip.entries().asScala.filter(e =>
        !e.isDirectory && e.getName.startsWith(InputsPrefix) && e.getName.endsWith(".sql"))
        .map { e =>
          val in = zip.getInputStream(e)
          try e.getName.stripPrefix(InputsPrefix) -> new String(in.readAllBytes(), StandardCharsets.UTF_8)
          finally in.close()
        }.toMap
    } finally zip.close()
    require(texts.nonEmpty, s"$jar has no $InputsPrefix*.sql files")
    texts.keys.toSeq.sorted.map(name => parse(name, texts(name), texts.get))
  }

  /**
   * One file's settings and statements. `imported` gives another file's text by name, for
   * `--IMPORT <name>` (its statements come first, as Spark runs them).
   */
  def parse(name: String, text: String, imported: String => Option[String]): CorpusFile = {
    val (comments, code) = commentsAndCode(text)
    val importedCode = comments.filter(_.startsWith("--IMPORT ")).map(_.substring("--IMPORT ".length))
      .flatMap(other => imported(other).map(t => commentsAndCode(t)._2).getOrElse(Nil))
    CorpusFile(name, settings(comments), statements(importedCode ++ code))
  }

  /**
   * The comment lines (a trimmed line starting `--`) apart from the code. `--QUERY-DELIMITER-*`
   * markers and `--DEBUG` stay with the code, where they mark statements.
   */
  private def commentsAndCode(text: String): (Seq[String], Seq[String]) =
    text.split("\n").toSeq.partition { line =>
      val t = line.trim
      t.startsWith("--") && !t.startsWith("--QUERY-DELIMITER") && t != "--DEBUG"
    }

  private def settings(comments: Seq[String]): Seq[(String, String)] =
    comments.filter(_.startsWith("--SET ")).flatMap(_.substring("--SET ".length).split(",")).map { pair =>
      val (key, value) = pair.span(_ != '=')
      key.trim -> value.drop(1).trim
    }

  /**
   * The statements of `code`: a block between `--QUERY-DELIMITER-START` and `--QUERY-DELIMITER-END`
   * is one statement whatever semicolons it holds; the rest is cut at every `;` that no backslash
   * escapes. Lines starting `--` left inside a statement (`--DEBUG`) are dropped, and so are
   * statements left empty.
   */
  private def statements(code: Seq[String]): Seq[String] = {
    val pieces = Seq.newBuilder[String]
    val outside = Seq.newBuilder[String]
    var block: Option[StringBuilder] = None
    code.foreach { line =>
      val t = line.trim
      if (t.startsWith("--QUERY-DELIMITER-START")) {
        pieces ++= cutAtSemicolons(outside.result()); outside.clear()
        block = Some(new StringBuilder)
      } else if (t.startsWith("--QUERY-DELIMITER-END")) {
        block.foreach(b => pieces += b.toString.stripSuffix(";"))
        block = None
      } else block match {
        case Some(b) => b.append('\n').append(line)
        case None => outside += line
      }
    }
    pieces ++= cutAtSemicolons(outside.result())
    pieces.result().map(_.trim).filter(_.nonEmpty)
      .map(_.split("\n").filterNot(_.startsWith("--")).mkString("\n").trim)
      .filter(_.nonEmpty)
  }

  private def cutAtSemicolons(lines: Seq[String]): Seq[String] =
    if (lines.isEmpty) Nil else lines.mkString("\n").split("(?<=[^\\\\]);").toSeq
}
