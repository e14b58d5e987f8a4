package io.hyperspace.index

import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The schemas log entries record as JSON (an index's stored columns, its source's data and
 * partition columns), parsed once per distinct text: planning asks for them on every optimizer
 * pass, for every candidate index, and an entry (so its text) never changes. Bounded, since a
 * long-running driver sees ever new schemas as sources evolve and indexes come and go.
 */
object StoredSchemas {

  private val parsed = new BoundedCache[String, StructType](1024)

  /** The struct `json` (Spark's JSON form of a schema) describes. */
  def parse(json: String): StructType = parsed.getOrElseUpdate(json, DataType.fromJson(json).asInstanceOf[StructType])
}
