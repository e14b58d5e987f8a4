"""Where a small-probe indexed join's time goes, job by job and stage by stage:
``python -m benchmarks.indexed_join_profile [--rounds 7] [--sizes 10000,100000]``.

The indexed suite's join (``idf.join(probe, src == pk).agg(count(*), sum(weight), sum(pv))``, the
10M-row edge table in 16 partitions, probe ``(id * 7919) % 5000000 AS pk, id AS pv`` cached) and
Spark's broadcast hash join of the same cached rows, alternating every round; ``indexed_parallel``
is the indexed join with ``spark.hyperspace.indexed.join.oneTaskProbeRows=0`` (a task per task slot
whatever the probe side's size). For each run:
planning (up to the executed plan) and execution wall time, and for every job and stage of the
run its tasks, wall time (submission to completion), and the tasks' summed run,
deserialization, result-serialization and scheduler-side time (wall × slots not spent running),
from Spark's status store. Medians go to stdout as Markdown with the load average; every run's
rows are checked against the first. HYPERSPACE_BENCH_INDEXED_ROWS sets the table size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

KEYS = (
    "job_start_ms",
    "job_end_ms",
    "tasks",
    "wall_ms",
    "run_ms",
    "deser_ms",
    "result_ser_ms",
    "result_kb",
    "shuffle_write_kb",
)
ROWS = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 10_000_000))


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _stages(spark: Any, since_job: int, epoch_ms: float) -> list[dict[str, Any]]:
    from benchmarks.stages import finished_stages
    from benchmarks.suites.seek import _items

    store = spark.sparkContext._jsc.sc().statusStore()
    out: list[dict[str, Any]] = []
    jobs = [j for j in _items(store.jobsList(None)) if j.jobId() >= since_job]
    min_stage = min((min(_items(j.stageIds())) for j in jobs), default=0)
    for job, s in finished_stages(spark, since_job):
        if not job.completionTime().isDefined():
            continue
        submitted = job.submissionTime().get().getTime() - epoch_ms
        completed = job.completionTime().get().getTime() - epoch_ms
        out.append(
            {
                "stage": f"job {job.jobId() - since_job} stage {s.stageId() - min_stage}",
                "job_start_ms": submitted,
                "job_end_ms": completed,
                "tasks": s.numTasks(),
                "wall_ms": s.completionTime().get().getTime() - s.submissionTime().get().getTime(),
                "run_ms": s.executorRunTime(),
                "deser_ms": s.executorDeserializeTime(),
                "result_ser_ms": s.resultSerializationTime(),
                "result_kb": s.resultSize() / 1e3,
                "shuffle_write_kb": s.shuffleWriteBytes() / 1e3,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument(
        "--one-task-rows", default="20000", help="spark.hyperspace.indexed.join.oneTaskProbeRows of `indexed`"
    )
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from benchmarks.context import local_session
    from benchmarks.harness import canonical_rows
    from benchmarks.suites.indexed import edge_table
    from benchmarks.suites.seek import _last_job_id
    from hyperspace import configure_spark_with_hyperspace
    from hyperspace.indexed import create_index

    spark = configure_spark_with_hyperspace(local_session("8g", 16, "indexed-join-profile")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    keys = max(1, ROWS // 4)
    cached = edge_table(spark, keys, ROWS).cache()
    cached.count()
    conf = spark.conf
    idf = create_index(edge_table(spark, keys, ROWS), "src", num_partitions=16).cache()

    def aggregated(df: Any) -> Any:
        return df.agg(F.count("*"), F.sum("weight"), F.sum("pv"))

    for size in [int(s) for s in args.sizes.split(",")]:
        probe = spark.range(size).selectExpr(f"(id * 7919) % {2 * keys} AS pk", "id AS pv").cache()
        probe.count()
        variants = {
            "indexed": lambda p=probe: idf.join(p, idf["src"] == p["pk"]),
            "indexed_parallel": lambda p=probe: idf.join(p, idf["src"] == p["pk"]),
            "spark_broadcast": lambda p=probe: cached.join(F.broadcast(p), cached["src"] == p["pk"]),
        }
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        expected = None
        load_start = _load()
        for r in range(args.rounds + 1):
            names = list(variants)[r % len(variants) :] + list(variants)[: r % len(variants)]
            for v in names:
                # indexed_parallel: the join in a task per task slot even for the smallest probes.
                conf.set(
                    "spark.hyperspace.indexed.join.oneTaskProbeRows",
                    "0" if v == "indexed_parallel" else args.one_task_rows,
                )
                first_job = _last_job_id(spark) + 1
                start = time.perf_counter()
                epoch_ms = time.time() * 1000
                joined = aggregated(variants[v]())
                joined._jdf.queryExecution().executedPlan()
                planned = time.perf_counter()
                rows = joined.collect()
                done = time.perf_counter()
                got = canonical_rows(rows)
                expected = expected or got
                if got != expected:
                    raise AssertionError(f"{v} returned different rows in round {r}")
                if r > 0:
                    runs[v].append(
                        {
                            "total_ms": (done - start) * 1000,
                            "plan_ms": (planned - start) * 1000,
                            "execute_ms": (done - planned) * 1000,
                            "stages": _stages(spark, first_job, epoch_ms),
                        }
                    )
        print(f"\n### probe {size:,} rows (load {load_start} -> {_load()}, medians of {args.rounds})\n")
        print(
            "| variant | stage | job start ms | job end ms | tasks | wall ms | run ms (sum) | deser ms (sum) | result ser ms | result KB | shuffle write KB |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for v, rs in runs.items():
            med = {k: statistics.median(r[k] for r in rs) for k in ("total_ms", "plan_ms", "execute_ms")}
            low = min(r["total_ms"] for r in rs)
            print(
                f"| {v} | **total {med['total_ms']:.0f}** (min {low:.0f}; plan {med['plan_ms']:.0f}, "
                f"execute {med['execute_ms']:.0f}) | | | | | | | | | |"
            )
            depth = min(len(r["stages"]) for r in rs)
            for i in range(depth):
                s = {k: statistics.median(r["stages"][i][k] for r in rs) for k in KEYS}
                print(
                    f"| {v} | {rs[0]['stages'][i]['stage']} | {s['job_start_ms']:.0f} | {s['job_end_ms']:.0f} | {s['tasks']:g} | {s['wall_ms']:.0f} | {s['run_ms']:.0f} "
                    f"| {s['deser_ms']:.0f} | {s['result_ser_ms']:.0f} | {s['result_kb']:.1f} | {s['shuffle_write_kb']:.1f} |"
                )
        print("\nindexed plan:\n")
        print(variants["indexed"]().agg(F.count("*"))._jdf.queryExecution().executedPlan().toString())
        probe.unpersist()
    spark.stop()


if __name__ == "__main__":
    main()
