"""Wall time and executor CPU of TPC-H Q6 (and the other small Z-order queries) over the index
by the way its rows are read: ``python -m benchmarks.q6_paths_ab --work-dir /work/bench-data/work-<name>``.

Reuses the indexes a tpch suite run left in its work directory and runs each query with
Hyperspace in three plans, rotated every round after two warm-up runs of each:

- ``job``: the plan Spark splits (for q6: two tasks reading 15 files, a partial aggregate, a
  shuffle and a second AQE stage), as the defaults made it before driver reads had threads
  (``spark.hyperspace.index.driverRead.threads`` 1);
- ``one_task``: the files read as one partition (no shuffle), still as a job (the driver-side
  read turned off);
- ``driver``: the files read as one partition in the driver on one thread, no job;
- ``threads``: the defaults: read in the driver on as many threads as the driver has
  processors (at most 8), no job;
- ``driver_rows``, ``threads_rows``: ``driver`` and ``threads`` with whole-stage code off, so
  the driver evaluates the plan's steps row by row instead of running their code over batches.

The one-partition plans of ``one_task`` and ``driver`` are reached through the session settings
the one-partition rule reads (``spark.sql.files.minPartitionNum`` 1 makes Spark's packing, and so
the rule, read them as one partition; the defaults' 2 is this machine's core count, what the plan
uses unset), which is a measurement device, not a recommendation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.decimals_cpu_ab import _cpu_since
from benchmarks.suites.seek import _last_job_id
from benchmarks.suites.tpch import QUERY_DIR, session_over_run
from hyperspace import enable_hyperspace

_ONE_THREAD = {"spark.hyperspace.index.driverRead.threads": "1"}
VARIANTS: dict[str, dict[str, str]] = {
    "job": _ONE_THREAD,
    "one_task": {"spark.sql.files.minPartitionNum": "1", "spark.hyperspace.index.driverRead.maxBytes": "0"},
    "driver": {"spark.sql.files.minPartitionNum": "1", **_ONE_THREAD},
    "threads": {},
    # The driver reads above with each row through the plan's steps one at a time (the
    # whole-stage code off), as driver reads were before they ran that code over batches.
    "driver_rows": {"spark.sql.files.minPartitionNum": "1", **_ONE_THREAD, "spark.sql.codegen.wholeStage": "false"},
    "threads_rows": {"spark.sql.codegen.wholeStage": "false"},
}
DEFAULTS = {
    "spark.sql.files.minPartitionNum": "2",
    "spark.hyperspace.index.driverRead.maxBytes": "16m",
    "spark.hyperspace.index.driverRead.threads": "0",
    "spark.sql.codegen.wholeStage": "true",
}


def _process_cpu_ns(pid: int) -> float:
    """User + system CPU of process ``pid`` (all its threads) from /proc, in ns (10 ms ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


def _use(spark: Any, variant: str) -> None:
    for key, value in {**DEFAULTS, **VARIANTS[variant]}.items():
        spark.conf.set(key, value)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.q6_paths_ab", description=__doc__)
    parser.add_argument("--work-dir", required=True, help="a tpch suite run's work directory (holds indexes/)")
    parser.add_argument("--data-dir", default="/work/bench-data")
    parser.add_argument("--queries", default="q6")
    parser.add_argument("--variants", default="job,one_task,driver,threads")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    spark = session_over_run("hyperspace-q6-paths", Path(args.data_dir), Path(args.work_dir))
    enable_hyperspace(spark)
    variants = args.variants.split(",")
    # CPU of the JVM thread that plans the query and, for a driver-side read, reads the files (the
    # Python thread's pinned py4j thread), and of the whole driver JVM (executors included in
    # local mode): CPU depends far less on the machine's load than wall time does.
    threads = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getThreadMXBean()
    jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM in the process it started
    load_start = os.getloadavg()
    results: dict[tuple[str, str], list[tuple[float, float, int, float, float]]] = {}
    answers: dict[tuple[str, str], Any] = {}
    for name in args.queries.split(","):
        sql = (QUERY_DIR / f"{name}.sql").read_text()
        for variant in variants:
            _use(spark, variant)
            answers[(name, variant)] = spark.sql(sql).collect()
            spark.sql(sql).collect()
        if len({repr(a) for (n, _), a in answers.items() if n == name}) != 1:
            raise SystemExit(f"{name}: the variants' answers differ: {answers}")
        for i in range(args.runs):
            order = variants[i % len(variants) :] + variants[: i % len(variants)]
            for variant in order:
                _use(spark, variant)
                first = _last_job_id(spark) + 1
                thread0, process0 = threads.getCurrentThreadCpuTime(), _process_cpu_ns(jvm)
                start = time.perf_counter()
                spark.sql(sql).collect()
                wall = (time.perf_counter() - start) * 1000
                thread = (threads.getCurrentThreadCpuTime() - thread0) / 1e6
                process = (_process_cpu_ns(jvm) - process0) / 1e6
                time.sleep(0.3)  # the status store is updated by a listener, after the job ends
                cpu, _ = _cpu_since(spark, first)
                jobs = _last_job_id(spark) + 1 - first
                results.setdefault((name, variant), []).append((wall, cpu, jobs, thread, process))
    print(
        "| query | plan | wall ms median (min) | executor CPU ms median | query thread CPU ms median "
        "| JVM process CPU ms median (min) | jobs |"
    )
    print("|---|---|---|---|---|---|---|")
    for (name, variant), xs in results.items():
        walls, cpus, own, process = ([x[i] for x in xs] for i in (0, 1, 3, 4))
        print(
            f"| {name} | {variant} | {statistics.median(walls):.0f} ({min(walls):.0f}) "
            f"| {statistics.median(cpus):.1f} | {statistics.median(own):.1f} "
            f"| {statistics.median(process):.0f} ({min(process):.0f}) | {xs[-1][2]} |"
        )
    load_end = os.getloadavg()
    print(f"\nLoad average at the start {load_start[0]:.1f}, at the end {load_end[0]:.1f}; {args.runs} runs each.")
    spark.stop()


if __name__ == "__main__":
    main()
