"""The two small cases of issue #55, each against Spark's own plan, interleaved:
``python -m benchmarks.small_cases_ab [--work-dir /work/bench-data/small-cases] [--rounds 7]
[--cases broadcast,indexed]``.

``broadcast``: a fact table (``--fact-rows`` rows: key, amount and a wide column the query does
not read) joined to a 20,000-row dimension Spark broadcasts, grouped by a dimension column, with a
covering index on the fact key including the amount. Two shapes: the one reported (the fact table
in 2 files, the index in 64 buckets) and one the broadcast-probe rule was built for (64 files in
random key order, 8 buckets). Variants: Hyperspace off and on. Run it once with the jar before the
change and once after (``PYTHONPATH`` choosing the package) to compare; each run prints the tasks
its queries ran and whether the index was read.

``indexed``: an Indexed DataFrame of ``--edge-rows`` edges in 16 partitions probed by a cached
200,000-row table filtered to 100, 15,800 or 150,000 rows (Spark estimates each filter at about the
whole table). Variants: Spark's plan over the same edges cached with ``df.cache()``, the Indexed
DataFrame's join choice on Spark's estimate (``countProbeRows=false``, the choice before the
change), on the counted rows (the default after it), and the index join forced.

Every variant's rows are compared on every run; medians after a warm-up of each, with the load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.context import local_session
from benchmarks.harness import canonical_rows

DIM_ROWS = 20_000
PROBE_ROWS = 200_000


def _load() -> float:
    return os.getloadavg()[0]


def _tasks(spark: SparkSession, fn: Callable[[], list[Any]]) -> tuple[list[Any], int]:
    """``fn``'s rows and the tasks of the stages its jobs ran (skipped stages not counted)."""
    from hyperspace._jvm import stages_of_jobs_with_tag

    tag = f"small-cases-{uuid.uuid4().hex[:8]}"
    spark.sparkContext.addJobTag(tag)
    try:
        rows = fn()
    finally:
        spark.sparkContext.removeJobTag(tag)
    return rows, sum(s.num_tasks for s in stages_of_jobs_with_tag(spark, tag) if s.submission_time > 0)


def _interleaved(
    name: str, variants: dict[str, Callable[[], list[Any]]], rounds: int
) -> tuple[dict[str, float], float, float]:
    """Medians (ms) of ``rounds`` rotating rounds after a warm-up of each; the load before and after."""
    load_start = _load()
    expected = None
    for v, fn in variants.items():
        rows = canonical_rows(fn())
        if expected is None:
            expected = rows
        elif rows != expected:
            raise SystemExit(f"{name}: {v} returned different rows")
    times: dict[str, list[float]] = {v: [] for v in variants}
    names = list(variants)
    for r in range(rounds):
        for v in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            rows = variants[v]()
            times[v].append((time.perf_counter() - start) * 1000)
            if canonical_rows(rows) != expected:
                raise SystemExit(f"{name}: {v} returned different rows in round {r + 1}")
    medians = {v: statistics.median(t) for v, t in times.items()}
    print(f"  {name}: " + ", ".join(f"{v} {m:.0f} ms" for v, m in medians.items()), flush=True)
    return medians, load_start, _load()


def _broadcast(spark: SparkSession, root: Path, rows: int, rounds: int, split_variant: bool) -> list[str]:
    from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace
    from hyperspace._jvm import plan_facts

    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    dim = str(root / "dim")
    spark.range(0, DIM_ROWS, 1, 1).selectExpr("id AS dk", "CONCAT('c', id % 10) AS cat").write.parquet(dim)
    out = [
        "| shape | off ms | on ms | off / on | tasks off → on | index read | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for files, buckets in ((2, 64), (64, 8)):
        fact = str(root / f"fact_{files}")
        # Random key order within and across files: the order an index's sort gives the probes.
        spark.range(0, rows, 1, files).selectExpr(
            f"CAST(pmod(hash(id), {DIM_ROWS}) AS BIGINT) AS k",
            "CAST(pmod(hash(id, 3), 1000) AS DOUBLE) / 7 AS amt",
            "sha2(CAST(id AS STRING), 256) AS pad",
        ).write.parquet(fact)
        name = f"fact{files}_k"
        with conf.override(num_buckets=buckets):
            hs.create_index(spark.read.parquet(fact), IndexConfig(name, ["k"], ["amt"]))

        def query(f: str = fact) -> DataFrame:
            big = spark.read.parquet(f).select("k", "amt")
            small = spark.read.parquet(dim)
            return big.join(small, big["k"] == small["dk"]).groupBy("cat").agg(F.count("*"), F.sum("amt"))

        def run(on: bool) -> list[Any]:
            (enable_hyperspace if on else disable_hyperspace)(spark)
            return query().collect()

        def split_read() -> list[Any]:
            # Files costing nothing to open: the rule reads the index with file splits where it
            # declines on the open cost, to see what that read would have cost.
            spark.conf.set("spark.sql.files.openCostInBytes", "1")
            try:
                return run(True)
            finally:
                spark.conf.unset("spark.sql.files.openCostInBytes")

        label = f"{files} files, {buckets} buckets"
        variants = {"off": lambda: run(False), "on": lambda: run(True)}
        if split_variant:
            variants["on, open cost 1 B"] = split_read
        medians, load_start, load_end = _interleaved(label, variants, rounds)
        _, tasks_off = _tasks(spark, lambda: run(False))
        _, tasks_on = _tasks(spark, lambda: run(True))
        enable_hyperspace(spark)
        q = query()
        q.collect()
        used = plan_facts(q)["indexes"]
        disable_hyperspace(spark)
        if split_variant:
            split = medians["on, open cost 1 B"]
            print(f"    open cost 1 B: {split:.0f} ms, off / that {medians['off'] / split:.2f}×", flush=True)
        out.append(
            f"| {label} | {medians['off']:.0f} | {medians['on']:.0f} | {medians['off'] / medians['on']:.2f}× | "
            f"{tasks_off} → {tasks_on} | {', '.join(used) or 'none'} | {load_start:.1f}–{load_end:.1f} |"
        )
        if not used:
            enable_hyperspace(spark)
            print(f"    why not: {hs.why_not(query(), name)}", flush=True)
            disable_hyperspace(spark)
    return out


def _indexed(spark: SparkSession, rows: int, rounds: int) -> list[str]:
    from hyperspace import HyperspaceConfig
    from hyperspace.indexed import create_index, join_decisions

    conf = HyperspaceConfig(spark)
    keys = rows // 4
    edges = spark.range(rows).selectExpr(f"id % {keys} AS src", "id AS dst", "CAST(id % 1000 AS DOUBLE) / 7 AS weight")
    cached = edges.cache()
    cached.count()
    idf = create_index(edges, "src", num_partitions=16).cache()
    indexed = idf.to_df()
    probe = spark.range(PROBE_ROWS).selectExpr(f"(id * 7919) % {2 * keys} AS pk", "id AS pv").cache()
    probe.count()

    def agg(df: DataFrame) -> list[Any]:
        return df.agg(F.count("*"), F.sum("weight"), F.sum("pv")).collect()

    def on_index(p: DataFrame, **settings: Any) -> list[Any]:
        # The key is spark's own; the jar before the change ignores it.
        count = settings.pop("count", True)
        spark.conf.set("spark.hyperspace.indexed.join.countProbeRows", str(count).lower())
        try:
            with conf.override(**settings):
                return agg(p.join(indexed, p["pk"] == indexed["src"]))
        finally:
            spark.conf.unset("spark.hyperspace.indexed.join.countProbeRows")

    out = [
        "| probe rows left | df.cache() ms | on estimate ms | counted ms | forced ms | "
        "cache / estimate | cache / counted | choice on estimate → counted | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kept in (100, 15_800, 150_000):
        p = probe.where(f"pv < {kept}")
        variants = {
            "cache": lambda p=p: agg(p.join(cached, p["pk"] == cached["src"])),
            "estimate": lambda p=p: on_index(p, count=False),
            "counted": lambda p=p: on_index(p),
            "forced": lambda p=p: on_index(p, indexed_join_selection="index"),
        }
        medians, load_start, load_end = _interleaved(f"{kept:,} probe rows", variants, rounds)
        spark.conf.set("spark.hyperspace.indexed.join.countProbeRows", "false")
        before = join_decisions(p.join(indexed, p["pk"] == indexed["src"]))
        spark.conf.unset("spark.hyperspace.indexed.join.countProbeRows")
        after = join_decisions(p.join(indexed, p["pk"] == indexed["src"]))
        print(f"    on estimate: {before}\n    counted: {after}", flush=True)
        c = medians["cache"]
        out.append(
            f"| {kept:,} | {c:.0f} | {medians['estimate']:.0f} | {medians['counted']:.0f} | {medians['forced']:.0f} | "
            f"{c / medians['estimate']:.2f}× | {c / medians['counted']:.2f}× | "
            f"{before[0].split(':')[0]} → {after[0].split(':')[0]} | {load_start:.1f}–{load_end:.1f} |"
        )
    idf.unpersist()
    cached.unpersist()
    probe.unpersist()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.small_cases_ab", description=__doc__)
    parser.add_argument("--work-dir", default="/work/bench-data/small-cases")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cases", default="broadcast,indexed")
    parser.add_argument("--fact-rows", type=int, default=3_000_000)
    parser.add_argument("--edge-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--split-variant", action="store_true", help="add the index read with file splits at an open cost of 1 byte"
    )
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from hyperspace import HyperspaceConfig, configure_spark_with_hyperspace

    root = Path(args.work_dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    spark = configure_spark_with_hyperspace(local_session("4g", 8, "hyperspace-small-cases-ab")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    HyperspaceConfig(spark).system_path = str(root / "indexes")
    cases = set(args.cases.split(","))
    started = time.strftime("%H:%M:%S", time.gmtime())
    tables = []
    if "broadcast" in cases:
        tables += (
            [f"Broadcast join, {args.fact_rows:,}-row fact table:", ""]
            + _broadcast(spark, root, args.fact_rows, args.rounds, args.split_variant)
            + [""]
        )
    if "indexed" in cases:
        tables += [f"Indexed DataFrame of {args.edge_rows:,} edges, 16 partitions:", ""] + _indexed(
            spark, args.edge_rows, args.rounds
        )
    print(f"\nStarted {started} UTC; {args.rounds} rotating rounds after a warm-up, medians; load = 1-min average.")
    print("\n".join(tables))
    spark.stop()


if __name__ == "__main__":
    main()
