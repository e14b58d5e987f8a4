"""The split index (issue #19) on TPC-H lineitem: its size against the source's, ``SELECT *`` point
lookups and IN-lists of 100 keys on ``l_orderkey`` with and without it, and joins of lineitem with
orders filtered on a non-key column to 1, 2, 10, 100 and 1000 orders (Q3/Q10-style: a selective
small side) and to a fifth of them (``joinall``: a non-selective small side), with join pruning on
and off. Over a CSV copy of lineitem written in ``l_orderkey`` order (64 files, as an export by
key would be), the file-level split index: a point lookup, an IN-list of 10 keys and a join with 2
selective orders (``csv_*``). Each run draws new keys (no lookup is served from a cache), runs
every variant on the same query in rotated order, and checks that they return the same rows."""

from __future__ import annotations

import os
import random
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.harness import canonical_rows
from hyperspace import Hyperspace, HyperspaceConfig, SplitIndexConfig, disable_hyperspace, enable_hyperspace

PRUNING = "spark.hyperspace.index.split.joinPruning.enabled"
# Orders' size estimate (57 MB at SF1) is over Spark's 10 MB default; users who join a filtered
# fact-side dimension raise it. Every variant runs with the same value.
BROADCAST = str(64 * 1024 * 1024)
VARIANTS = ("spark", "hyperspace", "hyperspace_pruning")
CSV_FILES = 64


def _bytes(path: str | Path, suffix: str = ".parquet") -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs if f.endswith(suffix))


def _switch(spark: Any, variant: str) -> None:
    """No index; the split index with join pruning off; with it on."""
    if variant == "spark":
        disable_hyperspace(spark)
    else:
        enable_hyperspace(spark)
    spark.conf.set(PRUNING, str(variant == "hyperspace_pruning").lower())


def _order_keys(rnd: random.Random, n: int, max_order: int) -> list[int]:
    # TPC-H order keys are sparse: the first 8 of every 32.
    return [32 * rnd.randrange(max_order // 32) + 1 + rnd.randrange(8) for _ in range(n)]


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    index_root = ctx.work_dir / "split-indexes"
    shutil.rmtree(index_root, ignore_errors=True)
    conf.system_path = str(index_root)
    conf.num_buckets = ctx.buckets
    lineitem_path = ctx.lake.path("lineitem")
    lineitem = spark.read.parquet(lineitem_path)
    lineitem.createOrReplaceTempView("lineitem")
    spark.read.parquet(ctx.lake.path("orders")).createOrReplaceTempView("orders")
    max_order = spark.sql("SELECT max(o_orderkey) FROM orders").first()[0]
    # Total prices of a sample of orders: a filter on them is not on the join key (Spark cannot
    # carry it over to l_orderkey), so only join pruning narrows lineitem.
    prices = [
        str(r[0])
        for r in spark.sql("SELECT o_totalprice FROM orders ORDER BY rand(19) LIMIT 1000").collect()
        if r[0] is not None
    ]

    priorities = [r[0] for r in spark.sql("SELECT DISTINCT o_orderpriority FROM orders").collect()]

    start = time.perf_counter()
    hs.create_index(lineitem, SplitIndexConfig("split_orderkey", ["l_orderkey"]))
    build_s = time.perf_counter() - start
    source_bytes, index_bytes = _bytes(lineitem_path), _bytes(index_root / "split_orderkey")
    ctx.log(
        f"  split: index built in {build_s:.1f}s, {index_bytes / 1e6:.1f} MB for {source_bytes / 1e6:.1f} MB "
        f"of source ({index_bytes / source_bytes * 100:.1f}%)"
    )
    rnd = random.Random(19)

    def point() -> str:
        return f"SELECT * FROM lineitem WHERE l_orderkey = {_order_keys(rnd, 1, max_order)[0]}"

    def in100() -> str:
        return f"SELECT * FROM lineitem WHERE l_orderkey IN ({', '.join(map(str, _order_keys(rnd, 100, max_order)))})"

    def join_of(n: int, table: str = "lineitem") -> Callable[[], str]:
        def join() -> str:
            chosen = ", ".join(rnd.sample(prices, n))
            return (
                f"SELECT l.*, o.o_orderdate, o.o_orderpriority FROM {table} l JOIN orders o "
                f"ON l.l_orderkey = o.o_orderkey WHERE o.o_totalprice IN ({chosen})"
            )

        return join

    def csv_keys(n: int) -> Callable[[], str]:
        def lookup() -> str:
            keys = _order_keys(rnd, n, max_order)
            return f"SELECT * FROM lineitem_csv WHERE l_orderkey IN ({', '.join(map(str, keys))})"

        return lookup

    def join_all() -> str:
        # A fifth of the orders: aggregated, as its 1.2M joined rows would cost more in Python than in Spark.
        return (
            "SELECT count(*), sum(l.l_extendedprice), max(o.o_orderdate) FROM lineitem l JOIN orders o "
            f"ON l.l_orderkey = o.o_orderkey WHERE o.o_orderpriority = '{rnd.choice(priorities)}'"
        )

    queries: dict[str, Callable[[], str]] = {"point": point, "in100": in100}
    queries |= {f"join{n}": join_of(n) for n in (1, 2, 10, 100, 1000)}
    queries["joinall"] = join_all
    queries |= {"csv_point": csv_keys(1), "csv_in10": csv_keys(10), "csv_join2": join_of(2, "lineitem_csv")}
    queries = ctx.selected(queries)
    sizes = {"source_bytes": source_bytes, "index_bytes": index_bytes, "build_s": build_s, "own_keys": True}
    if any(name.startswith("csv_") for name in queries):
        sizes |= _csv_copy(ctx, hs, lineitem, index_root)
    # A quick run times its warm-up round (cold), as run_queries does with runs=0.
    runs = ctx.runs if not ctx.quick else 0
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", BROADCAST)
    results: dict[str, Any] = {}
    try:
        for name, make in queries.items():
            times: dict[str, list[float]] = {v: [] for v in VARIANTS}
            plans: dict[str, list[float]] = {v: [] for v in VARIANTS}
            for i in range(runs + 1):  # the first round warms up and is dropped (unless it is the only one)
                order = VARIANTS[i % 3 :] + VARIANTS[: i % 3]
                for variant in order:
                    # A key of its own per variant: the seek rule caches a lookup per filter, and a
                    # variant running the key another had just looked up would plan from that cache.
                    sql = make()
                    _switch(spark, variant)
                    t = time.perf_counter()
                    df = spark.sql(sql)
                    df._jdf.queryExecution().executedPlan()
                    planned = time.perf_counter()
                    rows = canonical_rows(df.collect())
                    if i > 0 or runs == 0:
                        times[variant].append(time.perf_counter() - t)
                        plans[variant].append(planned - t)
                    if variant != "spark":  # its rows against Spark's for the same query, untimed
                        _switch(spark, "spark")
                        if rows != canonical_rows(spark.sql(sql).collect()):
                            raise AssertionError(f"split: {name} returned different rows with an index: {sql[:200]}")
            _switch(spark, "hyperspace_pruning")
            index = "split_csv_orderkey" if name.startswith("csv_") else "split_orderkey"
            why = hs.why_not(spark.sql(make()), index, display=False).strip().replace("\n", " | ")
            disable_hyperspace(spark)
            load = os.getloadavg()
            results[name] = {
                v: {"ms": statistics.median(times[v]) * 1000, "plan_ms": statistics.median(plans[v]) * 1000}
                for v in VARIANTS
            } | {"whyNot": why, "load": load, "runs": max(runs, 1)}
            r = results[name]
            ctx.log(
                f"  split {name}: spark {r['spark']['ms']:.0f} ms, index {r['hyperspace']['ms']:.0f} ms, "
                f"index+pruning {r['hyperspace_pruning']['ms']:.0f} ms; load {load[0]:.1f}; {why[:160]}"
            )
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
        spark.conf.unset(PRUNING)
        disable_hyperspace(spark)
    return {"sizes": sizes, "queries": results, "markdown": _markdown(sizes, results)}


def _csv_copy(ctx: BenchContext, hs: Hyperspace, lineitem: Any, index_root: Path) -> dict[str, Any]:
    """Writes lineitem as CSV in ``l_orderkey`` order (``CSV_FILES`` files), registers it as the view
    ``lineitem_csv`` and builds its file-level split index; its sizes and build time."""
    spark = ctx.spark
    csv_path = str(ctx.work_dir / "lineitem_csv_by_orderkey")
    shutil.rmtree(csv_path, ignore_errors=True)
    lineitem.repartitionByRange(CSV_FILES, "l_orderkey").sortWithinPartitions("l_orderkey").write.option(
        "header", "true"
    ).csv(csv_path)
    lineitem_csv = spark.read.schema(lineitem.schema).option("header", "true").csv(csv_path)
    lineitem_csv.createOrReplaceTempView("lineitem_csv")
    start = time.perf_counter()
    hs.create_index(lineitem_csv, SplitIndexConfig("split_csv_orderkey", ["l_orderkey"]))
    build_s = time.perf_counter() - start
    csv_bytes, index_bytes = _bytes(csv_path, ".csv"), _bytes(index_root / "split_csv_orderkey")
    ctx.log(
        f"  split: CSV index built in {build_s:.1f}s, {index_bytes / 1e6:.1f} MB for {csv_bytes / 1e6:.1f} MB of CSV"
    )
    return {"csv_bytes": csv_bytes, "csv_index_bytes": index_bytes, "csv_build_s": build_s}


def _markdown(sizes: dict[str, Any], results: dict[str, Any]) -> list[str]:
    ratio = sizes["index_bytes"] / sizes["source_bytes"]
    lines = [
        "## Split index (issue #19)",
        "",
        f"Index on `l_orderkey`: {sizes['index_bytes'] / 1e6:.1f} MB for {sizes['source_bytes'] / 1e6:.1f} MB of "
        f"source Parquet ({ratio * 100:.1f}%), built in {sizes['build_s']:.1f} s."
        + (
            f" The `csv_*` queries read a CSV copy of lineitem written in `l_orderkey` order ({CSV_FILES} files, "
            f"{sizes['csv_bytes'] / 1e6:.1f} MB) through a file-level split index on `l_orderkey` "
            f"({sizes['csv_index_bytes'] / 1e6:.1f} MB, built in {sizes['csv_build_s']:.1f} s): a seek reads only "
            "the files holding its keys."
            if "csv_bytes" in sizes
            else ""
        ),
        "",
        "Milliseconds (planning included; *plan* is planning alone), medians of interleaved runs"
        + (
            ", each variant with a key of its own (its rows compared with Spark's for that key, untimed). "
            if sizes.get("own_keys")
            else " with new keys each round, shared by a round's variants (the second Hyperspace variant of a "
            "round plans from the seek rule's lookup cache). "
        )
        + "*spark*: no index; *index*: the split index, join pruning off; *index + pruning*: on. "
        "Joins run with `spark.sql.autoBroadcastJoinThreshold=64m` in every variant.",
        "",
        "| query | spark | index (plan) | index + pruning (plan) | spark / index | spark / index + pruning | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        s, h, p = r["spark"], r["hyperspace"], r["hyperspace_pruning"]
        lines.append(
            f"| {name} | {s['ms']:.0f} | {h['ms']:.0f} ({h['plan_ms']:.0f}) | {p['ms']:.0f} ({p['plan_ms']:.0f}) "
            f"| {s['ms'] / h['ms']:.2f}× | {s['ms'] / p['ms']:.2f}× | {r['load'][0]:.1f} / {r['load'][1]:.1f} |"
        )
    lines += ["", "whyNot (index + pruning):", ""]
    lines += [f"- {name}: {r['whyNot'][:400]}" for name, r in results.items()]
    return lines + [""]
