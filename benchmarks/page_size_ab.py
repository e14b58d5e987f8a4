"""A/B of the covering index's Parquet page size for tiny seeks: ``python -m benchmarks.page_size_ab``.

Builds li_all_orderkey and li_orderkey (the tpch suite's lookup indexes) twice over the TPC-H SF1
lineitem of DATA_DIR, once with Parquet's default page row limit (20,000 rows) and once with
``PAGE_ROWS`` rows a page, and times the `SELECT *` and narrow point lookups against each,
alternating, a new existing key every round. A lookup decodes the pages holding its key in every
column: the page row limit bounds the rows it decodes. Prints the build times, sizes, and medians
with the load average.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

from benchmarks.context import local_session
from benchmarks.suites.seek import LINEITEM_COLUMNS
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, configure_spark_with_hyperspace, enable_hyperspace

PAGE_ROWS_KEY = "parquet.page.row.count.limit"


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/bench-data")
    page_rows = os.environ.get("PAGE_ROWS", "2000")
    rounds = int(os.environ.get("ROUNDS", "20"))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conf = HyperspaceConfig(spark)
    conf.num_buckets = 16
    hs = Hyperspace(spark)
    lineitem = spark.read.parquet(str(data_dir / "tpch-sf1-64files" / "lake" / "lineitem"))
    lineitem.createOrReplaceTempView("lineitem")
    configs = [
        IndexConfig("li_all_orderkey", ["l_orderkey"], LINEITEM_COLUMNS[1:]),
        IndexConfig(
            "li_orderkey", ["l_orderkey"], ["l_linenumber", "l_quantity", "l_extendedprice", "l_discount", "l_shipdate"]
        ),
    ]
    roots = {
        "default": data_dir / "work-h-18-pages-default",
        f"{page_rows} rows": data_dir / f"work-h-18-pages-{page_rows}",
    }
    for variant, root in roots.items():
        conf.system_path = str(root / "indexes")
        for config in configs:
            if (root / "indexes" / config.name).exists():
                continue
            if variant != "default":
                spark.conf.set(PAGE_ROWS_KEY, page_rows)
            t0 = time.perf_counter()
            try:
                hs.create_index(lineitem, config)
            finally:
                spark.conf.unset(PAGE_ROWS_KEY)
            size = hs.index(config.name).first()["sizeInBytes"]
            print(f"{variant}: built {config.name} in {time.perf_counter() - t0:.1f} s, {size:,} bytes", flush=True)
    keys = [r[0] for r in spark.sql("SELECT DISTINCT l_orderkey FROM lineitem WHERE l_orderkey % 9973 = 1").collect()]
    rnd = random.Random(11)
    enable_hyperspace(spark)
    times: dict[str, list[float]] = {}
    for i in range(rounds + 3):
        key = rnd.choice(keys)
        steps = [
            (variant, name, sql)
            for variant in roots
            for name, sql in (
                ("star_lookup", f"SELECT * FROM lineitem WHERE l_orderkey = {key}"),
                (
                    "point_lookup",
                    f"SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate "
                    f"FROM lineitem WHERE l_orderkey = {key}",
                ),
            )
        ]
        rnd.shuffle(steps)
        results = {}
        for variant, name, sql in steps:
            conf.system_path = str(roots[variant] / "indexes")
            t0 = time.perf_counter()
            rows = spark.sql(sql).collect()
            if i >= 3:
                times.setdefault(f"{name} {variant}", []).append(time.perf_counter() - t0)
            results.setdefault(name, []).append(sorted(map(tuple, rows)))
        for name, got in results.items():
            assert got[0] == got[1] and got[0], (name, key)
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} after {rounds} rounds")
    for k in sorted(times):
        print(f"{k:32s} {statistics.median(times[k]) * 1000:7.1f} ms (min {min(times[k]) * 1000:.1f})")
    spark.stop()


if __name__ == "__main__":
    main()
