"""Where a TPC-H query's time goes, stage by stage: ``python -m benchmarks.stage_profile
--work-dir /work/bench-data/work-<name> [--queries q6,join]``.

Reuses the indexes a tpch suite run left in its work directory (``<work-dir>/indexes``) over the
same lake, and runs each query with and without Hyperspace, alternating, 5 times after a warm-up.
For each run: planning (analysis, optimization, physical planning) and execution wall time, and
for every stage of the run's jobs its tasks, wall time (submission to completion), the tasks'
summed run time, and input, shuffle-read and shuffle-write bytes, from Spark's status store.
Medians per stage (stages matched by their position in the run) go to stdout as Markdown, with
the load average.
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
from hyperspace import disable_hyperspace, enable_hyperspace


def _stages(spark: Any, since_job: int) -> list[dict[str, Any]]:
    """The stages of the jobs with ids >= ``since_job``, in submission order (skipped ones left out)."""
    out = []
    for job, s in finished_stages(spark, since_job):
        out.append(
            {
                "stage": f"job {job.jobId() - since_job} stage {s.stageId()}",
                "tasks": s.numTasks(),
                "wall_ms": s.completionTime().get().getTime() - s.submissionTime().get().getTime(),
                "task_run_ms": s.executorRunTime(),
                "input_mb": s.inputBytes() / 1e6,
                "shuffle_read_mb": s.shuffleReadBytes() / 1e6,
                "shuffle_write_mb": s.shuffleWriteBytes() / 1e6,
            }
        )
    return out


def _run_once(spark: Any, sql: str) -> dict[str, Any]:
    first_job = _last_job_id(spark) + 1
    start = time.perf_counter()
    df = spark.sql(sql)
    df._jdf.queryExecution().executedPlan()
    planned = time.perf_counter()
    df.collect()
    done = time.perf_counter()
    return {
        "total_ms": (done - start) * 1000,
        "plan_ms": (planned - start) * 1000,
        "execute_ms": (done - planned) * 1000,
        "stages": _stages(spark, first_job),
    }


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in ("total_ms", "plan_ms", "execute_ms")}
    depth = min(len(r["stages"]) for r in runs)
    out["stages"] = [
        {"stage": runs[0]["stages"][i]["stage"]}
        | {
            k: statistics.median(r["stages"][i][k] for r in runs)
            for k in ("tasks", "wall_ms", "task_run_ms", "input_mb", "shuffle_read_mb", "shuffle_write_mb")
        }
        for i in range(depth)
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stage_profile", description=__doc__)
    parser.add_argument("--work-dir", required=True, help="a tpch suite run's work directory (holds indexes/)")
    parser.add_argument("--data-dir", default="/work/bench-data")
    parser.add_argument("--queries", default="q6,join")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    spark = session_over_run("hyperspace-stage-profile", Path(args.data_dir), Path(args.work_dir))
    load_start = os.getloadavg()
    for name in args.queries.split(","):
        sql = (QUERY_DIR / f"{name}.sql").read_text()
        per: dict[str, list[dict[str, Any]]] = {"spark": [], "hyperspace": []}
        for variant in per:  # warm-up
            (enable_hyperspace if variant == "hyperspace" else disable_hyperspace)(spark)
            _run_once(spark, sql)
        for i in range(args.runs):
            for variant in list(per)[i % 2 :] + list(per)[: i % 2]:
                (enable_hyperspace if variant == "hyperspace" else disable_hyperspace)(spark)
                per[variant].append(_run_once(spark, sql))
        print(f"\n### {name}\n")
        print(
            "| variant | stage | tasks | wall ms | task run ms (sum) | input MB | shuffle read MB | shuffle write MB |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for variant, runs in per.items():
            m = _median_run(runs)
            print(
                f"| {variant} | **total {m['total_ms']:.0f}** (plan {m['plan_ms']:.0f}, "
                f"execute {m['execute_ms']:.0f}) | | | | | | |"
            )
            for s in m["stages"]:
                print(
                    f"| {variant} | {s['stage']} | {s['tasks']:g} | {s['wall_ms']:.0f} | {s['task_run_ms']:.0f} "
                    f"| {s['input_mb']:.1f} | {s['shuffle_read_mb']:.1f} | {s['shuffle_write_mb']:.1f} |"
                )
    load_end = os.getloadavg()
    print(
        f"\nLoad average at the start {load_start[0]:.1f} / {load_start[1]:.1f} / {load_start[2]:.1f}, "
        f"at the end {load_end[0]:.1f} / {load_end[1]:.1f} / {load_end[2]:.1f}; medians of {args.runs} runs."
    )
    disable_hyperspace(spark)
    spark.stop()


if __name__ == "__main__":
    main()
