"""Where a tiny seek's time goes: point lookups on ``l_orderkey`` with and without an index,
split into planning (analysis, optimization, physical planning), the job (submission to
completion) and, inside it, the tasks' own run time, deserialization and result serialization;
the rest of a query's wall time is the driver collecting rows. Also the build time of a fully
covering index against the same table written with ``bucketBy().sortBy()``."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.harness import canonical_rows, plan_facts
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace

LINEITEM_COLUMNS = [
    "l_orderkey",
    "l_partkey",
    "l_suppkey",
    "l_linenumber",
    "l_quantity",
    "l_extendedprice",
    "l_discount",
    "l_tax",
    "l_returnflag",
    "l_linestatus",
    "l_shipdate",
    "l_commitdate",
    "l_receiptdate",
    "l_shipinstruct",
    "l_shipmode",
    "l_comment",
]

INDEXES = [
    IndexConfig("seek_narrow", ["l_orderkey"], ["l_linenumber", "l_quantity", "l_extendedprice", "l_shipdate"]),
    IndexConfig("seek_all", ["l_orderkey"], LINEITEM_COLUMNS[1:]),
]

# TPC-H order keys are sparse (the first 8 of every 32), so these are keys that exist at any scale.
QUERIES = {
    "narrow_lookup": "SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate "
    "FROM lineitem WHERE l_orderkey = 4227",
    "star_lookup": "SELECT * FROM lineitem WHERE l_orderkey = 4227",
    "in_list_10": "SELECT * FROM lineitem WHERE l_orderkey IN (7, 4227, 90017, 123457, 300001, "
    "451111, 600001, 777761, 1000001, 1200003)",
}


def _items(seq: Any) -> list[Any]:
    """The elements of a Scala ``Seq`` reached through py4j."""
    return [seq.apply(i) for i in range(seq.size())]


def _job_phases(spark: Any, since_job: int) -> dict[str, float]:
    """Milliseconds of the jobs with ids >= ``since_job``: their span, and their tasks' run,
    deserialization and result-serialization time (from Spark's status store; summed)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    span = run = deser = ser = 0.0
    count = 0
    for job in _items(store.jobsList(None)):
        if job.jobId() < since_job or not job.completionTime().isDefined():
            continue
        count += 1
        span += job.completionTime().get().getTime() - job.submissionTime().get().getTime()
        for stage_id in _items(job.stageIds()):
            for s in _items(store.stageData(stage_id, False, None, False, None)):
                run += s.executorRunTime()
                deser += s.executorDeserializeTime()
                ser += s.resultSerializationTime()
    return {"jobs": count, "job_ms": span, "task_run_ms": run, "task_deser_ms": deser, "result_ser_ms": ser}


def _last_job_id(spark: Any) -> int:
    jobs = _items(spark.sparkContext._jsc.sc().statusStore().jobsList(None))
    return max((job.jobId() for job in jobs), default=-1)


def _measure_once(spark: Any, sql: str, facts: bool = False) -> dict[str, Any]:
    """One run's phases and rows; with ``facts``, also its plan facts (Exchanges, files read...)."""
    first_job = _last_job_id(spark) + 1
    start = time.perf_counter()
    df = spark.sql(sql)
    df._jdf.queryExecution().executedPlan()  # analysis, optimization, physical planning
    planned = time.perf_counter()
    rows = df.collect()  # the same QueryExecution: execution only
    done = time.perf_counter()
    phases = _job_phases(spark, first_job)
    return {
        "total_ms": (done - start) * 1000,
        "plan_ms": (planned - start) * 1000,
        "execute_ms": (done - planned) * 1000,
        **phases,
        "rows": canonical_rows(rows),
    } | ({"facts": plan_facts(spark, df)} if facts else {})


DRIVER_READ_DEFAULT = 16 * 1024 * 1024


def _switch(spark: Any, conf: HyperspaceConfig, variant: str) -> None:
    """No index; the index with lookups read in the driver (the default); the index read by a job."""
    if variant == "spark":
        disable_hyperspace(spark)
    else:
        enable_hyperspace(spark)
        conf.driver_read_max_bytes = 0 if variant == "hyperspace_job" else DRIVER_READ_DEFAULT


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    index_root = ctx.work_dir / "seek-indexes"
    shutil.rmtree(index_root, ignore_errors=True)
    conf.system_path = str(index_root)
    conf.num_buckets = ctx.buckets
    lineitem = spark.read.parquet(ctx.lake.path("lineitem"))
    lineitem.createOrReplaceTempView("lineitem")

    builds: dict[str, float] = {}
    for config in INDEXES:
        start = time.perf_counter()
        hs.create_index(lineitem, config)
        builds[config.name] = time.perf_counter() - start
        ctx.log(f"  seek: index {config.name} built in {builds[config.name]:.1f}s")
    start = time.perf_counter()
    (
        lineitem.write.bucketBy(ctx.buckets, "l_orderkey")
        .sortBy("l_orderkey")
        .mode("overwrite")
        .saveAsTable("seek_bucketed_lineitem")
    )
    builds["bucketBy_sortBy_all_columns"] = time.perf_counter() - start
    ctx.log(f"  seek: bucketBy().sortBy() of all columns in {builds['bucketBy_sortBy_all_columns']:.1f}s")

    # A quick run times each variant's warm-up (cold), as run_queries does with runs=0.
    runs = ctx.runs * 2 if not ctx.quick else 0
    results: dict[str, dict[str, Any]] = {}
    for name, sql in QUERIES.items():
        per: dict[str, list[dict[str, Any]]] = {"spark": [], "hyperspace": [], "hyperspace_job": []}
        for variant in per:  # warm-up
            _switch(spark, conf, variant)
            warm_up = _measure_once(spark, sql)
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
                raise AssertionError(f"seek: {name} returned different rows with {variant}")
        results[name] = {
            v: {k: _median(m, k) for k in m[0] if k != "rows"} | {"rowCount": len(expected)} for v, m in per.items()
        }
        h, s = results[name]["hyperspace"], results[name]["spark"]
        ctx.log(
            f"  seek {name}: spark {s['total_ms']:.1f} ms, hyperspace {h['total_ms']:.1f} ms "
            f"(plan {h['plan_ms']:.1f}, job {h['job_ms']:.1f}, task run {h['task_run_ms']:.1f})"
        )
    disable_hyperspace(spark)
    conf.driver_read_max_bytes = DRIVER_READ_DEFAULT
    load = os.getloadavg()
    return {
        "builds": builds,
        "queries": results,
        "load": load,
        "markdown": _markdown(builds, results, load, max(runs, 1)),
    }


def _markdown(builds: dict[str, float], results: dict[str, Any], load: tuple[float, ...], runs: int) -> list[str]:
    lines = [
        "## Tiny seeks: where the time goes",
        "",
        "Variants: *spark* without indexes; *hyperspace* with them (a lookup of few enough index "
        "bytes is read in the driver, the default); *hyperspace_job* with them but "
        "`driverRead.maxBytes=0`, so every query runs as a Spark job. "
        f"Milliseconds, medians of {runs} interleaved runs per variant; load average at the end "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. *plan*: analysis + optimization + physical "
        "planning; *execute*: from the planned query to rows in Python; *job*: Spark job submission "
        "to completion (inside *execute*); *task run / deser / result ser*: the tasks' own times, "
        "summed over tasks.",
        "",
        "| query | variant | total | plan | execute | job | task run | task deser | result ser | jobs | rows |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, per in results.items():
        for variant, m in per.items():
            lines.append(
                f"| {name} | {variant} | {m['total_ms']:.1f} | {m['plan_ms']:.1f} | {m['execute_ms']:.1f} "
                f"| {m['job_ms']:.1f} | {m['task_run_ms']:.1f} | {m['task_deser_ms']:.1f} "
                f"| {m['result_ser_ms']:.1f} | {m['jobs']:g} | {m['rowCount']} |"
            )
        ratio = per["spark"]["total_ms"] / per["hyperspace"]["total_ms"]
        lines.append(f"| {name} | **no index / index** | **{ratio:.2f}×** | | | | | | | | |")
        job = per["hyperspace_job"]["total_ms"] / per["hyperspace"]["total_ms"]
        lines.append(f"| {name} | **index by job / index in driver** | **{job:.2f}×** | | | | | | | | |")
    lines += ["", "| build | seconds |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in builds.items()]
    full, bucketed = builds["seek_all"], builds["bucketBy_sortBy_all_columns"]
    lines += ["", f"Fully covering index build / bucketBy().sortBy() of the same columns: {full / bucketed:.2f}×", ""]
    return lines
