"""Z-order index page sizes, A/B: ``python -m benchmarks.zorder_pages_ab [DATA_DIR]``.

On the TPC-H SF1 lake of DATA_DIR (lineitem, 64 files), the tpch suite's Z-order index over
(l_shipdate, l_discount) built once per page size (``spark.hyperspace.index.zorder.pageRows``;
``PAGES=20000,2000,1000,500``), each under its own system path. ``date_range``, ``q6_zorder`` and
``q6`` then run with Hyperspace against each variant, shuffled every round, after 3 warm-up
rounds; medians and minima with the load average, the index sizes, and the rows each read
(the driver-side read's ``rowsRead``, or the index scan's output rows when the query runs as a
job), which do not depend on the machine's load.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.context import local_session
from benchmarks.plans import find_node, named
from benchmarks.suites.tpch import zorder_target_file_size
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    ZOrderCoveringIndexConfig,
    configure_spark_with_hyperspace,
    enable_hyperspace,
)

QUERY_DIR = Path(__file__).resolve().parent / "queries"
INDEX = ZOrderCoveringIndexConfig(
    "li_zorder_shipdate_discount", ["l_shipdate", "l_discount"], ["l_extendedprice", "l_quantity"]
)


def _rows_read(df: Any) -> int:
    root = df._jdf.queryExecution().executedPlan().executedPlan()
    driver = find_node(root, named("DriverIndexRead"))
    if driver is not None:
        return int(driver.metrics().get("rowsRead").get().value())
    scan = find_node(root, named("Scan"))
    if scan is None:
        return -1
    return int(scan.metrics().get("numOutputRows").get().value())


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/bench-data")
    pages = os.environ.get("PAGES", "20000,2000,1000,500").split(",")
    rounds = int(os.environ.get("ROUNDS", "10"))
    queries = os.environ.get("QUERIES", "date_range,q6_zorder,q6").split(",")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conf = HyperspaceConfig(spark)
    hs = Hyperspace(spark)
    lineitem = spark.read.parquet(str(data_dir / "tpch-sf1-64files" / "lake" / "lineitem"))
    lineitem.createOrReplaceTempView("lineitem")
    work = data_dir / "work-h-18-zorder-pages-ab"
    paths = {p: str(work / f"p{p}") for p in pages}
    for p, path in paths.items():
        conf.system_path = path
        index_dir = Path(path) / INDEX.name
        if not index_dir.exists():
            start = time.perf_counter()
            with conf.override(zorder_target_file_size=zorder_target_file_size(1.0), zorder_page_rows=int(p)):
                hs.create_index(lineitem, INDEX)
            print(f"pages of {p} rows: built in {time.perf_counter() - start:.1f} s", flush=True)
        files = list(index_dir.rglob("*.parquet"))
        print(f"pages of {p} rows: {len(files)} files, {sum(f.stat().st_size for f in files):,} bytes")
    sql = {q: (QUERY_DIR / f"{q}.sql").read_text() for q in queries}
    enable_hyperspace(spark)
    times: dict[tuple[str, str], list[float]] = {}
    rnd = random.Random(3)
    for r in range(rounds + 3):
        steps = [(q, p) for q in queries for p in pages]
        rnd.shuffle(steps)
        for q, p in steps:
            conf.system_path = paths[p]
            start = time.perf_counter()
            spark.sql(sql[q]).collect()
            if r >= 3:
                times.setdefault((q, p), []).append(time.perf_counter() - start)
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} after {rounds} rounds")
    for q in queries:
        for p in pages:
            conf.system_path = paths[p]
            df = spark.sql(sql[q])
            df.collect()
            ts = times[(q, p)]
            print(
                f"{q:12s} pages of {p:>6s} rows: {statistics.median(ts) * 1000:7.1f} ms "
                f"(min {min(ts) * 1000:.1f}), rows read {_rows_read(df):,}"
            )
    spark.stop()


if __name__ == "__main__":
    main()
