"""Never slower by choice: queries where an index must not be used, or cannot help, run with
Hyperspace on and off, interleaved. A join Spark broadcasts (lineitem ⋈ part, both sides with a
covering index on the join key) must be left to Spark; a query no index serves (TPC-H Q1) must
cost what it costs without Hyperspace. Ratios of medians, with the machine's load average.

Lighter than the tpch suite (no hand-tuned tables, two indexes), so before/after comparisons
of the optimizer can be run at SF1 in a few minutes.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.harness import Variant, run_queries
from benchmarks.suites.tpch import QUERY_DIR, FileViews
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace

QUERIES = ["broadcast_join", "no_index", "q17"]
INDEXES = [
    ("lineitem", IndexConfig("li_partkey", ["l_partkey"], ["l_quantity", "l_extendedprice"])),
    ("part", IndexConfig("part_partkey", ["p_partkey"], ["p_brand", "p_container"])),
]
AT_LEAST = 0.95  # Hyperspace / vanilla speed every query here must reach


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    root = ctx.work_dir / "broadcast-indexes"
    shutil.rmtree(root, ignore_errors=True)
    conf.system_path = str(root)
    conf.num_buckets = ctx.buckets
    for table, config in INDEXES:
        hs.create_index(spark.read.parquet(ctx.lake.path(table)), config)
    queries = ctx.selected({q: (QUERY_DIR / f"{q}.sql").read_text() for q in QUERIES})
    views = FileViews(spark, ctx)
    variants = [
        Variant("spark", lambda q: (views.register(), disable_hyperspace(spark))),
        Variant("hyperspace", lambda q: (views.register(), enable_hyperspace(spark))),
    ]
    load_before = _load()
    measured = run_queries(spark, queries, variants, ctx.runs, ctx.log)
    load_after = _load()
    disable_hyperspace(spark)
    out: dict[str, Any] = {
        "loadAverage": {"before": load_before, "after": load_after},
        "queries": {
            q: {
                v: {"seconds": m.seconds, "median": m.median, "min": m.low, "max": m.high, "facts": m.facts}
                for v, m in per.items()
            }
            for q, per in measured.items()
        },
    }
    out["markdown"] = markdown(out)
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    load = result["loadAverage"]
    lines = [
        "## Never slower by choice",
        "",
        "Seconds: median (min–max) of interleaved runs; the ratio is Spark / Hyperspace (≥ "
        f"{AT_LEAST} required). 1-minute load average {load['before']:.1f} before, "
        f"{load['after']:.1f} after.",
        "",
        "| query | Spark | Hyperspace | Spark / Hyperspace | indexes used | Exchanges (Spark → Hyperspace) |",
        "|---|---|---|---|---|---|",
    ]
    for q, per in result["queries"].items():
        s, h = per["spark"], per["hyperspace"]
        ratio = s["median"] / h["median"]
        lines.append(
            f"| {q} | {s['median']:.3f} ({s['min']:.2f}–{s['max']:.2f}) | {h['median']:.3f} "
            f"({h['min']:.2f}–{h['max']:.2f}) | {ratio:.2f}× {'' if ratio >= AT_LEAST else '(below ' + str(AT_LEAST) + ')'} "
            f"| {', '.join(h['facts']['indexes']) or '—'} | {s['facts']['exchanges']} → {h['facts']['exchanges']} |"
        )
    return lines + [""]
