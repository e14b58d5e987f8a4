"""The indexed suite's dimension shape alone: ``python -m benchmarks.indexed_dimension_ab
[--rounds 15] [--no-big-index] [--forced]``.

The index on a 25,000-row dimension (``dk``, ``dname``), probed from the 10M-row cached edge table
(``cached.join(dim, src == dk).agg(count(*), sum(weight), max(dname))``): join selection leaves
this plan to Spark (it broadcasts the dimension), so the indexed variant should cost what Spark's
default plan over the plainly cached dimension costs. Prints each variant's final executed plan
(after adaptive execution, expression ids removed, so two builds' plans can be diffed), then
the variants interleaved with a rotating order: medians, minima and the load average. The 10M-row
index the suite also caches is built too (the suite's heap) unless ``--no-big-index``;
``--forced`` adds the suite's ``indexed_forced`` variant (the index's own join, ~10x slower) to
the rotation, as the suite runs it.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from typing import Any


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _plan(df: Any) -> str:
    """The final executed plan of an executed DataFrame, without expression ids and plan ids."""
    text = str(df._jdf.queryExecution().executedPlan().toString())
    return re.sub(r"#\d+L?|plan_id=\d+|\[id=#?\d+\]", "", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-big-index", action="store_true")
    parser.add_argument("--forced", action="store_true")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from benchmarks.context import local_session
    from benchmarks.harness import canonical_rows
    from benchmarks.suites.indexed import FULL_ROWS, KEYS_PER_ROW, edge_table
    from hyperspace import HyperspaceConfig, configure_spark_with_hyperspace
    from hyperspace.indexed import create_index, join_decisions

    spark = configure_spark_with_hyperspace(local_session("8g", 16, "indexed-dimension-ab")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conf = HyperspaceConfig(spark)
    n = FULL_ROWS
    keys = max(1, n // KEYS_PER_ROW)
    cached = edge_table(spark, keys, n).cache()
    cached.count()
    if not args.no_big_index:
        create_index(edge_table(spark, keys, n), "src", num_partitions=16).cache()
    dim_rows = max(100, keys // 100)
    dim_plain = spark.range(dim_rows).selectExpr("id AS dk", "concat('dim-', id) AS dname").cache()
    dim_plain.count()
    dim_idf = create_index(dim_plain, "dk", num_partitions=16).cache()
    dim_df = dim_idf.to_df()

    def agg(df: Any) -> Any:
        return df.agg(F.count("*"), F.sum("weight"), F.max("dname"))

    def forced() -> Any:
        with conf.override(indexed_join_selection="index"):
            df = agg(cached.join(dim_df, cached["src"] == dim_df["dk"]))
            df.collect()
            return df

    variants = {
        "indexed": lambda: agg(cached.join(dim_df, cached["src"] == dim_df["dk"])),
        "spark_default": lambda: agg(cached.join(dim_plain, cached["src"] == dim_plain["dk"])),
        "spark_broadcast": lambda: agg(cached.join(F.broadcast(dim_plain), cached["src"] == dim_plain["dk"])),
    }
    print(f"decision: {join_decisions(cached.join(dim_df, cached['src'] == dim_df['dk']))}")
    expected = None
    for v, make in variants.items():
        df = make()
        got = canonical_rows(df.collect())
        expected = expected or got
        if got != expected:
            raise AssertionError(f"{v} returned different rows")
        print(f"\n{v} final plan:\n{_plan(df)}")

    names = list(variants) + (["indexed_forced"] if args.forced else [])
    times: dict[str, list[float]] = {v: [] for v in names}
    load_start = _load()
    for r in range(args.rounds):
        for v in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            if v == "indexed_forced":
                forced()
            else:
                rows = variants[v]().collect()
                if canonical_rows(rows) != expected:
                    raise AssertionError(f"{v} returned different rows in round {r}")
            times[v].append((time.perf_counter() - start) * 1000)
    print(f"\n{args.rounds} rounds, load {load_start} -> {_load()}")
    default = statistics.median(times["spark_default"])
    for v, ts in times.items():
        med = statistics.median(ts)
        print(
            f"{v}: median {med:.1f} ms (min {min(ts):.1f}, max {max(ts):.1f}); spark_default / this {default / med:.2f}"
        )
    spark.stop()


if __name__ == "__main__":
    main()
