package org.apache.spark.sql.hyperspace

import org.apache.spark.sql.catalyst.FunctionIdentifier

/**
 * Functions injected with `SparkSessionExtensions.injectFunction`, as the session's function
 * registry knows them.
 *
 * Spark 4.0 keys its function registry by the bare name (4.2 qualifies it as
 * `system.builtin.<name>`).
 */
object InjectedFunctions {

  /** The registry's identifier of the injected function `name`. */
  def identifier(name: String): FunctionIdentifier = FunctionIdentifier(name)
}
