package io.hyperspace.index

/**
 * `CoveringIndexConfig` is the name the original Hyperspace gave [[io.hyperspace.index.IndexConfig]]
 * in its later releases; both name the same class, so code written either way compiles.
 */
package object covering {
  type CoveringIndexConfig = io.hyperspace.index.IndexConfig
  val CoveringIndexConfig: io.hyperspace.index.IndexConfig.type = io.hyperspace.index.IndexConfig
}
