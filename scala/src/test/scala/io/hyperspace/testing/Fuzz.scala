package io.hyperspace.testing

/**
 * The seed and size of the generated (differential) tests: fixed in CI, so a failure reproduces;
 * `make fuzz` sets `HYPERSPACE_FUZZ_SEED` and `HYPERSPACE_FUZZ_QUERIES` for long runs on fresh
 * seeds. Each test passes its own defaults: its CI seed and a count that keeps the suite short.
 */
object Fuzz {
  def seed(default: Long): Long = sys.env.get("HYPERSPACE_FUZZ_SEED").map(_.toLong).getOrElse(default)

  def queries(default: Int): Int = sys.env.get("HYPERSPACE_FUZZ_QUERIES").map(_.toInt).getOrElse(default)

  /**
   * Whether the generated tests run at their full sizes (`make test-full` sets
   * `HYPERSPACE_FULL_SIZES=true`), not the fixed sample CI runs.
   */
  val fullSizes: Boolean = sys.env.get("HYPERSPACE_FULL_SIZES").contains("true")

  /**
   * A count of generated queries: `HYPERSPACE_FUZZ_QUERIES` when set (`make fuzz`, the line
   * subsets), else `full` under `make test-full` and `default` in CI.
   */
  def queries(default: Int, full: Int): Int = queries(if (fullSizes) full else default)

  /**
   * Whether a sweep runs every case under every setting (`make test-full`), not one setting per
   * case; tests that repeat their cases under a second setting or after each step take them all
   * then, a sample in CI.
   */
  val allSettings: Boolean = sys.env.get("HYPERSPACE_ALL_SETTINGS").contains("true")

  /**
   * The settings case number `caseIndex` of a sweep runs under. In CI one each: the settings in
   * turn, rotated by one for each block of `settings.size` cases, so that when the innermost loops
   * of the cases span a block, a setting meets every value of the outer loops and, across blocks,
   * every value of the inner ones. `make test-full` runs every case under every setting.
   */
  def settingsFor[A](settings: Seq[A], caseIndex: Int): Seq[A] =
    if (allSettings) settings
    else Seq(settings((caseIndex + caseIndex / settings.size) % settings.size))
}
