"""Memory and lookup latency of the Indexed DataFrame, two builds interleaved:
``python -m benchmarks.indexed_memory_ab --before /path/to/old/python``.

Each run is a fresh process (a JVM holds one Hyperspace jar) on the indexed suite's edge table
(``src = id % (rows / 4)``, ``dst``, ``weight``, ``label``; 16 partitions): it caches the table
with ``df.cache()``, builds the index, records what the block manager holds for each and the
heap growth after a full GC, then times point lookups (the index against a filter over the
cached DataFrame, alternating) and a join with a 100,000-row probe side. ``--before`` is the
``python`` directory of the other checkout (its ``hyperspace`` package and jar are put first on
PYTHONPATH); runs alternate before/after, starting with a different one each round, and the
load average is recorded around every run. HYPERSPACE_BENCH_INDEXED_ROWS sets the size.

``--compare spark.hyperspace.indexed.compression=none,zstd`` compares values of one setting of
this build instead (each run's session gets one value; runs alternate the same way). Each run
also times five appends of 100,000 rows to the index.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

ROWS = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 10_000_000))


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def one_run(rows: int, lookups: int) -> dict[str, Any]:
    """Builds both caches in this process and measures them."""
    from pyspark.sql import functions as F

    from benchmarks.context import local_session
    from hyperspace import configure_spark_with_hyperspace
    from hyperspace.indexed import create_index

    settings = json.loads(os.environ.get("HYPERSPACE_BENCH_CONF", "{}"))
    builder = local_session("4g", 16)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    runtime = jvm.java.lang.Runtime.getRuntime()

    def heap() -> int:
        for _ in range(3):
            jvm.java.lang.System.gc()
            time.sleep(0.3)
        return int(runtime.totalMemory()) - int(runtime.freeMemory())

    keys = max(1, rows // 4)

    def table() -> Any:
        return spark.range(rows).selectExpr(
            f"id % {keys} AS src",
            "id AS dst",
            "CAST(id % 1000 AS DOUBLE) / 7 AS weight",
            "concat('edge-', id % 1000) AS label",
        )

    load_before = _load()
    h0 = heap()
    cached = table().cache()
    cached.count()
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    cached_bytes = sum(int(i.memSize()) for i in infos)
    h1 = heap()
    start = time.perf_counter()
    idf = create_index(table(), "src", num_partitions=16).cache()
    build_seconds = time.perf_counter() - start
    h2 = heap()
    stats = idf.memory_stats()

    rng = random.Random(7)
    indexed_ms: list[float] = []
    filter_ms: list[float] = []
    for i in range(lookups + 3):
        key = rng.randrange(keys)
        order = [0, 1] if i % 2 == 0 else [1, 0]
        results: list[Any] = [None, None]
        for which in order:
            t = time.perf_counter()
            if which == 0:
                results[0] = idf.get_rows(key).collect()
            else:
                results[1] = cached.filter(F.col("src") == key).collect()
            elapsed = (time.perf_counter() - t) * 1000
            if i >= 3:  # warm-ups
                (indexed_ms if which == 0 else filter_ms).append(elapsed)
        if sorted(map(str, results[0])) != sorted(map(str, results[1])):
            raise AssertionError(f"key {key}: the index and the cached filter disagree")

    probe = spark.range(100_000).selectExpr(f"(id * 7919) % {2 * keys} AS pk", "id AS pv").cache()
    probe.count()
    join_ms: list[float] = []
    expected = None
    for i in range(6):
        t = time.perf_counter()
        got = idf.join(probe, idf["src"] == probe["pk"]).agg(F.count("*"), F.sum("pv")).collect()
        if i > 0:
            join_ms.append((time.perf_counter() - t) * 1000)
        expected = expected or got
        if got != expected:
            raise AssertionError("join results differ between runs")
    # Appends: 100,000-row batches onto the newest version, each materialized.
    append_ms: list[float] = []
    newest = idf
    for i in range(5):
        extra = spark.range(rows + i * 100_000, rows + (i + 1) * 100_000).selectExpr(
            f"id % {keys} AS src",
            "id AS dst",
            "CAST(id % 1000 AS DOUBLE) / 7 AS weight",
            "concat('edge-', id % 1000) AS label",
        )
        t = time.perf_counter()
        newest = newest.append_rows(extra).cache()
        append_ms.append((time.perf_counter() - t) * 1000)
    # Key 0 has the ids that are multiples of `keys`, appended ones included.
    if len(newest.get_rows(0).collect()) != len(range(0, rows + 500_000, keys)):
        raise AssertionError("the newest version does not have the appended rows of key 0")
    # Spark's own plan for the same join over df.cache() (it broadcasts the 100,000-row side).
    spark_join_ms: list[float] = []
    for i in range(4):
        t = time.perf_counter()
        plain = cached.join(probe, cached["src"] == probe["pk"]).agg(F.count("*"), F.sum("pv")).collect()
        if i > 0:
            spark_join_ms.append((time.perf_counter() - t) * 1000)
        if plain != expected:
            raise AssertionError(f"indexed join {expected} != Spark's {plain}")
    out = {
        "rows": rows,
        "keys": keys,
        "cachedDataFrameBytes": cached_bytes,
        "indexBlockManagerBytes": stats["blockManagerBytes"],
        "indexRowBatchBytes": stats["totalBatchBytes"],
        "indexRowBytesUsed": stats["usedBatchBytes"],
        "indexKeyIndexBytes": stats["ownTrieBytes"],
        "settings": settings,
        "heapDeltaCachedDataFrame": h1 - h0,
        "heapDeltaIndex": h2 - h1,
        "indexBuildSeconds": build_seconds,
        "lookupIndexedMs": statistics.median(indexed_ms),
        "lookupCachedFilterMs": statistics.median(filter_ms),
        "join100kMs": statistics.median(join_ms),
        "join100kSparkMs": statistics.median(spark_join_ms),
        "append100kMs": statistics.median(append_ms),
        "appendRowsPerSecond": 100_000 / (statistics.median(append_ms) / 1000),
        "loadBefore": load_before,
        "loadAfter": _load(),
    }
    spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="python/ directory of the build to compare against")
    parser.add_argument("--compare", help="KEY=BEFORE,AFTER: two values of one setting of this build")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lookups", type=int, default=30)
    parser.add_argument("--one", action="store_true", help="one run in this process (internal)")
    parser.add_argument("--out", help="write every run's figures here (JSON)")
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(one_run(ROWS, args.lookups)), flush=True)
        return
    if not args.before and not args.compare:
        parser.error("--before or --compare is required")
    builds = {"before": args.before, "after": None}
    confs: dict[str, dict[str, str]] = {"before": {}, "after": {}}
    if args.compare:
        key, _, values = args.compare.partition("=")
        before_value, _, after_value = values.partition(",")
        confs = {"before": {key: before_value}, "after": {key: after_value}}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for label in order:
            env = dict(os.environ)
            if builds[label]:
                env["PYTHONPATH"] = builds[label] + os.pathsep + env.get("PYTHONPATH", "")
            env["HYPERSPACE_BENCH_CONF"] = json.dumps(confs[label])
            cmd = [sys.executable, "-m", "benchmarks.indexed_memory_ab", "--one", "--lookups", str(args.lookups)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                raise SystemExit(f"{label} run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            result = json.loads(lines[-1][len("RESULT ") :])
            runs[label].append(result)
            print(f"round {r + 1} {label}: {json.dumps(result)}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f, indent=1)
    fields = [
        "cachedDataFrameBytes",
        "indexBlockManagerBytes",
        "indexRowBytesUsed",
        "indexRowBatchBytes",
        "indexKeyIndexBytes",
        "heapDeltaCachedDataFrame",
        "heapDeltaIndex",
        "indexBuildSeconds",
        "lookupIndexedMs",
        "lookupCachedFilterMs",
        "join100kMs",
        "join100kSparkMs",
        "append100kMs",
        "appendRowsPerSecond",
    ]
    print("| figure (median of runs) | before | after |")
    print("|---|---|---|")
    for f in fields:
        b = statistics.median(x[f] for x in runs["before"])
        a = statistics.median(x[f] for x in runs["after"])
        print(f"| {f} | {b:,.1f} | {a:,.1f} |")
    for label in runs:
        ratio = [x["indexBlockManagerBytes"] / x["cachedDataFrameBytes"] for x in runs[label]]
        loads = [f"{x['loadBefore']} -> {x['loadAfter']}" for x in runs[label]]
        print(f"{label}: index / df.cache() = {statistics.median(ratio):.2f}x; load {loads}")


if __name__ == "__main__":
    main()
