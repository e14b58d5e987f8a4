package io.hyperspace.testing

import java.lang.management.ManagementFactory
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths, StandardOpenOption}

/**
 * Appends a suite's wall and CPU seconds to the file named by `HYPERSPACE_SUITE_TIMES` (build.sbt
 * names target/spark-<line>/suite-times.tsv), one tab-separated line per suite: `.ci/report.py`
 * prints the slowest and flags those over the per-suite budget.
 *
 * Measured in the forked test JVM, around the suite's whole run (its `beforeAll` included, which
 * the JUnit reports leave out): a ScalaTest reporter would run in sbt's own JVM, which sees none
 * of the suite's CPU. The suites of a JVM run one after another, so the JVM's CPU time between a
 * suite's start and end is the suite's. Processes a suite launches are not counted.
 */
object SuiteTimes {

  private val target = sys.env.get("HYPERSPACE_SUITE_TIMES").filter(_.nonEmpty).map(Paths.get(_))

  private def cpuNanos(): Long = ManagementFactory.getOperatingSystemMXBean match {
    case os: com.sun.management.OperatingSystemMXBean => os.getProcessCpuTime
    case _ => 0L
  }

  /** A suite's clock, started as its run begins; `stop` records the suite's line. */
  final class Clock private[SuiteTimes] (wall: Long, cpu: Long) {
    def stop(suite: String, succeeded: Boolean): Unit = target.foreach { file =>
      val outcome = if (succeeded) "ok" else "failed"
      val line = f"$suite\t${(System.nanoTime() - wall) / 1e9}%.1f\t${(cpuNanos() - cpu) / 1e9}%.1f\t$outcome\n"
      // One short append per line: the two test JVMs of a run write to the same file.
      Files.write(file, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND)
    }
  }

  def start(): Clock = new Clock(System.nanoTime(), cpuNanos())
}
