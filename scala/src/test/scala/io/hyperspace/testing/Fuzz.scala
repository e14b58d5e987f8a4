package io.hyperspace.testing

/**
 * The seed and size of the generated (differential) tests: fixed in CI, so a failure reproduces;
 * `make fuzz` sets `HYPERSPACE_FUZZ_SEED` and `HYPERSPACE_FUZZ_QUERIES` for long runs on fresh
 * seeds. Each test passes its own defaults: its CI seed and a count that keeps the suite short.
 */
object Fuzz {
  def seed(default: Long): Long = sys.env.get("HYPERSPACE_FUZZ_SEED").map(_.toLong).getOrElse(default)

  def queries(default: Int): Int = sys.env.get("HYPERSPACE_FUZZ_QUERIES").map(_.toInt).getOrElse(default)
}
