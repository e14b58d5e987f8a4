"""Small aggregates over an index: the one-week and one-year ranges of the TPC-H suite on its
Z-order index, and an aggregate of one order's lines on its covering index, with and without the
one-partition read (``spark.hyperspace.index.onePartition.maxBytes``), which plans no shuffle
between an aggregate's partial and final steps, and with and without the driver-side read
(``spark.hyperspace.index.driverRead.maxBytes``), which computes such an aggregate in the driver
with no job. Each query's time is split into planning, the Spark jobs (submission to completion)
and the tasks' own run time, as in the seek suite."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.suites.seek import DRIVER_READ_DEFAULT, _measure_once, _median
from benchmarks.suites.tpch import INDEXES as TPCH_INDEXES
from benchmarks.suites.tpch import QUERY_DIR, zorder_target_file_size
from hyperspace import Hyperspace, HyperspaceConfig, ZOrderCoveringIndexConfig, disable_hyperspace, enable_hyperspace

INDEX_NAMES = ("li_orderkey", "li_zorder_shipdate_discount")
ONE_PARTITION_DEFAULT = 8 * 1024 * 1024

QUERIES = {
    "date_range": (QUERY_DIR / "date_range.sql").read_text(),
    "q6_zorder": (QUERY_DIR / "q6_zorder.sql").read_text(),
    "q6": (QUERY_DIR / "q6.sql").read_text(),
    "order_total": "SELECT count(*) AS lines, sum(l_extendedprice) AS total FROM lineitem WHERE l_orderkey = 4227",
    "order_by_line": "SELECT l_linenumber, sum(l_quantity) FROM lineitem WHERE l_orderkey = 4227 GROUP BY l_linenumber",
}
VARIANTS = ("spark", "hyperspace_shuffle", "hyperspace_job", "hyperspace", "hyperspace_no_aqe")


def _switch(spark: Any, conf: HyperspaceConfig, variant: str) -> None:
    """No index; the index with Spark's shuffle kept (one-partition read off, driver reads on one
    thread); one partition run as a job (driver-side read off); the default (computed in the driver
    when the bytes are few); the default without adaptive execution (what AQE's own planning at
    execution costs)."""
    spark.conf.set("spark.sql.adaptive.enabled", str(variant != "hyperspace_no_aqe").lower())
    if variant == "spark":
        disable_hyperspace(spark)
    else:
        enable_hyperspace(spark)
        conf.one_partition_max_bytes = 0 if variant == "hyperspace_shuffle" else ONE_PARTITION_DEFAULT
        # Driver reads on threads read a global aggregate's files as one partition too.
        conf.driver_read_threads = 1 if variant == "hyperspace_shuffle" else 0
        conf.driver_read_max_bytes = 0 if variant == "hyperspace_job" else DRIVER_READ_DEFAULT


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    index_root = ctx.work_dir / "onepart-indexes"
    shutil.rmtree(index_root, ignore_errors=True)
    conf.system_path = str(index_root)
    conf.num_buckets = ctx.buckets
    lineitem = spark.read.parquet(ctx.lake.path("lineitem"))
    lineitem.createOrReplaceTempView("lineitem")
    for _, config in TPCH_INDEXES:
        if config.name not in INDEX_NAMES:
            continue
        start = time.perf_counter()
        if isinstance(config, ZOrderCoveringIndexConfig):
            with conf.override(zorder_target_file_size=zorder_target_file_size(ctx.lake.sf, ctx.quick)):
                hs.create_index(lineitem, config)
        else:
            hs.create_index(lineitem, config)
        ctx.log(f"  onepart: index {config.name} built in {time.perf_counter() - start:.1f}s")

    # A quick run times each variant's warm-up (cold), as run_queries does with runs=0.
    runs = ctx.runs * 2 if not ctx.quick else 0
    results: dict[str, dict[str, Any]] = {}
    for name, sql in ctx.selected(QUERIES).items():
        per: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
        exchanges = {}
        for variant in per:  # warm-up, and the Exchanges of its executed plan (AQE's final one)
            _switch(spark, conf, variant)
            warm_up = _measure_once(spark, sql, facts=True)
            exchanges[variant] = int(warm_up.pop("facts")["exchanges"])
            if runs == 0:
                per[variant].append(warm_up)
        for i in range(runs):
            order = list(per)[i % len(per) :] + list(per)[: i % len(per)]  # rotate: drift hits all
            for variant in order:
                _switch(spark, conf, variant)
                per[variant].append(_measure_once(spark, sql))
        expected = per["spark"][0]["rows"]
        for variant, measured in per.items():
            if any(m["rows"] != expected for m in measured):
                raise AssertionError(f"onepart: {name} returned different rows with {variant}")
        results[name] = {
            v: {k: _median(m, k) for k in m[0] if k != "rows"} | {"exchanges": exchanges[v]} for v, m in per.items()
        }
        h, s, x, j = (results[name][v] for v in ("hyperspace", "spark", "hyperspace_shuffle", "hyperspace_job"))
        ctx.log(
            f"  onepart {name}: spark {s['total_ms']:.1f} ms, with shuffle {x['total_ms']:.1f} ms, "
            f"one partition {j['total_ms']:.1f} ms (plan {j['plan_ms']:.1f}, job {j['job_ms']:.1f}), "
            f"default {h['total_ms']:.1f} ms (plan {h['plan_ms']:.1f}, jobs {h['jobs']:g})"
        )
    disable_hyperspace(spark)
    conf.one_partition_max_bytes = ONE_PARTITION_DEFAULT
    conf.driver_read_max_bytes = DRIVER_READ_DEFAULT
    spark.conf.unset("spark.sql.adaptive.enabled")
    load = os.getloadavg()
    return {"queries": results, "load": load, "markdown": _markdown(results, load, max(runs, 1))}


def _markdown(results: dict[str, Any], load: tuple[float, ...], runs: int) -> list[str]:
    lines = [
        "## Small aggregates over an index: one partition, no shuffle, no job",
        "",
        "Variants: *spark* without indexes; *hyperspace_shuffle* with them but "
        "`onePartition.maxBytes=0` and `driverRead.threads=1` (Spark's plan over the index scan: "
        "partial aggregate, Exchange, final aggregate); *hyperspace_job* with them, the few index files read as one partition (no "
        "Exchange) by a job (`driverRead.maxBytes=0`); *hyperspace* with them and the defaults (the "
        "same aggregate computed in the driver, no job, when the files are few bytes); "
        f"*hyperspace_no_aqe* the default with `spark.sql.adaptive.enabled=false`. Milliseconds, medians of {runs} interleaved runs per variant; load "
        f"average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. *plan*: analysis + "
        "optimization + physical planning; *execute*: from the planned query to rows in Python; "
        "*job*: Spark jobs' submission to completion, summed (inside *execute*); *task run / deser / "
        "result ser*: the tasks' own times, summed over tasks.",
        "",
        "| query | variant | total | plan | execute | job | task run | task deser | result ser | jobs | Exchanges |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, per in results.items():
        for variant, m in per.items():
            lines.append(
                f"| {name} | {variant} | {m['total_ms']:.1f} | {m['plan_ms']:.1f} | {m['execute_ms']:.1f} "
                f"| {m['job_ms']:.1f} | {m['task_run_ms']:.1f} | {m['task_deser_ms']:.1f} "
                f"| {m['result_ser_ms']:.1f} | {m['jobs']:g} | {m['exchanges']} |"
            )
        ratio = per["spark"]["total_ms"] / per["hyperspace"]["total_ms"]
        before = per["spark"]["total_ms"] / per["hyperspace_shuffle"]["total_ms"]
        job = per["spark"]["total_ms"] / per["hyperspace_job"]["total_ms"]
        lines.append(
            f"| {name} | **no index / index** | **{ratio:.2f}×** (with the shuffle: {before:.2f}×; "
            f"one partition by a job: {job:.2f}×) | | | | | | | | |"
        )
    lines.append("")
    return lines
