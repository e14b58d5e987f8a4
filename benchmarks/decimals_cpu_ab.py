"""Executor CPU of TPC-H queries with Hyperspace's decimal arithmetic on longs on and off:
``python -m benchmarks.decimals_cpu_ab --work-dir /work/bench-data/work-<name> [--queries q6,join]``.

Reuses the indexes a tpch suite run left in its work directory, runs each query with Hyperspace
and ``spark.hyperspace.index.decimalsOnLongs.enabled`` alternately true and false (the order
swapped every round, after two warm-up runs of each), and prints per variant the medians of the
wall time and of the query's jobs' executor CPU time and task run time from Spark's status store.
CPU time depends far less on the machine's load than wall time does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.stages import finished_stages
from benchmarks.suites.seek import _last_job_id
from benchmarks.suites.tpch import QUERY_DIR, session_over_run
from hyperspace import enable_hyperspace

KEY = "spark.hyperspace.index.decimalsOnLongs.enabled"


def _cpu_since(spark: Any, first_job: int) -> tuple[float, float]:
    """Executor CPU ms and task run ms of the jobs with ids >= ``first_job``."""
    stages = [s for _, s in finished_stages(spark, first_job)]
    return sum(s.executorCpuTime() for s in stages) / 1e6, float(sum(s.executorRunTime() for s in stages))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.decimals_cpu_ab", description=__doc__)
    parser.add_argument("--work-dir", required=True, help="a tpch suite run's work directory (holds indexes/)")
    parser.add_argument("--data-dir", default="/work/bench-data")
    parser.add_argument("--queries", default="q6,join")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    spark = session_over_run("hyperspace-decimals-ab", Path(args.data_dir), Path(args.work_dir))
    enable_hyperspace(spark)
    load_start = os.getloadavg()
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for name in args.queries.split(","):
        sql = (QUERY_DIR / f"{name}.sql").read_text()
        for variant in ("true", "false"):
            spark.conf.set(KEY, variant)
            spark.sql(sql).collect()
            spark.sql(sql).collect()
        for i in range(args.runs):
            for variant in ("true", "false") if i % 2 == 0 else ("false", "true"):
                spark.conf.set(KEY, variant)
                first = _last_job_id(spark) + 1
                start = time.perf_counter()
                spark.sql(sql).collect()
                wall = (time.perf_counter() - start) * 1000
                time.sleep(0.3)  # the status store is updated by a listener, after the job ends
                cpu, run = _cpu_since(spark, first)
                results.setdefault((name, variant), []).append((wall, cpu, run))
    print("| query | decimalsOnLongs | wall ms median (min) | executor CPU ms median (min) | task run ms median |")
    print("|---|---|---|---|---|")
    for (name, variant), xs in sorted(results.items()):
        walls, cpus, runs = [x[0] for x in xs], [x[1] for x in xs], [x[2] for x in xs]
        print(
            f"| {name} | {variant} | {statistics.median(walls):.0f} ({min(walls):.0f}) "
            f"| {statistics.median(cpus):.1f} ({min(cpus):.1f}) | {statistics.median(runs):.0f} |"
        )
    load_end = os.getloadavg()
    print(f"\nLoad average at the start {load_start[0]:.1f}, at the end {load_end[0]:.1f}; {args.runs} runs each.")
    spark.stop()


if __name__ == "__main__":
    main()
