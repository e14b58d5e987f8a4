package io.hyperspace

/**
 * The one exception type Hyperspace throws for anything the user can act on: bad input, an
 * unknown index, an invalid configuration value, an operation that is not allowed in the
 * index's current state. The message always names the index, column, key or file concerned.
 *
 * The Python package translates it (and its subclasses, by simple class name) into the Python
 * exception of the same name with the same message.
 */
class HyperspaceException(message: String, cause: Throwable = null)
  extends RuntimeException(message, cause)

/**
 * Thrown when the Hyperspace classes are reachable but the session was not built with
 * `spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension`, so there is no optimizer
 * rule to switch on.
 */
class HyperspaceExtensionNotInstalledException(message: String)
  extends HyperspaceException(message)

/**
 * An operation on an index could not run because another operation holds the index and the two
 * are incompatible (the paper's Table 1), or because it lost the race to write the next log
 * entry. Nothing of the failed operation is left behind; retry when the other has finished.
 */
class HyperspaceConflictException(message: String) extends HyperspaceException(message)

/** No index of that name exists (or it was vacuumed). */
class HyperspaceIndexNotFoundException(message: String) extends HyperspaceException(message)

/**
 * An index log entry cannot be read: not valid JSON, a field missing or of the wrong type, an
 * unknown state or spec version, or an unreadable file. The message names the entry's file.
 * An index whose newest entry is damaged is listed as CORRUPT (docs/log-format.md).
 */
class HyperspaceCorruptedLogException(message: String, cause: Throwable = null)
  extends HyperspaceException(message, cause)
