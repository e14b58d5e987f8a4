"""Where a split index ``SELECT *`` point lookup's time goes: ``python -m benchmarks.split_point_profile``.

On the TPC-H SF1 lake of ``--data-dir`` (lineitem, 64 files), with a split index on
``l_orderkey``: per round, in rotated order and each with a new key: the query without the index, with it
(read in the driver), with it read by a Spark job (``split.driverRead.maxBytes=0``), planning and
execution timed separately with Spark's own planning phases, and an empty one-task job (the
floor any job pays).
Medians of the timed rounds after warm-ups; the load average is printed with them.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from benchmarks.context import local_session
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    SplitIndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)

DRIVER_READ = "spark.hyperspace.index.split.driverRead.maxBytes"


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/bench-data")
    rounds = int(os.environ.get("ROUNDS", "15"))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    work = data_dir / "work-h-19-profile"
    lineitem_path = str(data_dir / "tpch-sf1-64files" / "lake" / "lineitem")
    conf = HyperspaceConfig(spark)
    conf.system_path = str(work / "indexes")
    conf.num_buckets = 16
    hs = Hyperspace(spark)
    spark.read.parquet(lineitem_path).createOrReplaceTempView("lineitem")
    if not (work / "indexes" / "split_orderkey").exists():
        shutil.rmtree(work, ignore_errors=True)
        hs.create_index(spark.read.parquet(lineitem_path), SplitIndexConfig("split_orderkey", ["l_orderkey"]))
    max_order = spark.sql("SELECT max(l_orderkey) FROM lineitem").first()[0]
    rnd = random.Random(7)
    times: dict[str, list[float]] = {}

    def timed(name: str, sql: str, hyperspace: bool, driver_read: bool = True) -> None:
        (enable_hyperspace if hyperspace else disable_hyperspace)(spark)
        spark.conf.set(DRIVER_READ, "32m" if driver_read else "0")
        t0 = time.perf_counter()
        df = spark.sql(sql)
        plan = df._jdf.queryExecution().executedPlan()
        t1 = time.perf_counter()
        plan.executeCollect()
        t2 = time.perf_counter()
        times.setdefault(name + " plan", []).append(t1 - t0)
        times.setdefault(name + " exec", []).append(t2 - t1)
        times.setdefault(name + " total", []).append(t2 - t0)
        phases = df._jdf.queryExecution().tracker().phases()
        for phase in ("analysis", "optimization", "planning"):
            if phases.contains(phase):
                d = phases.apply(phase).durationMs()
                times.setdefault(f"{name} {phase}", []).append(d / 1000)

    def empty_job() -> None:
        t0 = time.perf_counter()
        spark.range(0, 1, 1, 1).selectExpr("id + 1").collect()
        times.setdefault("empty job", []).append(time.perf_counter() - t0)

    def point() -> str:
        # A new key for every query: no lookup is served from the planner's cache.
        return f"SELECT * FROM lineitem WHERE l_orderkey = {32 * rnd.randrange(max_order // 32) + 1 + rnd.randrange(8)}"

    for i in range(rounds + 3):
        steps = [
            lambda: timed("spark", point(), False),
            lambda: timed("index", point(), True),
            lambda: timed("index (job)", point(), True, False),
            empty_job,
        ]
        for s in steps[i % 4 :] + steps[: i % 4]:
            s()
        if i == 2:
            times.clear()
    print(f"load {os.getloadavg()}")
    for name, ts in times.items():
        print(f"{name:24s} {statistics.median(ts) * 1000:7.1f} ms (min {min(ts) * 1000:.1f})")
    enable_hyperspace(spark)
    spark.sql("SELECT * FROM lineitem WHERE l_orderkey = 7").explain()
    # How the driver-side read read its row groups (by their located pages, or whole).
    df = spark.sql("SELECT * FROM lineitem WHERE l_orderkey = 7")
    df.collect()
    root = df._jdf.queryExecution().executedPlan()
    if root.nodeName() == "DriverIndexRead":
        for m in ("numFiles", "rowsRead", "rowGroupsByPages", "rowGroupsWhole", "numOutputRows"):
            print(f"  {m}: {root.metrics().apply(m).value()}")
    spark.stop()


if __name__ == "__main__":
    main()
