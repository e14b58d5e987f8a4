"""The driver-side partial aggregate, A/B: ``python -m benchmarks.driver_aggregate_ab [INDEX_DIR]``.

The tpch suite's ``date_range`` with Hyperspace (its indexes under INDEX_DIR, e.g. a suite run's
``work-<name>/indexes``): the rows its partial aggregate reads (the Project below it, 17,586 rows
of ``l_extendedprice, l_discount``) are collected once, then aggregated in the JVM by Spark's
sort-based aggregation iterator (what the driver-side read used) and by ``GlobalPartialAggregate``
(its buffer a row of objects), alternately; the two outputs must be the same bytes. Medians and
minima of 50 each after 10 warm-ups, with the load average.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks.context import local_session
from benchmarks.plans import find_node
from hyperspace import HyperspaceConfig, configure_spark_with_hyperspace, enable_hyperspace

QUERY = Path(__file__).resolve().parent / "queries" / "date_range.sql"


def main() -> None:
    index_dir = sys.argv[1] if len(sys.argv) > 1 else "/work/bench-data/work-tpch-sf1-quiet3/indexes"
    data_dir = os.environ.get("DATA_DIR", "/work/bench-data")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    HyperspaceConfig(spark).system_path = index_dir
    spark.read.parquet(f"{data_dir}/tpch-sf1-64files/lake/lineitem").createOrReplaceTempView("lineitem")
    enable_hyperspace(spark)
    jvm = spark.sparkContext._jvm
    df = spark.sql(QUERY.read_text())
    df.collect()
    root = df._jdf.queryExecution().executedPlan().executedPlan()
    partial = find_node(root, lambda n: n.nodeName() == "HashAggregate" and "partial_" in n.toString().split("\n")[0])
    project = find_node(root, lambda n: n.nodeName() == "Project")
    if partial is None or project is None:
        raise SystemExit(f"date_range's plan has no partial aggregate over a Project:\n{root.toString()}")
    rows = project.executeCollect()
    held = jvm.java.util.ArrayList()
    for i in range(len(rows)):
        held.add(rows[i])
    converters = jvm.scala.jdk.javaapi.CollectionConverters
    sort_based = jvm.io.hyperspace.shims.SortAggregation
    global_partial = getattr(getattr(jvm.io.hyperspace.execution, "GlobalPartialAggregate$"), "MODULE$")

    def spark_iterator() -> str:
        return str(sort_based.iterator(partial, converters.asScala(held.iterator())).next().toString())

    def object_buffer() -> str:
        return str(global_partial.apply(partial, converters.asScala(held.iterator())).toString())

    if spark_iterator() != object_buffer():
        raise SystemExit("the two partial aggregates differ")
    times: dict[str, list[float]] = {"Spark's sort-based iterator": [], "GlobalPartialAggregate": []}
    variants = list(zip(times, (spark_iterator, object_buffer), strict=True))
    for i in range(60):
        for name, run in variants if i % 2 else reversed(variants):
            start = time.perf_counter()
            run()
            if i >= 10:
                times[name].append(time.perf_counter() - start)
    load = os.getloadavg()
    print(f"{len(rows)} rows; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name, ts in times.items():
        print(f"{name:28s} median {statistics.median(ts) * 1000:.2f} ms (min {min(ts) * 1000:.2f})")
    spark.stop()


if __name__ == "__main__":
    main()
