"""Latency of the three lookups read in the driver: ``python -m benchmarks.driver_lookup_ab``.

``python -m benchmarks.driver_lookup_ab SPLIT_SYSTEM_PATH TPCH_SYSTEM_PATH [SEED]`` over the
TPC-H SF1 lake of ``/work/bench-data`` (``HYPERSPACE_BENCH_LAKE`` to change it), with the indexes
an earlier run of the split and tpch suites left (``work-<name>/split-indexes`` and
``work-<name>/indexes``):

- ``split``: ``SELECT *`` of one order's lines through the split index on ``l_orderkey``;
- ``star``: the same through the fully covering ``li_all_orderkey``;
- ``point``: five columns through ``li_orderkey``.

Each query has a new existing key; ``ROUNDS`` (40) timed rounds after 10 warm-ups. Printed per
query: medians of planning (``spark.sql`` to the executed plan), collection and the whole, the
whole's minimum, and the load average. Run it with one build's ``python`` directory first on
``PYTHONPATH``, then another's, alternating, to compare builds on the same index files.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time

from benchmarks.context import local_session
from hyperspace import HyperspaceConfig, configure_spark_with_hyperspace, enable_hyperspace

QUERIES = {
    "split": (0, "SELECT * FROM lineitem WHERE l_orderkey = {}"),
    "star": (1, "SELECT * FROM lineitem WHERE l_orderkey = {}"),
    "point": (
        1,
        "SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate FROM lineitem WHERE l_orderkey = {}",
    ),
}


def main(split_path: str, tpch_path: str, seed: int) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lake = os.environ.get("HYPERSPACE_BENCH_LAKE", "/work/bench-data/tpch-sf1-64files/lake")
    spark.read.parquet(f"{lake}/lineitem").createOrReplaceTempView("lineitem")
    conf = HyperspaceConfig(spark)
    enable_hyperspace(spark)
    rnd = random.Random(seed)
    keys = [r[0] for r in spark.sql("SELECT DISTINCT l_orderkey FROM lineitem WHERE l_orderkey % 9973 = 1").collect()]
    paths = (split_path, tpch_path)
    times: dict[str, list[tuple[float, float]]] = {}
    for r in range(int(os.environ.get("ROUNDS", "40")) + 10):
        for name, (which, sql) in QUERIES.items():
            conf.system_path = paths[which]
            t0 = time.perf_counter()
            df = spark.sql(sql.format(rnd.choice(keys)))
            df._jdf.queryExecution().executedPlan()
            t1 = time.perf_counter()
            rows = df.collect()
            t2 = time.perf_counter()
            if not rows:
                raise SystemExit(f"{name}: no rows for an existing key")
            if r >= 10:
                times.setdefault(name, []).append((t1 - t0, t2 - t1))
    for name, ts in times.items():
        plan = statistics.median(t[0] for t in ts) * 1000
        collect = statistics.median(t[1] for t in ts) * 1000
        total = [(t[0] + t[1]) * 1000 for t in ts]
        print(
            f"{name:6s} planning {plan:6.1f}  collect {collect:6.1f}  "
            f"total {statistics.median(total):6.1f} ms (min {min(total):.1f})"
        )
    print("load", os.getloadavg())
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5)
