package io.hyperspace.sql

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, OneRowRelation, Project}

import io.hyperspace.HyperspaceException
import io.hyperspace.index.{IndexConfig, IndexKindConfig, IndexKinds}
import io.hyperspace.index.dataskipping.{DataSkippingIndexConfig, Sketch, SketchSerde}

/**
 * Recognizes and parses Hyperspace's SQL statements (grammar in docs/sql.md). A statement is
 * Hyperspace's when it starts with `<verb> HYPERSPACE INDEX` (CREATE, REFRESH, OPTIMIZE, DROP,
 * RESTORE, VACUUM, CANCEL, DESCRIBE/DESC), `SHOW HYPERSPACE INDEXES | INDEX KINDS | INDEX SUMMARY | STATUS |
 * SKIPPING STATS` or `EXPLAIN HYPERSPACE`, and Spark's grammar does not take it; everything
 * else goes to Spark's parser untouched, so Spark's own `CREATE INDEX` (DSv2), Delta's
 * `OPTIMIZE`/`VACUUM` and tables named `hyperspace` or `indexed` keep working. Once a
 * statement is recognized, every syntax error is a [[HyperspaceException]] naming the position.
 * Embedded SQL — the query of the EXPLAIN family, sketch expressions, the source table — is
 * passed on as written, to Spark's parser or to the same API the Scala and Python calls use.
 */
object HyperspaceStatements {

  private val verbs =
    Set("create", "refresh", "optimize", "drop", "restore", "vacuum", "cancel", "show", "describe", "desc", "explain",
      "clear")

  // The Indexed DataFrame's statements: CACHE / UNCACHE INDEXED TABLE, INSERT INTO INDEXED TABLE,
  // SHOW INDEXED TABLES, LOOKUP INDEXED TABLE.
  private val indexedForms = Seq(
    Seq("cache", "indexed", "table"),
    Seq("uncache", "indexed", "table"),
    Seq("insert", "into", "indexed", "table"),
    Seq("show", "indexed", "tables"),
    Seq("lookup", "indexed", "table"))

  // The words that decide whether a statement is Hyperspace's: the longest form's.
  private val formWords = indexedForms.map(_.size).max

  /**
   * The plan of `sql` when it is a Hyperspace statement, None when it is for Spark. `parseQuery`
   * parses an embedded query (Spark's `ParserInterface.parseQuery`, which accepts queries only,
   * so `EXPLAIN HYPERSPACE DROP TABLE t` cannot run a command).
   *
   * A statement is Hyperspace's only if its leading words are one of Hyperspace's forms and
   * Spark's grammar (`sparkParse`) refuses it: `INSERT INTO indexed TABLE src` or `DESCRIBE
   * hyperspace index` over tables named `indexed` and `hyperspace` stay Spark's. REFRESH is the
   * exception, since Spark's `REFRESH <any text>` (a resource) would take every REFRESH HYPERSPACE
   * INDEX. The leading words are read by a bounded scan, so no statement, however many spaces or
   * comments lead it, costs more than one pass over its start.
   */
  def parse(
      sql: String,
      parseQuery: String => LogicalPlan,
      sparkParse: String => LogicalPlan): Option[LogicalPlan] = {
    val words = Tokenizer.leadingWords(sql, formWords)
    val ours = words.lift(1).contains("hyperspace") && verbs.contains(words.head)
    val indexed = !ours && indexedForms.exists(form => words.startsWith(form))
    if (!ours && !indexed) None
    else if (words.head != "refresh" && isSparks(sql, sparkParse)) None
    else {
      val parser = new StatementParser(sql, Tokenizer(sql), parseQuery)
      if (ours) parser.statement() else parser.indexedTableStatement()
    }
  }

  private def isSparks(sql: String, sparkParse: String => LogicalPlan): Boolean =
    try { sparkParse(sql); true }
    catch { case _: ParseException => false }
}

/** An option's value as written, and whether it was a string literal. */
private[sql] final case class OptionValue(key: String, value: String, quoted: Boolean)

private[sql] final class StatementParser(sql: String, tokens: IndexedSeq[Token], parseQuery: String => LogicalPlan) {
  private var pos = 0

  private def peek(ahead: Int = 0): Option[Token] = tokens.lift(pos + ahead)
  private def peekIs(word: String, ahead: Int = 0): Boolean = peek(ahead).exists(_.is(word))
  private def peekSymbol(symbol: String, ahead: Int = 0): Boolean = peek(ahead).exists(_.isSymbol(symbol))

  private def fail(expected: String): Nothing = {
    val found = peek().map(t => s"'${sql.substring(t.start, t.end)}' at position ${t.start}").getOrElse("the end")
    throw new HyperspaceException(
      s"Cannot parse Hyperspace statement: expected $expected but found $found in: $sql (grammar: docs/sql.md)")
  }

  private def next(): Token = { val t = peek().getOrElse(fail("more")); pos += 1; t }

  private def accept(word: String): Boolean = if (peekIs(word)) { pos += 1; true }
  else false

  private def acceptSymbol(symbol: String): Boolean = if (peekSymbol(symbol)) { pos += 1; true }
  else false

  private def expect(word: String): Unit = if (!accept(word)) fail(word.toUpperCase)

  private def expectSymbol(symbol: String): Unit = if (!acceptSymbol(symbol)) fail(s"'$symbol'")

  /**
   * A refresh or optimize mode, a word or a string, as written: the API checks it (any case), so
   * a wrong one gets the API's message naming the index and the valid modes.
   */
  private def mode(): Option[String] = peek() match {
    case Some(t) if t.kind == Token.Word || t.kind == Token.Str => pos += 1; Some(t.text)
    case _ => None
  }

  /** The end of the statement (a trailing `;` allowed). */
  private def end(): Unit = {
    acceptSymbol(";")
    if (peek().isDefined) fail("the end of the statement")
  }

  private def identifier(what: String): String = peek() match {
    case Some(t) if t.kind == Token.Word || t.kind == Token.Quoted => pos += 1; t.text
    case _ => fail(what)
  }

  /** `a`, `a.b`, `` `a b`.c ``: the parts joined with dots, as the Scala API takes column names. */
  private def columnName(): String = {
    val parts = Seq.newBuilder[String]
    parts += identifier("a column name")
    while (acceptSymbol(".")) parts += identifier("a column name")
    parts.result().mkString(".")
  }

  private def columnList(): Seq[String] = {
    expectSymbol("(")
    val cols = Seq.newBuilder[String]
    cols += columnName()
    while (acceptSymbol(",")) cols += columnName()
    expectSymbol(")")
    cols.result()
  }

  /** A table, a view or a file scan (`parquet.`/path``), as written: Spark resolves it. */
  private def source(): String = {
    val first = peek().getOrElse(fail("a table name or format.`path`"))
    identifier("a table name or format.`path`")
    while (acceptSymbol(".")) identifier("a name part after '.'")
    sql.substring(first.start, tokens(pos - 1).end)
  }

  /** The rest of the statement as a query, parsed by Spark. */
  private def query(): LogicalPlan = {
    val first = peek().getOrElse(fail("a query"))
    pos = tokens.size // the query is the rest of the statement
    parseQuery(sql.substring(first.start).trim.stripSuffix(";"))
  }

  /** A literal value (number, string, true/false) as text, for options and sketch params. */
  private def literal(what: String): String = peek() match {
    case Some(t) if t.kind == Token.Number || t.kind == Token.Str => pos += 1; t.text
    case Some(t) if t.is("true") || t.is("false") => pos += 1; t.text.toLowerCase
    case Some(t) if t.isSymbol("-") && peek(1).exists(_.kind == Token.Number) => pos += 2; "-" + tokens(pos - 1).text
    case _ => fail(what)
  }

  /** Refuses a key (any case) that `seen` already holds, rather than letting the last one win. */
  private def requireOnce(seen: scala.collection.mutable.Set[String], key: String, what: => String): Unit =
    if (!seen.add(key.toLowerCase(java.util.Locale.ROOT))) {
      throw new HyperspaceException(s"$what is given twice; give it once.")
    }

  /**
   * `(key = value, ...)`, each value with whether it was written as a string, since an option
   * typed as a number or a boolean takes no string: SQL is as strict as the API. A key given
   * twice is refused rather than the last one silently winning.
   */
  private def keyValues(what: String, owner: String): Seq[OptionValue] = {
    expectSymbol("(")
    val pairs = Seq.newBuilder[OptionValue]
    val seen = scala.collection.mutable.Set.empty[String]
    if (!peekSymbol(")")) {
      do {
        val key = identifier(s"a $what name")
        requireOnce(seen, key, s"The $what '$key' of $owner")
        expectSymbol("=")
        val quoted = peek().exists(_.kind == Token.Str)
        pairs += OptionValue(key, literal(s"a value for $key"), quoted)
      } while (acceptSymbol(","))
    }
    expectSymbol(")")
    pairs.result()
  }

  def statement(): Option[LogicalPlan] = {
    val verb = next().text.toLowerCase
    expect("hyperspace")
    val plan: Option[LogicalPlan] = verb match {
      case "explain" => Some(explain())
      case "show" => show()
      case "clear" =>
        expect("recorded")
        expect("queries")
        Some(ClearRecordedQueriesCommand())
      // Not `<verb> HYPERSPACE INDEX <something>`: Spark's, e.g. DESCRIBE hyperspace [index] for a
      // table named hyperspace (and its column index).
      case _ if !peekIs("index") || peek(1).isEmpty => None
      case _ =>
        expect("index")
        Some(verb match {
          case "create" => create()
          case "refresh" =>
            val name = identifier("an index name")
            RefreshIndexCommand(name, mode())
          case "optimize" =>
            val name = identifier("an index name")
            OptimizeIndexCommand(name, mode())
          case "drop" => DropIndexCommand(identifier("an index name"))
          case "restore" => RestoreIndexCommand(identifier("an index name"))
          case "vacuum" =>
            val name = identifier("an index name")
            val hours = if (accept("retain")) {
              val text = literal("a number of hours")
              expect("hours")
              Some(number(text, s"RETAIN of index '$name'")(_.toDouble))
            } else None
            VacuumIndexCommand(name, hours)
          case "cancel" =>
            val name = identifier("an index name")
            CancelIndexCommand(name, accept("force"))
          case "describe" | "desc" => DescribeIndexCommand(identifier("an index name"))
        })
    }
    if (plan.isDefined) end()
    plan
  }

  /**
   * `CACHE INDEXED TABLE name ON (key) [PARTITIONS n] [AS query]`,
   * `INSERT INTO INDEXED TABLE name query`, `UNCACHE INDEXED TABLE [IF EXISTS] name`,
   * `SHOW INDEXED TABLES`, `LOOKUP INDEXED TABLE name KEYS (value, ...)`.
   */
  def indexedTableStatement(): Option[LogicalPlan] = {
    val verb = next().text.toLowerCase
    val plan = verb match {
      case "lookup" =>
        expect("indexed"); expect("table")
        val name = identifier("an indexed table name")
        expect("keys")
        LookupIndexedTableCommand(name, lookupKeys(name))
      case "show" =>
        expect("indexed"); expect("tables")
        ShowIndexedTablesCommand()
      case "uncache" =>
        expect("indexed"); expect("table")
        val ifExists = accept("if") && { expect("exists"); true }
        UncacheIndexedTableCommand(identifier("an indexed table name"), ifExists)
      case "insert" =>
        expect("into"); expect("indexed"); expect("table")
        val name = identifier("an indexed table name")
        InsertIntoIndexedTableCommand(name, query())
      case _ => // cache
        expect("indexed"); expect("table")
        val name = identifier("an indexed table name")
        expect("on")
        val key = columnList() match {
          case Seq(k) => k
          case more => throw new HyperspaceException(s"Cannot cache indexed table '$name' on " +
              s"${more.mkString("(", ", ", ")")}: an Indexed DataFrame has one key column.")
        }
        val partitions = if (accept("partitions")) {
          val text = literal("a number of partitions")
          Some(number(text, s"PARTITIONS of indexed table '$name'")(_.toInt))
        } else None
        val source = if (accept("as")) Some(query()) else None
        CacheIndexedTableCommand(name, key, partitions, source)
    }
    end()
    Some(plan)
  }

  // `(value, ...)`: SQL literals or constant expressions (`DATE '2024-01-07'`, `X'62'`), parsed
  // by Spark as the select list of a query of one row and nothing else.
  private def lookupKeys(table: String): LogicalPlan = {
    val open = peek().filter(_.isSymbol("(")).getOrElse(fail("'(' and the keys to look up"))
    val text = sql.substring(open.start).trim.stripSuffix(";").trim
    pos = tokens.size
    if (!text.endsWith(")") || text.length < 3) fail("the keys to look up in parentheses")
    parseQuery("SELECT " + text.substring(1, text.length - 1)) match {
      case p @ Project(_, OneRowRelation()) => p
      case _ => throw new HyperspaceException(s"Cannot look up in indexed table '$table': KEYS takes " +
          s"a list of values, got $text.")
    }
  }

  private def number[T](text: String, what: String)(convert: String => T): T =
    try convert(text)
    catch { case _: NumberFormatException => throw new HyperspaceException(s"$what must be a number; got '$text'.") }

  // CREATE HYPERSPACE INDEX name ON source
  //   ( (cols) [INCLUDE (cols)] [USING COVERING] [WITH (options)]
  //   | USING DATASKIPPING (sketch, ...)
  //   | USING KIND 'kindName' CONFIG 'json' )
  private def create(): CreateIndexCommand = {
    val name = identifier("an index name")
    expect("on")
    val table = source()
    val config: IndexKindConfig =
      if (peekSymbol("(")) covering(name)
      else {
        val alternatives = "(indexed columns), USING DATASKIPPING (sketches) or USING KIND 'name' CONFIG 'json'"
        if (!accept("using")) fail(alternatives)
        if (accept("dataskipping")) DataSkippingIndexConfig(name, sketches())
        else if (accept("kind")) kindConfig(name)
        else if (peekIs("covering")) fail("the indexed columns before USING COVERING")
        else fail(alternatives)
      }
    CreateIndexCommand(table, config)
  }

  private def covering(name: String): IndexConfig = {
    val indexed = columnList()
    val included = if (accept("include")) columnList() else Nil
    if (accept("using")) expect("covering")
    val options = if (accept("with")) keyValues("option", s"index '$name'") else Nil
    coveringConfig(name, indexed, included, options)
  }

  private def coveringConfig(
      name: String, indexed: Seq[String], included: Seq[String], options: Seq[OptionValue]): IndexConfig = {
    var buckets: Option[Int] = None
    var lineage: Option[Boolean] = None
    options.foreach { case OptionValue(key, value, quoted) =>
      key.toLowerCase match {
        case "numbuckets" =>
          if (quoted)
            throw new HyperspaceException(s"numBuckets of index '$name' must be a number; got the string '$value'.")
          buckets = Some(number(value, s"numBuckets of index '$name'")(_.toInt))
        case "lineage" => lineage = Some(value match {
            case "true" if !quoted => true
            case "false" if !quoted => false
            case other =>
              val written = if (quoted) s"the string '$other'" else s"'$other'"
              throw new HyperspaceException(s"lineage of index '$name' must be true or false; got $written.")
          })
        case _ => throw new HyperspaceException(
            s"Unknown option '$key' of index '$name'; known: numBuckets, lineage.")
      }
    }
    IndexConfig(name, indexed, included, buckets, lineage)
  }

  /** `USING KIND 'kindName' CONFIG 'json'`: any registered kind, its config as that kind's JSON. */
  private def kindConfig(name: String): IndexKindConfig = {
    val kindName = literal("the kind name as a string")
    expect("config")
    val json = literal("the config as a JSON string")
    val kind = IndexKinds.named(kindName, name)
    val config =
      try kind.configFromJson(json)
      catch {
        case NonFatal(e) => throw new HyperspaceException(
            s"Index '$name': the CONFIG is not a valid $kindName config ($json): ${e.getMessage}", e)
      }
    if (config.name != name) {
      throw new HyperspaceException(
        s"Index '$name': the CONFIG names another index, '${config.name}'; use the same name in both.")
    }
    config
  }

  private val builtInSketches: Map[String, String] =
    SketchSerde.builtInKinds.flatMap(k => Seq(k.toLowerCase -> k, (k + "Sketch").toLowerCase -> k)).toMap

  // (sketch, ...) where sketch = kind '(' expr [, param = value]* ')'; kind is a built-in name
  // (MinMax, BloomFilter, ...; any case, "Sketch" suffix optional) or a quoted registered kind or
  // class name.
  private def sketches(): Seq[Sketch] = {
    expectSymbol("(")
    val out = Seq.newBuilder[Sketch]
    do out += sketch() while (acceptSymbol(","))
    expectSymbol(")")
    out.result()
  }

  private def sketch(): Sketch = {
    val kindToken = peek().getOrElse(fail("a sketch (MinMax, BloomFilter, ValueList, Prefix, Suffix, ...)"))
    val kind = kindToken.kind match {
      case Token.Word => builtInSketches.getOrElse(kindToken.text.toLowerCase, kindToken.text)
      case Token.Quoted | Token.Str => kindToken.text
      case _ => fail("a sketch (MinMax, BloomFilter, ValueList, Prefix, Suffix, ...)")
    }
    pos += 1
    expectSymbol("(")
    val expr = expression(s"the expression of sketch $kind")
    val params = Seq.newBuilder[(String, String)]
    val seen = scala.collection.mutable.Set.empty[String]
    while (acceptSymbol(",")) {
      val key = identifier(s"a parameter of sketch $kind (name = value)")
      requireOnce(seen, key, s"The parameter '$key' of sketch $kind($expr)")
      expectSymbol("=")
      params += key -> literal(s"a value for $key")
    }
    expectSymbol(")")
    SketchSerde.create(kind, expr, params.result().toMap)
  }

  /** The SQL text up to the next `,` or `)` outside brackets: an expression, as written. */
  private def expression(what: String): String = {
    val start = pos
    var depth = 0
    while (peek().isDefined && !(depth == 0 && (peekSymbol(",") || peekSymbol(")")))) {
      if (peekSymbol("(")) depth += 1
      if (peekSymbol(")")) depth -= 1
      pos += 1
    }
    if (pos == start) fail(what)
    sql.substring(tokens(start).start, tokens(pos - 1).end)
  }

  private def show(): Option[LogicalPlan] = {
    if (accept("indexes")) {
      Some(ShowIndexesCommand(if (accept("on")) Some(source()) else None))
    } else if (peekIs("index") && peekIs("kinds", 1)) {
      pos += 2
      Some(ShowIndexKindsCommand())
    } else if (peekIs("index") && peekIs("summary", 1)) {
      pos += 2
      Some(ShowIndexSummaryCommand())
    } else if (accept("status")) {
      Some(ShowStatusCommand())
    } else if (peekIs("recorded") && peekIs("queries", 1)) {
      pos += 2
      Some(ShowRecordedQueriesCommand())
    } else if (accept("recommendations")) {
      Some(recommendations())
    } else if (accept("skipping")) {
      expect("stats")
      Some(ShowSkippingStatsCommand(if (accept("for")) Some(query()) else None))
    } else None
  }

  // SHOW HYPERSPACE RECOMMENDATIONS [BUDGET n] [LIMIT k] [WITH REJECTED] FOR 'query' [WEIGHT w] [, 'query' [WEIGHT w]]...
  // SHOW HYPERSPACE RECOMMENDATIONS [BUDGET n] [LIMIT k] [WITH REJECTED] FOR RECORDED QUERIES
  private def recommendations(): LogicalPlan = {
    def number(what: String): String = peek() match {
      case Some(t) if t.kind == Token.Number => pos += 1; t.text
      case _ => fail(what)
    }
    def whole(what: String): Long = {
      val text = number(what)
      scala.util.Try(BigDecimal(text).toLongExact).getOrElse(throw new HyperspaceException(
          s"Cannot parse Hyperspace statement: $what must be a whole number; got $text in: $sql"))
    }
    val budget = if (accept("budget")) Some(whole("a budget in bytes")) else None
    val limit = if (accept("limit")) Some(whole("a maximum index count")) else None
    val withRejected = accept("with")
    if (withRejected) expect("rejected")
    expect("for")
    if (limit.exists(_ > Int.MaxValue)) fail("a smaller LIMIT")
    if (peekIs("recorded") && peekIs("queries", 1)) {
      pos += 2
      end()
      RecommendRecordedCommand(budget, limit.map(_.toInt), withRejected)
    } else {
      val queries = Seq.newBuilder[(String, Double)]
      do {
        if (!peek().exists(_.kind == Token.Str)) fail("a query as a string literal, or RECORDED QUERIES")
        // Adjacent string literals are one, as in Spark ('a' 'b' is 'ab').
        val text = new StringBuilder
        while (peek().exists(_.kind == Token.Str)) text ++= next().text
        val weight = if (accept("weight")) number("a weight").toDouble else 1.0
        queries += text.toString -> weight
      } while (acceptSymbol(","))
      end()
      RecommendCommand(queries.result(), budget, limit.map(_.toInt), withRejected)
    }
  }

  // EXPLAIN HYPERSPACE [VERBOSE] query
  // EXPLAIN HYPERSPACE WHY NOT [INDEX name] query
  // EXPLAIN HYPERSPACE WHAT IF INDEX name (cols) [INCLUDE (cols)] [WITH (options)] [, INDEX ...] query
  private def explain(): LogicalPlan = {
    if (peekIs("why") && peekIs("not", 1)) {
      pos += 2
      val name = if (accept("index")) Some(identifier("an index name")) else None
      WhyNotCommand(query(), name)
    } else if (peekIs("what") && peekIs("if", 1)) {
      pos += 2
      val configs = Seq.newBuilder[IndexConfig]
      do {
        expect("index")
        val name = identifier("an index name")
        val indexed = columnList()
        val included = if (accept("include")) columnList() else Nil
        val options = if (peekIs("with") && peekSymbol("(", 1)) { pos += 1; keyValues("option", s"index '$name'") }
        else Nil
        configs += coveringConfig(name, indexed, included, options)
      } while (acceptSymbol(","))
      WhatIfCommand(query(), configs.result())
    } else {
      val verbose = accept("verbose")
      ExplainHyperspaceCommand(query(), verbose)
    }
  }
}
