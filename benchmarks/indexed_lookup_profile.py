"""Where an Indexed DataFrame point lookup's time goes: ``python -m benchmarks.indexed_lookup_profile``.

Times each phase of ``idf.get_rows(key).collect()`` separately (building the DataFrame, analysis,
optimization, physical planning, execution and collection to Python), the same plan executed in
the JVM only (no Python conversion), an empty one-task Spark job (the floor any job pays) and a
filter over ``df.cache()`` for comparison; then the eager ``idf.lookup([key])``, with the
partition read in place (the driver's block manager, local mode) and by a one-task job
(``spark.hyperspace.indexed.lookup.readInPlace=false``), split into the JVM lookup (one py4j
call returning a Java list), the same call returning the pickled rows, and unpickling them.
Every variant runs once per round, in the same order, for 20 timed rounds of random keys after 5
warm-ups (medians); the load average is printed with them. HYPERSPACE_BENCH_INDEXED_ROWS sets the
size.
"""

from __future__ import annotations

import os
import random
import statistics
import time

from pyspark.serializers import CPickleSerializer

from benchmarks.context import local_session
from benchmarks.suites.indexed import edge_table
from hyperspace import HyperspaceConfig, configure_spark_with_hyperspace
from hyperspace.indexed import create_index


def main() -> None:
    builder = local_session("4g", 16)
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    n = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 1_000_000))
    keys = max(1, n // 4)
    src = edge_table(spark, keys, n)
    idf = create_index(src, "src", num_partitions=16).cache()
    cached = src.cache()
    cached.count()
    rng = random.Random(1)
    phases = ["build DataFrame", "analysis", "optimization", "planning", "execute + collect to Python"]
    eager = [
        "py4j round trip (numPartitions())",
        "lookup([k]) in place: JVM only (lookupAsJava)",
        "lookup([k]) in place: JVM + pickling",
        "lookup([k]) in place: unpickling in Python",
        "lookup([k]) in place, total",
        "lookup([k]) by a 1-task job, total",
        "lookup([k]) by a 1-task job: JVM only",
        "get_rows(k).collect() by a 1-task job",
    ]
    times: dict[str, list[float]] = {
        k: []
        for k in [*phases, "total", "same plan, JVM executeCollect", "empty 1-task job", "df.cache() filter", *eager]
    }
    conf = HyperspaceConfig(spark)
    jidf = idf._jidf
    pickle = CPickleSerializer()
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
        e: dict[str, float] = {}
        s = time.perf_counter()
        jidf.numPartitions()
        e[eager[0]] = time.perf_counter() - s
        s = time.perf_counter()
        found = jidf.lookupAsJava([key])
        e[eager[1]] = time.perf_counter() - s
        if found.size() != 4:
            raise AssertionError(f"lookupAsJava {key}: {found.size()} rows")
        s = time.perf_counter()
        pickled = jidf.lookupForPython([key])
        e[eager[2]] = time.perf_counter() - s
        s = time.perf_counter()
        pickle.loads(bytes(pickled))
        e[eager[3]] = time.perf_counter() - s
        s = time.perf_counter()
        eager_rows = idf.lookup([key])
        e[eager[4]] = time.perf_counter() - s
        if len(eager_rows) != 4 or any(r.src != key for r in eager_rows):
            raise AssertionError(f"lookup {key}: {eager_rows}")
        with conf.override(indexed_lookup_read_in_place=False):
            s = time.perf_counter()
            by_job = idf.lookup([key])
            e[eager[5]] = time.perf_counter() - s
            s = time.perf_counter()
            jidf.lookupAsJava([key])
            e[eager[6]] = time.perf_counter() - s
            s = time.perf_counter()
            idf.get_rows(key).collect()
            e[eager[7]] = time.perf_counter() - s
        if sorted(by_job) != sorted(eager_rows):
            raise AssertionError(f"lookup {key}: in place {eager_rows}, by job {by_job}")
        if i < 5:
            continue
        for name, value in e.items():
            times[name].append(value)
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
