package io.hyperspace

/**
 * The Spark internals whose shape differs between Spark lines, for Spark 4.0: extractors and
 * factories with Hyperspace's own, stable signatures over Spark's case classes (constructor
 * arity, field order, curried arguments). The rest of Hyperspace matches on these, never on the
 * Spark classes' constructors, so supporting another Spark line means one more copy of this
 * package (scala/src/main/scala-spark-<line>/) and no change elsewhere. docs/architecture.md,
 * "Spark lines", says what goes here; tests/test_code_layout.py keeps it that way.
 */
package object shims
