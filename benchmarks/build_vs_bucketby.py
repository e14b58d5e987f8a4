"""A covering index build against ``bucketBy().sortBy()`` of the same columns, interleaved.

Each round builds the fully covering index of ``lineitem`` (``l_orderkey`` indexed, every other
column included) and writes the same rows with ``bucketBy(n, "l_orderkey").sortBy("l_orderkey")``,
alternating which goes first, and records the wall time of each, the load average, and where
the time went: every Spark job run (its description, span, and its stages' task run time,
shuffle bytes written) and the driver time outside jobs.

    python -m benchmarks.build_vs_bucketby --lake /work/bench-data/tpch-sf1-64files/lake \
        --work /tmp/build-work --rounds 3 [--files 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.context import local_session
from benchmarks.suites.seek import LINEITEM_COLUMNS as COLUMNS
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, configure_spark_with_hyperspace


def _items(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def _jobs_since(spark: SparkSession, first: int) -> list[dict[str, Any]]:
    """The completed jobs with ids >= ``first``: description, span, tasks' run time, shuffle writes."""
    store = spark.sparkContext._jsc.sc().statusStore()
    out = []
    for job in _items(store.jobsList(None)):
        if job.jobId() < first or not job.completionTime().isDefined():
            continue
        run = shuffle_write = 0.0
        for stage_id in _items(job.stageIds()):
            for s in _items(store.stageData(stage_id, False, None, False, None)):
                run += s.executorRunTime()
                shuffle_write += s.shuffleWriteBytes()
        desc = job.description().get() if job.description().isDefined() else job.name()
        out.append(
            {
                "id": job.jobId(),
                "description": desc,
                "span_ms": job.completionTime().get().getTime() - job.submissionTime().get().getTime(),
                "task_run_ms": run,
                "shuffle_write_mb": shuffle_write / 1e6,
            }
        )
    return sorted(out, key=lambda j: j["id"])


def _last_job(spark: SparkSession) -> int:
    jobs = _items(spark.sparkContext._jsc.sc().statusStore().jobsList(None))
    return max((j.jobId() for j in jobs), default=-1)


def _timed(spark: SparkSession, body: Any) -> dict[str, Any]:
    first = _last_job(spark) + 1
    start = time.perf_counter()
    body()
    seconds = time.perf_counter() - start
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    jobs = _jobs_since(spark, first)
    return {
        "seconds": seconds,
        "load1": os.getloadavg()[0],
        "jobs": jobs,
        "outside_jobs_s": seconds - sum(j["span_ms"] for j in jobs) / 1000,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--lake", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--buckets", type=int, default=16)
    p.add_argument("--files", type=int, default=0, help="index only the first N lineitem files (0: all)")
    p.add_argument("--out", default="")
    args = p.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    builder = local_session("6g", max(4, args.buckets), warehouse=work / "warehouse")
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    conf.num_buckets = args.buckets
    source = Path(args.lake) / "lineitem"
    files = sorted(str(f) for f in source.glob("*.parquet"))
    if args.files:
        files = files[: args.files]
    lineitem = spark.read.parquet(*files) if args.files else spark.read.parquet(str(source))
    # Both code paths once on two files, unmeasured: the first write in a JVM pays for loading
    # and compiling classes, which would count against whichever variant runs first.
    small = spark.read.parquet(*files[:2])
    conf.system_path = str(work / "indexes-warmup")
    hs.create_index(small, IndexConfig("warmup", ["l_orderkey"], COLUMNS[1:]))
    small.write.bucketBy(args.buckets, "l_orderkey").sortBy("l_orderkey").saveAsTable("warmup")
    results: dict[str, list[dict[str, Any]]] = {"index": [], "bucketBy": []}
    for r in range(args.rounds):
        conf.system_path = str(work / f"indexes-{r}")

        def index(r: int = r) -> None:
            hs.create_index(lineitem, IndexConfig(f"all_{r}", ["l_orderkey"], COLUMNS[1:]))

        def bucketed(r: int = r) -> None:
            (
                lineitem.write.bucketBy(args.buckets, "l_orderkey")
                .sortBy("l_orderkey")
                .mode("overwrite")
                .saveAsTable(f"bucketed_{r}")
            )

        order = [("index", index), ("bucketBy", bucketed)]
        if r % 2:
            order.reverse()
        for name, body in order:
            m = _timed(spark, body)
            results[name].append(m)
            print(f"round {r} {name}: {m['seconds']:.1f}s (load {m['load1']:.1f})", flush=True)
            for j in m["jobs"]:
                print(
                    f"    job {j['id']}: {j['span_ms'] / 1000:.2f}s tasks {j['task_run_ms'] / 1000:.1f}s "
                    f"shuffle-w {j['shuffle_write_mb']:.0f}MB  {j['description'][:90]}",
                    flush=True,
                )
            print(f"    outside jobs: {m['outside_jobs_s']:.2f}s", flush=True)
    med = {k: statistics.median(m["seconds"] for m in v) for k, v in results.items()}
    print(
        f"median index {med['index']:.1f}s, bucketBy {med['bucketBy']:.1f}s, "
        f"ratio {med['index'] / med['bucketBy']:.2f}; load {os.getloadavg()}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps({"results": results, "median": med, "load": os.getloadavg()}, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
