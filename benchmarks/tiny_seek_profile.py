"""Where a tiny seek's time goes: ``python -m benchmarks.tiny_seek_profile [DATA_DIR]``.

On the TPC-H SF1 lake of DATA_DIR (lineitem, 64 files) with the tpch suite's indexes that serve
the tiny seeks (li_orderkey, li_all_orderkey, the Z-order li_zorder_shipdate_discount): each of
star_lookup, point_lookup, date_range, q6_zorder and TPC-H Q6 (a job over 15-19 Z-order files), with
and without Hyperspace, rotated, a new key, week or year every round (no result cache helps). Per query: ``spark.sql`` (parse + analysis),
optimization (Hyperspace's rules run here), physical planning (the driver-read rule), the
collect (the read in the driver) and the conversion of the rows to Python, timed apart with
Spark's own planning tracker; the rule timings of Spark's RuleExecutor metering name what each
Hyperspace rule costs. With ``JFR=1`` a Java Flight Recording of the Hyperspace rounds is written
under the work directory (``jfr print --events jdk.ExecutionSample`` reads it).

Medians of the timed rounds after warm-ups, with the load average.
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
from benchmarks.suites.tpch import zorder_target_file_size
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    IndexConfig,
    ZOrderCoveringIndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)

INDEXES = [
    IndexConfig(
        "li_orderkey", ["l_orderkey"], ["l_linenumber", "l_quantity", "l_extendedprice", "l_discount", "l_shipdate"]
    ),
    IndexConfig("li_all_orderkey", ["l_orderkey"], LINEITEM_COLUMNS[1:]),
    ZOrderCoveringIndexConfig(
        "li_zorder_shipdate_discount", ["l_shipdate", "l_discount"], ["l_extendedprice", "l_quantity"]
    ),
]


def queries(rnd: random.Random, keys: list[int]) -> dict[str, str]:
    key = rnd.choice(keys)
    day = rnd.randrange(28)
    year = 1993 + rnd.randrange(5)
    week = f"l_shipdate >= DATE '1995-03-01' + INTERVAL {day} DAYS AND l_shipdate < DATE '1995-03-08' + INTERVAL {day} DAYS"
    return {
        "star_lookup": f"SELECT * FROM lineitem WHERE l_orderkey = {key}",
        "point_lookup": "SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate "
        f"FROM lineitem WHERE l_orderkey = {key}",
        "date_range": f"SELECT sum(l_extendedprice * l_discount) AS revenue, count(*) AS lines FROM lineitem WHERE {week}",
        "q6_zorder": f"SELECT sum(l_extendedprice * l_discount) AS revenue, count(*) AS lines FROM lineitem WHERE {week} "
        "AND l_discount BETWEEN 0.05 AND 0.07",
        # TPC-H Q6 itself, a year of 1993-1997: a range the Z-order index cuts to 15-19 files.
        "q6": "SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem "
        f"WHERE l_shipdate >= DATE '{year}-01-01' AND l_shipdate < DATE '{year + 1}-01-01' "
        "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    }


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/bench-data")
    rounds = int(os.environ.get("ROUNDS", "15"))
    name = os.environ.get("NAME", "h-18-tiny-seek-profile")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    work = data_dir / f"work-{name}"
    lineitem_path = str(data_dir / "tpch-sf1-64files" / "lake" / "lineitem")
    conf = HyperspaceConfig(spark)
    conf.system_path = str(work / "indexes")
    conf.num_buckets = 16
    hs = Hyperspace(spark)
    lineitem = spark.read.parquet(lineitem_path)
    lineitem.createOrReplaceTempView("lineitem")
    for config in INDEXES:
        if not (work / "indexes" / config.name).exists():
            t0 = time.perf_counter()
            if isinstance(config, ZOrderCoveringIndexConfig):
                with conf.override(zorder_target_file_size=zorder_target_file_size(1.0)):
                    hs.create_index(lineitem, config)
            else:
                hs.create_index(lineitem, config)
            print(f"built {config.name} in {time.perf_counter() - t0:.1f} s", flush=True)
    # Keys that exist, spread over the key range: every lookup finds its lines.
    keys = [r[0] for r in spark.sql("SELECT DISTINCT l_orderkey FROM lineitem WHERE l_orderkey % 9973 = 1").collect()]
    rnd = random.Random(7)
    times: dict[str, list[float]] = {}

    def add(key: str, seconds: float) -> None:
        times.setdefault(key, []).append(seconds)

    # AB="key=value,...": a third variant, Hyperspace with these session settings (an A/B of a
    # reader setting in the same rounds).
    ab = dict(kv.split("=", 1) for kv in os.environ.get("AB", "").split(",") if kv)

    def timed(query: str, sql: str, hyperspace: bool, variant: str = "") -> None:
        (enable_hyperspace if hyperspace else disable_hyperspace)(spark)
        label = f"{query} {variant or ('hs' if hyperspace else 'spark')}"
        for k, v in ab.items() if variant == "hsB" else ():
            spark.conf.set(k, v)
        try:
            timed_in(label, query, sql)
        finally:
            for k in ab if variant == "hsB" else ():
                spark.conf.unset(k)

    def timed_in(label: str, query: str, sql: str) -> None:
        t0 = time.perf_counter()
        df = spark.sql(sql)
        t1 = time.perf_counter()
        qe = df._jdf.queryExecution()
        qe.optimizedPlan()
        t2 = time.perf_counter()
        plan = qe.executedPlan()
        t3 = time.perf_counter()
        # What DataFrame.collect does past planning: the rows collected, then turned to Python.
        rows = df.collect()
        t4 = time.perf_counter()
        add(f"{label} sql (parse+analyze)", t1 - t0)
        add(f"{label} optimize", t2 - t1)
        add(f"{label} physical", t3 - t2)
        add(f"{label} collect+convert", t4 - t3)
        add(f"{label} total", t4 - t0)
        # The same plan's collect alone, in the JVM: the read (driver or job) without Python.
        t5 = time.perf_counter()
        plan.executeCollect()
        add(f"{label} executeCollect (again)", time.perf_counter() - t5)
        if not rows and query in ("star_lookup", "point_lookup"):
            raise AssertionError(f"{sql} found nothing: the key generator is wrong")

    def one_round() -> None:
        current = queries(rnd, keys)
        variants = [(True, ""), (False, "")] + ([(True, "hsB")] if ab else [])
        steps = [(q, sql, hs_on, v) for q, sql in current.items() for hs_on, v in variants]
        rnd.shuffle(steps)
        for q, sql, hs_on, v in steps:
            timed(q, sql, hs_on, v)

    for _ in range(3):
        one_round()
    times.clear()
    metering = jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    metering.resetMetrics()
    for _ in range(rounds):
        one_round()
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} after {rounds} rounds")
    for key in sorted(times):
        ts = times[key]
        print(f"{key:48s} {statistics.median(ts) * 1000:7.1f} ms (min {min(ts) * 1000:.1f})")
    # Rule timings over every timed query (both variants): the Hyperspace rules' share.
    dump = metering.dumpTimeSpent()
    print(dump[:6000])
    if os.environ.get("JFR"):
        # A recording of Hyperspace-only rounds, for a sampled profile of the driver's work.
        recording = work / "seek.jfr"
        pid = jvm.java.lang.ProcessHandle.current().pid()
        os.system(f"jcmd {pid} JFR.start name=seek settings=profile filename={recording} > /dev/null")
        enable_hyperspace(spark)
        for _ in range(int(os.environ.get("JFR_ROUNDS", "60"))):
            for q, sql in queries(rnd, keys).items():
                if q == os.environ.get("JFR", q) or os.environ.get("JFR") == "1":
                    spark.sql(sql).collect()
        os.system(f"jcmd {pid} JFR.stop name=seek > /dev/null")
        print(f"JFR recording: {recording}")
    spark.stop()


if __name__ == "__main__":
    main()
