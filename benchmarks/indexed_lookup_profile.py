"""Where an Indexed DataFrame point lookup's time goes: ``python -m benchmarks.indexed_lookup_profile``.

Times each phase of ``idf.get_rows(key).collect()`` separately (building the DataFrame, analysis,
optimization, physical planning, execution and collection to Python), the same plan executed in
the JVM only (no Python conversion), an empty one-task Spark job (the floor any job pays) and a
filter over ``df.cache()`` for comparison. Medians of 20 timed lookups of random keys after 5
warm-ups; the load average is printed with them. HYPERSPACE_BENCH_INDEXED_ROWS sets the size.
"""

from __future__ import annotations

import os
import random
import statistics
import time

from pyspark.sql import SparkSession

from hyperspace import configure_spark_with_hyperspace
from hyperspace.indexed import create_index


def main() -> None:
    builder = (
        SparkSession.builder.master("local[*]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "16")
        .config("spark.driver.host", "127.0.0.1")
    )
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    n = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 1_000_000))
    keys = max(1, n // 4)
    src = spark.range(n).selectExpr(
        f"id % {keys} AS src",
        "id AS dst",
        "CAST(id % 1000 AS DOUBLE) / 7 AS weight",
        "concat('edge-', id % 1000) AS label",
    )
    idf = create_index(src, "src", num_partitions=16).cache()
    cached = src.cache()
    cached.count()
    rng = random.Random(1)
    phases = ["build DataFrame", "analysis", "optimization", "planning", "execute + collect to Python"]
    times: dict[str, list[float]] = {
        k: [] for k in [*phases, "total", "same plan, JVM executeCollect", "empty 1-task job", "df.cache() filter"]
    }
    for i in range(25):
        key = rng.randrange(keys)
        t = [time.perf_counter()]
        df = idf.get_rows(key)
        t.append(time.perf_counter())
        qe = df._jdf.queryExecution()
        for step in (qe.analyzed, qe.optimizedPlan, qe.executedPlan):
            step()
            t.append(time.perf_counter())
        rows = df.collect()
        t.append(time.perf_counter())
        if any(r.src != key for r in rows) or len(rows) != 4:
            raise AssertionError(f"lookup {key}: {rows}")
        plan = idf.get_rows(key)._jdf.queryExecution().executedPlan()
        s = time.perf_counter()
        plan.executeCollect()
        jvm_only = time.perf_counter() - s
        s = time.perf_counter()
        spark.sparkContext._jsc.sc().range(0, 1, 1, 1).count()
        empty = time.perf_counter() - s
        s = time.perf_counter()
        cached.filter(f"src = {key}").collect()
        scan = time.perf_counter() - s
        if i < 5:
            continue
        for name, a, b in zip(phases, t, t[1:], strict=False):
            times[name].append(b - a)
        times["total"].append(t[-1] - t[0])
        times["same plan, JVM executeCollect"].append(jvm_only)
        times["empty 1-task job"].append(empty)
        times["df.cache() filter"].append(scan)
    print(f"{n:,} rows, {keys:,} keys, 16 partitions; load average {open('/proc/loadavg').read().split()[:3]}")
    for name, values in times.items():
        print(f"  {name:32s} {statistics.median(values) * 1000:7.1f} ms")
    print(idf.get_rows(0)._jdf.queryExecution().executedPlan().toString())
    spark.stop()


if __name__ == "__main__":
    main()
