package org.apache.spark.sql.hyperspace

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry

/**
 * Functions injected with `SparkSessionExtensions.injectFunction`, as the session's function
 * registry knows them.
 *
 * Spark 4.2 keys its function registry by three-part names and registers an injected
 * function as `system.builtin.<name>` (a lookup by a one-part name fails an assertion); the
 * `private[sql]` `builtinFunctionIdentifier` builds that name.
 */
object InjectedFunctions {

  /** The registry's identifier of the injected function `name`. */
  def identifier(name: String): FunctionIdentifier = FunctionRegistry.builtinFunctionIdentifier(name)
}
