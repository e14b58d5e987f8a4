package io.hyperspace.sql

import java.io.File

import scala.util.control.NonFatal

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

import io.hyperspace.{BuildInfo, HyperspaceSparkSessionExtension, SparkSessionSuite}
import io.hyperspace.config.HyperspaceConf

/**
 * Spark's own SQL test corpus ([[SparkSqlCorpus]]) as a regression suite: installing Hyperspace
 * changes nothing Spark parses or answers. Every statement of every file parses to the same plan,
 * or fails with the same error, through Hyperspace's parser as through Spark's, by each entry
 * point (`parsePlan`, and `parsePlanWithParameters` on lines that have it); and a fixed sample of
 * self-contained files (inline tables, temporary views, session variables, EXECUTE IMMEDIATE)
 * returns the same rows or error class, statement by statement, in a session with Hyperspace
 * installed and enabled as in one without. `HYPERSPACE_SQL_CORPUS=full` (`make test-full`, every
 * line) also binds parameters both ways, named and positional. `HYPERSPACE_SQL_CORPUS=all` (`make
 * sql-corpus-all`) runs every file, not the sample: files needing Spark's test tables fail alike
 * in both sessions, and many print what differs between any two sessions of plain Spark (a table's
 * creation time and location, a view's captured configuration), so that run also runs each file
 * in a second plain session: where the two plain runs disagree only the outcome (rows or error
 * class) is compared. Each file then runs three times, too long for a routine target.
 */
class SparkSqlCorpusSuite extends SparkSessionSuite {

  // The suite's own session is Spark's alone; Hyperspace's is built beside it.
  override protected def withExtension: Boolean = false

  private lazy val corpus: Seq[SparkSqlCorpus.CorpusFile] = SparkSqlCorpus.load(SparkSqlCorpus.jarFromEnvironment())

  /**
   * A session of the same SparkContext with the extension, with its own catalog and warehouse
   * (`create()` gives it its own shared state), so tables one file creates in one session are
   * not there for the other.
   */
  private lazy val withHyperspace: SparkSession = SparkSession.builder()
    .withExtensions(new HyperspaceSparkSessionExtension)
    .config("spark.sql.warehouse.dir", new File(tempDir, "warehouse-hyperspace").getAbsolutePath)
    .create()

  /** Plain Spark again, with its own catalog and warehouse as the Hyperspace session has: the control. */
  private lazy val plainAgain: SparkSession = SparkSession.builder()
    .config("spark.sql.warehouse.dir", new File(tempDir, "warehouse-control").getAbsolutePath)
    .create()

  // The files whose statements run in CI: self-contained (inline tables and temporary views, no
  // test tables or data files), about 30 s together on a loaded 2-core machine. Session variables
  // and EXECUTE IMMEDIATE reach the parameterized parser; the others add joins and set operations.
  private val executionSample = Seq(
    "execute-immediate.sql",
    "sql-session-variables.sql",
    "inline-table.sql",
    "join-empty-relation.sql",
    "except.sql")

  private val corpusMode: String = sys.env.getOrElse("HYPERSPACE_SQL_CORPUS", "ci")
  require(Set("ci", "full", "all").contains(corpusMode), s"HYPERSPACE_SQL_CORPUS=$corpusMode: ci, full or all")
  private val everyBinding: Boolean = corpusMode != "ci"
  private val everyFile: Boolean = corpusMode == "all"

  /** Statement counts of Spark's SQLQueryTestSuite on a version it was checked on (files, statements). */
  private val knownCounts = Map("4.2.0" -> (350, 19285))

  /**
   * Results that differ between any two runs, Hyperspace or not: for these only whether the
   * statement succeeded (or its error class) is compared, by reason.
   */
  private val unrepeatable: Seq[(String, scala.util.matching.Regex)] = Seq(
    "the clock is read when the statement runs" ->
      "(?i)\\b(current_timestamp|current_time|now|localtimestamp|current_date|curdate|unix_timestamp)\\b".r,
    "random values" -> "(?i)\\b(rand|randn|random|uuid|shuffle|randstr|uniform)\\s*\\(".r)

  private val plainDiffers = "two sessions of plain Spark answer it apart (the every-file run's control)"

  // What two parses or runs of one text print apart, Hyperspace or not: expression ids (a JVM-wide
  // counter), objects printed by identity (`Class@hash`: closures some plan nodes hold, a script's
  // handler triggers) and the random UUID SQL scripting labels an unlabelled block with.
  private val exprId = "#\\d+".r
  private val identityHash = "(?<=[\\w$/])@[0-9a-f]{1,8}\\b".r
  private val uuid = "\\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\b".r

  private def normalized(text: String): String =
    uuid.replaceAllIn(identityHash.replaceAllIn(exprId.replaceAllIn(text, "#x"), "@x"), "<uuid>")

  test("the corpus is cut into statements as Spark's SQLQueryTestSuite cuts it") {
    val text = Seq(
      "--SET spark.sql.ansi.enabled = true, a.b=c",
      "-- a comment; with a semicolon",
      "--IMPORT other.sql",
      "SELECT 'a\\;b';",
      "SELECT 2; SELECT",
      "  3;",
      "--QUERY-DELIMITER-START",
      "/* a block; kept whole */ SELECT 4;",
      "--QUERY-DELIMITER-END",
      "--DEBUG",
      "SELECT 5;",
      "  -- indented comment",
      ";;").mkString("\n")
    val file = SparkSqlCorpus.parse("f.sql", text, Map("other.sql" -> "-- c\nSELECT 0;\n").get)
    assert(file.settings == Seq("spark.sql.ansi.enabled" -> "true", "a.b" -> "c"))
    assert(file.statements ==
      Seq("SELECT 0", "SELECT 'a\\;b'", "SELECT 2", "SELECT\n  3", "/* a block; kept whole */ SELECT 4", "SELECT 5"))
    val statements = corpus.map(_.statements.size).sum
    knownCounts.get(BuildInfo.sparkVersion).foreach(counts => assert((corpus.size, statements) == counts))
    assert(corpus.size > 100 && statements > 5000, s"${corpus.size} files, $statements statements")
  }

  test("every statement of the corpus parses to the same plan or error with and without Hyperspace") {
    val sparks = spark.sessionState.sqlParser
    val ours = withHyperspace.sessionState.sqlParser
    assert(!sparks.isInstanceOf[HyperspaceSqlParser])
    assert(ours.isInstanceOf[HyperspaceSqlParser], ours.getClass)
    // CI binds parameters one way; make test-full both ways.
    val entryPoints = this.entryPoints(sparks).zip(this.entryPoints(ours)).take(if (everyBinding) Int.MaxValue else 2)
    val differences = Seq.newBuilder[String]
    var compared = 0
    val started = System.nanoTime()
    SparkSession.setActiveSession(spark)
    corpus.foreach { file =>
      // A file's settings reach the parser too (double-quoted identifiers, keyword handling).
      withSettings(spark, file.settings) {
        entryPoints.foreach { case ((entry, theirs), (_, mine)) =>
          file.statements.zipWithIndex.foreach { case (sql, i) =>
            val (expected, actual) = (parseOutcome(theirs, sql), parseOutcome(mine, sql))
            compared += 1
            if (expected != actual)
              differences +=
                s"${file.name} #${i + 1} [$entry]: ${oneLine(sql)}\n  Spark: ${oneLine(expected)}\n  Hyperspace: ${oneLine(actual)}"
          }
        }
      }
    }
    info(
      f"$compared parses of ${corpus.map(_.statements.size).sum} statements in ${(System.nanoTime() - started) / 1e9}%.1f s")
    val found = differences.result()
    assert(found.isEmpty,
      s"${found.size} of $compared parses differ${listedIn(found)}:\n${found.take(30).mkString("\n")}")
  }

  test("a sample of the corpus's files returns the same rows or error class with Hyperspace enabled") {
    val started = System.nanoTime()
    val files = if (everyFile) corpus
    else {
      val byName = corpus.map(f => f.name -> f).toMap
      executionSample.map(name =>
        byName.getOrElse(name, fail(s"$name is not in the corpus of Spark ${BuildInfo.sparkVersion}")))
    }
    val differences = Seq.newBuilder[String]
    var compared = 0
    val excluded = scala.collection.mutable.Map.empty[String, Int].withDefaultValue(0)
    files.foreach { file =>
      val plain = spark.newSession()
      val hyperspace = withHyperspace.newSession()
      hyperspace.conf.set(HyperspaceConf.SYSTEM_PATH.key, new File(tempDir, "indexes").getAbsolutePath)
      hyperspace.conf.set(HyperspaceConf.APPLY_ENABLED.key, "true")
      val fileStarted = System.nanoTime()
      val theirs = withSettings(plain, file.settings)(file.statements.map(run(plain, _)))
      val mine = withSettings(hyperspace, file.settings)(file.statements.map(run(hyperspace, _)))
      val control = if (!everyFile) None
      else {
        val again = plainAgain.newSession()
        Some(withSettings(again, file.settings)(file.statements.map(run(again, _))))
      }
      info(f"${file.name}: ${file.statements.size} statements in ${(System.nanoTime() - fileStarted) / 1e9}%.1f s")
      file.statements.indices.foreach { i =>
        val sql = file.statements(i)
        val reason = unrepeatable.collectFirst { case (why, pattern) if pattern.findFirstIn(sql).isDefined => why }
          .orElse(control.filter(_(i).text != theirs(i).text).map(_ => plainDiffers))
        reason.foreach(r => excluded(r) += 1)
        val (expected, actual) = reason match {
          case Some(_) => (theirs(i).kind, mine(i).kind)
          case None => (theirs(i).text, mine(i).text)
        }
        compared += 1
        if (expected != actual)
          differences +=
            s"${file.name} #${i + 1}: ${oneLine(sql)}\n  Spark: ${oneLine(expected)}\n  Hyperspace: ${oneLine(actual)}"
      }
    }
    info(f"$compared statements of ${files.size} files run twice in ${(System.nanoTime() - started) / 1e9}%.1f s")
    excluded.foreach { case (why, n) => info(s"$n statements compared by outcome only: $why") }
    val found = differences.result()
    assert(found.isEmpty,
      s"${found.size} of $compared statements differ${listedIn(found)}:\n${found.take(30).mkString("\n")}")
  }

  /**
   * Writes every difference to the file the build names, as a failure message shows only the
   * first few, and says where; the file holds the last failing test's list.
   */
  private def listedIn(differences: Seq[String]): String =
    sys.env.get("HYPERSPACE_SQL_CORPUS_DIFFERENCES").filter(_ => differences.nonEmpty).map { path =>
      java.nio.file.Files.writeString(java.nio.file.Paths.get(path), differences.mkString("", "\n", "\n"))
      s" (all of them in $path)"
    }.getOrElse("")

  private def entryPoints(parser: ParserInterface): Seq[(String, String => LogicalPlan)] =
    ("parsePlan" -> ((sql: String) => parser.parsePlan(sql))) +: ParameterizedEntryPoints.of(parser)

  private def parseOutcome(parse: String => LogicalPlan, sql: String): String =
    try normalized(parse(sql).treeString)
    catch {
      case e: StackOverflowError => s"${e.getClass.getName}"
      case NonFatal(e) => s"${e.getClass.getName}: ${normalized(String.valueOf(e.getMessage))}"
    }

  /** What running a statement gave: `kind` is success or the error class, `text` adds the rows. */
  private final case class Outcome(kind: String, text: String)

  private def run(session: SparkSession, sql: String): Outcome =
    try {
      val df = session.sql(sql)
      val rows = df.collect().map(show).sorted
      Outcome(s"rows ${df.schema.catalogString}", normalized(s"${df.schema.catalogString}\n${rows.mkString("\n")}"))
    } catch {
      case NonFatal(e) =>
        val error = e match {
          case t: SparkThrowable if t.getCondition != null => s"error ${t.getCondition}"
          case _ => s"error ${e.getClass.getName}"
        }
        Outcome(error, error)
    }

  /** A value as text that two equal results share (Row's own toString prints byte arrays by identity). */
  private def show(value: Any): String = value match {
    case null => "null"
    case bytes: Array[Byte] => bytes.map(b => f"$b%02x").mkString("X'", "", "'")
    case row: Row => row.toSeq.map(show).mkString("[", ",", "]")
    case map: scala.collection.Map[_, _] => map.map { case (k, v) => s"${show(k)}->${show(v)}" }.mkString("{", ",", "}")
    case seq: scala.collection.Seq[_] => seq.map(show).mkString("(", ",", ")")
    case other => other.toString
  }

  /** Runs `body` with a file's `--SET` settings in `session` (those it takes), then puts them back. */
  private def withSettings[T](session: SparkSession, settings: Seq[(String, String)])(body: => T): T = {
    val before = settings.map { case (k, _) => k -> session.conf.getOption(k) }
    val applied = settings.filter { case (k, v) =>
      try { session.conf.set(k, v); true }
      catch { case NonFatal(_) => false }
    }.map(_._1).toSet
    try body
    finally before.filter(b => applied(b._1)).foreach {
        case (k, Some(v)) => session.conf.set(k, v)
        case (k, None) => session.conf.unset(k)
      }
  }

  private def oneLine(text: String): String = {
    val flat = text.replaceAll("\\s+", " ")
    if (flat.length > 300) flat.take(300) + "..." else flat
  }
}
