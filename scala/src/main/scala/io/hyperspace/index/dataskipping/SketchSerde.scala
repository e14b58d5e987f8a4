package io.hyperspace.index.dataskipping

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{ArrayNode, ObjectNode}

import io.hyperspace.HyperspaceException

/**
 * The JSON form of sketches, in the index log and between Python and the JVM:
 * {{{
 *   {"kind": "BloomFilter", "expr": "lower(email)", "params": {"fpp": "0.01"}}
 * }}}
 * `params` values are strings (numbers are accepted when reading). Built-in kinds have short
 * names ([[builtInKinds]]); any other kind is a registered name ([[register]]) or the fully
 * qualified name of a [[Sketch]] subclass with a public constructor `(String)` (no params) or
 * `(String, Map[String, String])`. Only subclasses of [[Sketch]] are ever instantiated.
 */
object SketchSerde {
  private val mapper = new ObjectMapper()

  /** Makes a sketch from its expression and params; throws [[HyperspaceException]] for bad params. */
  type Factory = (String, Map[String, String]) => Sketch

  private val builtIns: Map[String, Factory] = Map(
    MinMaxSketch.Kind -> { (e, p) => noParams(MinMaxSketch.Kind, p); MinMaxSketch(e) },
    NullCountSketch.Kind -> { (e, p) => noParams(NullCountSketch.Kind, p); NullCountSketch(e) },
    PartitionSketch.Kind -> { (e, p) => noParams(PartitionSketch.Kind, p); PartitionSketch(e) },
    BloomFilterSketch.Kind -> { (e, p) =>
      val ps = Params(BloomFilterSketch.Kind, e, p, Set("fpp", "expectedDistinct"))
      BloomFilterSketch(e, ps.double("fpp").getOrElse(0.01), ps.long("expectedDistinct"))
    },
    ValueListSketch.Kind -> { (e, p) =>
      val ps = Params(ValueListSketch.Kind, e, p, Set("maxValues", "fpp"))
      ValueListSketch(e, ps.int("maxValues").getOrElse(ValueListSketch.DefaultMaxValues),
        ps.double("fpp").getOrElse(0.01))
    },
    PrefixSketch.Kind -> { (e, p) =>
      PrefixSketch(e, Params(PrefixSketch.Kind, e, p, Set("length")).required(_.int("length"), "length"))
    },
    SuffixSketch.Kind -> { (e, p) =>
      SuffixSketch(e, Params(SuffixSketch.Kind, e, p, Set("length")).required(_.int("length"), "length"))
    })

  private val registered = new ConcurrentHashMap[String, Factory]()

  /** The short kind names of the built-in sketches. */
  def builtInKinds: Set[String] = builtIns.keySet

  /**
   * Registers `factory` for sketches of `kind` (in this JVM), for user sketches whose classes
   * cannot offer one of the constructors the class-name lookup uses.
   */
  def register(kind: String, factory: Factory): Unit = {
    if (builtIns.contains(kind)) {
      throw new HyperspaceException(s"Sketch kind '$kind' is built in and cannot be registered again.")
    }
    registered.put(kind, factory)
  }

  /** The JSON object of `sketch`. */
  def toJsonNode(sketch: Sketch): ObjectNode = {
    val node = mapper.createObjectNode()
    node.put("kind", sketch.kind)
    node.put("expr", sketch.expr)
    val params = node.putObject("params")
    sketch.params.toSeq.sortBy(_._1).foreach { case (k, v) => params.put(k, v) }
    node
  }

  /** The JSON array text of `sketches`. */
  def toJson(sketches: Seq[Sketch]): String = {
    val arr = mapper.createArrayNode()
    sketches.foreach(s => arr.add(toJsonNode(s)))
    mapper.writeValueAsString(arr)
  }

  /** Parses a JSON array written by [[toJson]]. */
  def fromJson(json: String): Seq[Sketch] = {
    val node = try mapper.readTree(json)
    catch {
      case e: Exception => throw new HyperspaceException(s"Invalid sketch list JSON: ${e.getMessage}", e)
    }
    node match {
      case arr: ArrayNode => arr.elements().asScala.map(fromJsonNode).toSeq
      case other => throw new HyperspaceException(s"A sketch list must be a JSON array; got $other.")
    }
  }

  /** Parses one sketch object written by [[toJsonNode]]. */
  def fromJsonNode(node: JsonNode): Sketch = {
    def text(field: String): String = Option(node.get(field)).filter(_.isTextual).map(_.asText()).getOrElse {
      throw new HyperspaceException(s"Sketch $node: '$field' must be a string.")
    }
    val kind = text("kind")
    val expr = text("expr")
    node.fieldNames().asScala.find(f => !Set("kind", "expr", "params")(f)).foreach { unknown =>
      throw new HyperspaceException(s"Sketch $kind($expr) has no field '$unknown'; its fields are kind, expr, params.")
    }
    val params: Map[String, String] = Option(node.get("params")).filterNot(_.isNull) match {
      case Some(obj: ObjectNode) =>
        obj.fields().asScala.flatMap { e =>
          val v = e.getValue
          if (v.isNull) None
          else if (v.isValueNode) Some(e.getKey -> v.asText())
          else throw new HyperspaceException(
            s"Sketch $kind($expr): param '${e.getKey}' must be a string or number; got $v.")
        }.toMap
      case Some(other) => throw new HyperspaceException(s"Sketch $kind($expr): 'params' must be an object; got $other.")
      case None => Map.empty
    }
    create(kind, expr, params)
  }

  /** The sketch of `kind` over `expr` with `params`. */
  def create(kind: String, expr: String, params: Map[String, String]): Sketch =
    builtIns.get(kind).orElse(Option(registered.get(kind))) match {
      case Some(factory) => factory(expr, params)
      case None => byClassName(kind, expr, params)
    }

  private def byClassName(kind: String, expr: String, params: Map[String, String]): Sketch = {
    val loader = Option(Thread.currentThread().getContextClassLoader).getOrElse(getClass.getClassLoader)
    val cls = try Class.forName(kind, false, loader)
    catch {
      case _: ClassNotFoundException =>
        throw new HyperspaceException(
          s"Unknown sketch kind '$kind' (for expression '$expr'): not a built-in sketch " +
            s"(${builtInKinds.toSeq.sorted.mkString(", ")}), not registered, and no class of that " +
            "name is on the class path (add the jar that defines it).")
    }
    if (!classOf[Sketch].isAssignableFrom(cls)) {
      throw new HyperspaceException(s"Sketch kind '$kind' names a class that is not a ${classOf[Sketch].getName}.")
    }
    val instance = try {
      if (params.isEmpty && cls.getConstructors.exists(_.getParameterTypes.sameElements(Seq(classOf[String])))) {
        cls.getConstructor(classOf[String]).newInstance(expr)
      } else {
        cls.getConstructor(classOf[String], classOf[Map[_, _]]).newInstance(expr, params)
      }
    } catch {
      case _: NoSuchMethodException =>
        throw new HyperspaceException(
          s"Sketch class $kind needs a public constructor (String) or (String, Map[String, String]) " +
            s"to be read back from the index log${if (params.nonEmpty) s" (it has params ${params.keys.mkString(", ")})"
              else ""}; " +
            "or register a factory with SketchSerde.register.")
      case e: java.lang.reflect.InvocationTargetException => throw e.getCause
    }
    instance.asInstanceOf[Sketch]
  }

  private def noParams(kind: String, params: Map[String, String]): Unit = if (params.nonEmpty) {
    throw new HyperspaceException(s"Sketch $kind takes no params; got ${params.keys.toSeq.sorted.mkString(", ")}.")
  }

  /** Typed access to a built-in sketch's params, rejecting unknown names. */
  private final case class Params(kind: String, expr: String, values: Map[String, String], known: Set[String]) {
    values.keySet.diff(known).toSeq.sorted.headOption.foreach { p =>
      throw new HyperspaceException(
        s"Sketch $kind($expr): unknown param '$p'; known: ${known.toSeq.sorted.mkString(", ")}.")
    }
    private def parse[T](name: String, what: String)(f: String => T): Option[T] = values.get(name).map { v =>
      try f(v.trim)
      catch {
        case _: NumberFormatException =>
          throw new HyperspaceException(s"Sketch $kind($expr): param '$name' must be $what; got '$v'.")
      }
    }
    def double(name: String): Option[Double] = parse(name, "a number")(_.toDouble)
    def long(name: String): Option[Long] = parse(name, "an integer")(_.toLong)
    def int(name: String): Option[Int] = parse(name, "an integer")(_.toInt)
    def required[T](get: Params => Option[T], name: String): T = get(this).getOrElse {
      throw new HyperspaceException(s"Sketch $kind($expr): param '$name' is required.")
    }
  }
}
