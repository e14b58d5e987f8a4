"""The Indexed DataFrame against Spark's own in-memory cache (the paper's §IV experiments at this
machine's scale): point lookups, joins with probe sides of growing size, append throughput, the
latency of queries interleaved with appends, and the memory the index takes next to the cached
DataFrame. Variants run interleaved in one session; every run's rows are checked."""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.context import BenchContext
from benchmarks.harness import Measurement, canonical_rows
from hyperspace import HyperspaceConfig
from hyperspace.indexed import IndexedDataFrame, create_index, join_decisions

# HYPERSPACE_BENCH_INDEXED_ROWS sets the table size of full and quick runs alike.
FULL_ROWS = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 10_000_000))
QUICK_ROWS = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 20_000))
KEYS_PER_ROW = 4
# Comma-separated parts to run (all by default): lookups and appends always run; "joins" adds the
# join shapes, "interleaved" the queries interleaved with appends (which needs "joins").
SECTIONS = set(
    os.environ.get("HYPERSPACE_BENCH_INDEXED_SECTIONS", "joins,interleaved").split(",")
)  # every key has about four rows, like an edge table's source vertex


def edge_table(spark: SparkSession, keys: int, count: int, offset: int = 0) -> DataFrame:
    """Edges `offset until offset + count` of the benchmark's graph: `src` cycles over `keys`
    keys (four rows per key at the full size), `dst`, `weight` and `label` the payload."""
    return spark.range(offset, offset + count).selectExpr(
        f"id % {keys} AS src",
        "id AS dst",
        "CAST(id % 1000 AS DOUBLE) / 7 AS weight",
        "concat('edge-', id % 1000) AS label",
    )


def _jvm_used_bytes(ctx: BenchContext) -> int:
    """Heap in use after a full GC (local mode: the executors live in this JVM)."""
    jvm = ctx.spark.sparkContext._jvm
    runtime = jvm.java.lang.Runtime.getRuntime()
    for _ in range(3):
        jvm.java.lang.System.gc()
        time.sleep(0.3)
    return int(runtime.totalMemory()) - int(runtime.freeMemory())


def _cached_df_bytes(ctx: BenchContext, before: set[int]) -> int:
    infos = ctx.spark.sparkContext._jsc.sc().getRDDStorageInfo()
    return sum(int(i.memSize()) for i in infos if int(i.id()) not in before)


def _rdd_ids(ctx: BenchContext) -> set[int]:
    return {int(i.id()) for i in ctx.spark.sparkContext._jsc.sc().getRDDStorageInfo()}


def _interleaved(
    ctx: BenchContext, name: str, variants: dict[str, Callable[[], list[Any]]], runs: int
) -> dict[str, Measurement]:
    """A warm-up each (rows compared), then ``runs`` rounds with a rotating order; ``runs=0`` times
    the warm-ups (cold figures, as run_queries)."""
    out = {v: Measurement() for v in variants}
    expected: list[str] | None = None
    for v, fn in variants.items():
        start = time.perf_counter()
        raw = fn()
        if runs == 0:
            out[v].seconds.append(time.perf_counter() - start)
        rows = canonical_rows(raw)
        if expected is None:
            expected = rows
        elif rows != expected:
            raise AssertionError(f"{name}: {v} returned different rows")
    names = list(variants)
    for r in range(runs):
        for v in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            rows = variants[v]()
            out[v].seconds.append(time.perf_counter() - start)
            if canonical_rows(rows) != expected:
                raise AssertionError(f"{name}: {v} returned different rows in run {r + 1}")
    ctx.log(f"  {name}: " + ", ".join(f"{k} {m.median * 1000:.1f} ms" for k, m in out.items()))
    return out


def _summary(m: Measurement) -> dict[str, Any]:
    return {"median": m.median, "min": m.low, "max": m.high, "runs": len(m.seconds)}


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    n = QUICK_ROWS if ctx.quick else FULL_ROWS
    keys = max(1, n // KEYS_PER_ROW)
    partitions = ctx.buckets
    # A quick run times the warm-ups: a round after them doubled its lookups and joins.
    runs = 0 if ctx.quick else max(ctx.runs, 7)
    probe_sizes = [100, 1_000, 5_000] if ctx.quick else [10_000, 100_000, 1_000_000]
    append_sizes = [10, 100, 1_000] if ctx.quick else [1_000, 10_000, 100_000]
    rng = random.Random(42)
    conf = HyperspaceConfig(spark)

    def forced(fn: Callable[[], list[Any]]) -> list[Any]:
        """The indexed join as it was planned before sizes counted (always the index)."""
        with conf.override(indexed_join_selection="index"):
            return fn()

    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))

    def table(count: int, offset: int = 0) -> DataFrame:
        return edge_table(spark, keys, count, offset)

    ctx.log(f"indexed: {n:,} rows, {keys:,} keys, {partitions} partitions")
    baseline_ids = _rdd_ids(ctx)
    heap0 = _jvm_used_bytes(ctx)
    start = time.perf_counter()
    cached = table(n).cache()
    cached.count()
    cache_seconds = time.perf_counter() - start
    cached_bytes = _cached_df_bytes(ctx, baseline_ids)
    heap1 = _jvm_used_bytes(ctx)
    start = time.perf_counter()
    idf = create_index(table(n), "src", num_partitions=partitions).cache()
    index_seconds = time.perf_counter() - start
    heap2 = _jvm_used_bytes(ctx)
    stats = idf.memory_stats()
    ctx.log(
        f"  build: cache() {cache_seconds:.1f}s ({cached_bytes:,} B), "
        f"index {index_seconds:.1f}s ({stats['blockManagerBytes']:,} B)"
    )
    memory = {
        "cachedDataFrameBytes": cached_bytes,
        "indexBlockManagerBytes": stats["blockManagerBytes"],
        "indexRowBatchBytes": stats["totalBatchBytes"],
        "indexRowBytesUsed": stats["usedBatchBytes"],
        "indexTrieBytesEstimated": stats["ownTrieBytes"],
        "heapDeltaCachedDataFrame": heap1 - heap0,
        "heapDeltaIndex": heap2 - heap1,
        "rows": stats["rows"],
        "keys": stats["keys"],
    }

    # Point lookups: a few random keys per round, present and absent.
    # Quick: two present keys and the absent one (more present keys add no path to a smoke run).
    lookup_keys = [rng.randrange(keys) for _ in range(2 if ctx.quick else 4)] + [keys + 17]

    # "indexed" is get_rows(k).collect(); "indexed_lookup" the eager lookup([k]). Both read the
    # key's partition in place when the driver's block manager holds it (local mode, as here);
    # the "_job" variants turn that off and read it with a one-task job, as on a cluster.
    def by_job(fn: Callable[[], list[Any]]) -> list[Any]:
        with conf.override(indexed_lookup_read_in_place=False):
            return fn()

    lookup_variants = ["indexed", "indexed_job", "indexed_lookup", "indexed_lookup_job", "cached_filter"]
    lookups: dict[str, Measurement] = {v: Measurement() for v in lookup_variants}
    for key in lookup_keys:
        per = _interleaved(
            ctx,
            f"lookup {key}",
            {
                "indexed": lambda k=key: idf.get_rows(k).collect(),
                "indexed_job": lambda k=key: by_job(lambda: idf.get_rows(k).collect()),
                "indexed_lookup": lambda k=key: idf.lookup([k]),
                "indexed_lookup_job": lambda k=key: by_job(lambda: idf.lookup([k])),
                "cached_filter": lambda k=key: cached.filter(F.col("src") == k).collect(),
            },
            runs,
        )
        for v, m in per.items():
            lookups[v].seconds.extend(m.seconds)

    joins: dict[str, dict[str, Any]] = {}
    dimension: dict[str, Any] = {}
    if "joins" in SECTIONS:
        # Joins: probe keys spread over twice the key range, so about half of them match.
        for size in probe_sizes:
            probe = spark.range(size).selectExpr(f"(id * 7919) % {2 * keys} AS pk", "id AS pv").cache()
            probe.count()

            def agg(df: DataFrame) -> list[Any]:
                return df.agg(F.count("*"), F.sum("weight"), F.sum("pv")).collect()

            variants = {
                "indexed": lambda p=probe: agg(idf.join(p, idf["src"] == p["pk"])),
                "indexed_forced": lambda p=probe: forced(lambda: agg(idf.join(p, idf["src"] == p["pk"]))),
                "spark_broadcast": lambda p=probe: agg(cached.join(F.broadcast(p), cached["src"] == p["pk"])),
                "spark_default": lambda p=probe: agg(cached.join(p, cached["src"] == p["pk"])),
            }
            per = _interleaved(ctx, f"join probe {size:,}", variants, runs)
            decision = join_decisions(idf.join(probe, idf["src"] == probe["pk"]))
            plan = str(cached.join(probe, cached["src"] == probe["pk"])._jdf.queryExecution().executedPlan().toString())
            joins[str(size)] = {v: _summary(m) for v, m in per.items()}
            joins[str(size)]["decision"] = decision[0] if decision else ""
            ctx.log(f"    decision: {joins[str(size)]['decision']}")
            joins[str(size)]["sparkDefaultPlan"] = (
                "BroadcastHashJoin"
                if "BroadcastHashJoin" in plan
                else "SortMergeJoin"
                if "SortMergeJoin" in plan
                else "ShuffledHashJoin"
                if "ShuffledHashJoin" in plan
                else "other"
            )
            probe.unpersist()

        # The other shape: the index on a small dimension (one row per key for 1% of the keys),
        # probed from the big cached table. Spark's default plan broadcasts the dimension and scans
        # the big table once; the indexed join would move the big table to the dimension instead.
        dim_rows = max(100, keys // 100)
        dim_plain = spark.range(dim_rows).selectExpr("id AS dk", "concat('dim-', id) AS dname").cache()
        dim_plain.count()
        dim_idf = create_index(dim_plain, "dk", num_partitions=partitions).cache()

        def dim_agg(df: DataFrame) -> list[Any]:
            return df.agg(F.count("*"), F.sum("weight"), F.max("dname")).collect()

        dim_df = dim_idf.to_df()
        dim_variants = {
            "indexed": lambda: dim_agg(cached.join(dim_df, cached["src"] == dim_df["dk"])),
            "indexed_forced": lambda: forced(lambda: dim_agg(cached.join(dim_df, cached["src"] == dim_df["dk"]))),
            "spark_broadcast": lambda: dim_agg(cached.join(F.broadcast(dim_plain), cached["src"] == dim_plain["dk"])),
            "spark_default": lambda: dim_agg(cached.join(dim_plain, cached["src"] == dim_plain["dk"])),
        }
        per = _interleaved(ctx, f"join indexed dimension {dim_rows:,} rows, probed by {n:,}", dim_variants, runs)
        dim_decision = join_decisions(cached.join(dim_df, cached["src"] == dim_df["dk"]))
        dimension = {v: _summary(m) for v, m in per.items()}
        dimension["rows"] = dim_rows
        dimension["decision"] = dim_decision[0] if dim_decision else ""
        ctx.log(f"    decision: {dimension['decision']}")
        dim_idf.unpersist()
        dim_plain.unpersist()

    # Append throughput: a batch appended to the base version and materialized (cache()).
    appends: dict[str, Any] = {}
    offset = n
    for size in append_sizes:
        batch = table(size, offset).cache()
        batch.count()
        offset += size
        seconds = []
        for _ in range(max(runs, 1)):
            start = time.perf_counter()
            version = idf.append_rows(batch).cache()
            seconds.append(time.perf_counter() - start)
            version.unpersist()
        median = statistics.median(seconds)
        appends[str(size)] = {
            "median": median,
            "min": min(seconds),
            "max": max(seconds),
            "rowsPerSecond": size / median,
        }
        ctx.log(f"  append {size:,} rows: {median * 1000:.1f} ms ({size / median:,.0f} rows/s)")
        batch.unpersist()

    interleaved: dict[str, Any] = {}
    if "interleaved" in SECTIONS and joins:
        # Queries interleaved with appends: each round appends a batch to the newest version, then
        # looks a key up and joins a 10K-row probe (1K in quick mode) against that version.
        rounds = 2 if ctx.quick else 10  # two: the second appends to a version that is itself an append
        batch_rows = append_sizes[0]
        probe = spark.range(probe_sizes[0]).selectExpr(f"(id * 7919) % {2 * keys} AS pk", "id AS pv").cache()
        probe.count()
        current: IndexedDataFrame = idf
        versions = []
        lookup_ms, join_ms, append_ms = [], [], []
        for _ in range(rounds):
            batch = table(batch_rows, offset)
            offset += batch_rows
            start = time.perf_counter()
            current = current.append_rows(batch).cache()
            append_ms.append((time.perf_counter() - start) * 1000)
            versions.append(current)
            key = rng.randrange(keys)
            start = time.perf_counter()
            current.get_rows(key).collect()
            lookup_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            current.join(probe, current["src"] == probe["pk"]).agg(F.count("*")).collect()
            join_ms.append((time.perf_counter() - start) * 1000)
        expected_rows = n + rounds * batch_rows
        if current.count() != expected_rows:
            raise AssertionError(f"interleaved appends: {current.count()} rows, expected {expected_rows}")
        interleaved = {
            "rounds": rounds,
            "batchRows": batch_rows,
            "appendMs": statistics.median(append_ms),
            "lookupMs": statistics.median(lookup_ms),
            "joinMs": statistics.median(join_ms),
            "lookupMsWithoutAppends": lookups["indexed"].median * 1000,
            "joinMsWithoutAppends": joins[str(probe_sizes[0])]["indexed"]["median"] * 1000,
            "newestVersion": current.version,
        }
        ctx.log(
            f"  interleaved: append {interleaved['appendMs']:.1f} ms, lookup {interleaved['lookupMs']:.1f} ms, "
            f"join {interleaved['joinMs']:.1f} ms per round"
        )
        for v in versions:
            v.unpersist()
        probe.unpersist()
    idf.unpersist()
    cached.unpersist()

    return {
        "rows": n,
        "keys": keys,
        "partitions": partitions,
        "build": {"cacheSeconds": cache_seconds, "indexSeconds": index_seconds},
        "memory": memory,
        "lookups": {v: _summary(m) for v, m in lookups.items()},
        "joins": joins,
        "dimensionJoin": dimension,
        "loadAverage": open("/proc/loadavg").read().split()[:3],
        "appends": appends,
        "interleaved": interleaved,
    }
