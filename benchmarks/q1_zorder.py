"""TPC-H Q1 against the advisor's Z-order covering index on l_shipdate, SF 1.

``python -m benchmarks.q1_zorder [--runs 5] [--data-dir D] [--name N] [--keep]``: builds only the
advisor's ``lineitem_zorder_l_shipdate`` (indexed l_shipdate; the columns Q1 reads included) over
the 64-file SF1 lineitem lake, then runs Q1 (a range keeping ~98% of rows) and a one-week range
as a control, with Hyperspace off and on, interleaved; prints medians, the plan facts (files and
bytes read, indexes used), the index's file count and size, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from benchmarks.context import local_session
from benchmarks.harness import Variant, run_queries
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    ZOrderCoveringIndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)

HERE = Path(__file__).resolve().parent
Q1 = (HERE / "queries" / "no_index.sql").read_text()
WEEK = """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice * (1 - l_discount)) AS rev,
       count(*) AS n
FROM lineitem WHERE l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-03-08'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""


def _loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", default="/work/bench-data")
    parser.add_argument("--name", default="q1-zorder")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    lake = Path(args.data_dir) / "tpch-sf1-64files" / "lake" / "lineitem"
    work = Path(args.data_dir) / f"work-{args.name}"
    shutil.rmtree(work, ignore_errors=True)
    builder = local_session("4g", 8, "hyperspace-bench-q1-zorder", work / "warehouse")
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        conf = HyperspaceConfig(spark)
        conf.system_path = str(work / "indexes")
        hs = Hyperspace(spark)
        li = spark.read.parquet(str(lake))
        li.createOrReplaceTempView("lineitem")
        hs.create_index(
            li,
            ZOrderCoveringIndexConfig(
                "lineitem_zorder_l_shipdate",
                ["l_shipdate"],
                ["l_orderkey", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus"],
            ),
        )
        files = [f for f in (work / "indexes").rglob("*.parquet")]
        index_stats = {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}
        source = list(lake.glob("*.parquet"))
        print(f"index: {index_stats}; source: {len(source)} files, {sum(f.stat().st_size for f in source):,} bytes")

        def using(on: bool) -> None:
            spark.read.parquet(str(lake)).createOrReplaceTempView("lineitem")
            (enable_hyperspace if on else disable_hyperspace)(spark)

        variants = [Variant("spark", lambda q: using(False)), Variant("hyperspace", lambda q: using(True))]
        load_before = _loadavg()
        measured = run_queries(spark, {"q1": Q1, "week": WEEK}, variants, args.runs)
        load_after = _loadavg()
        result = {
            "loadavgBefore": load_before,
            "loadavgAfter": load_after,
            "index": index_stats,
            "queries": {
                q: {v: {"median": m.median, "seconds": m.seconds, "facts": m.facts} for v, m in per.items()}
                for q, per in measured.items()
            },
        }
        print(json.dumps(result, indent=2))
    finally:
        disable_hyperspace(spark)
        spark.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
