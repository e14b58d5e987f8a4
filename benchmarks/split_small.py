"""Small split index measurement: index size vs source, SELECT * point lookup, IN-100 and a join with a small
filtered side (join pruning), interleaved medians."""

import os
import random
import shutil
import statistics
import time

from pyspark.sql import SparkSession

from hyperspace import Hyperspace, HyperspaceConfig, SplitIndexConfig, disable_hyperspace, enable_hyperspace
from hyperspace.session import configure_spark_with_hyperspace

# Another root lets runs on one machine not delete each other's data.
root = os.environ.get("SPLIT_BENCH_ROOT", "/tmp/split-small-bench")
shutil.rmtree(root, ignore_errors=True)
spark = configure_spark_with_hyperspace(
    SparkSession.builder.master("local[2]").config("spark.driver.memory", "2g").config("spark.ui.enabled", "false")
).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
ROWS = 2_000_000
src = root + "/src"
# lineitem-like: random key order, 12 wide columns.
(
    spark.range(0, ROWS, 1, 8)
    .selectExpr(
        "CAST(pmod(hash(id), 500000) AS BIGINT) AS orderkey",
        "id AS linenumber",
        "CAST(pmod(hash(id, 1), 200000) AS BIGINT) AS partkey",
        "CAST(pmod(hash(id, 2), 10000) AS BIGINT) AS suppkey",
        "CAST(pmod(hash(id, 3), 50) AS DOUBLE) AS quantity",
        "CAST(pmod(hash(id, 4), 100000) AS DOUBLE) / 100 AS price",
        "CAST(pmod(hash(id, 5), 10) AS DOUBLE) / 100 AS discount",
        "DATE_ADD(DATE'1992-01-01', CAST(pmod(hash(id, 6), 2500) AS INT)) AS shipdate",
        "CONCAT('MODE', pmod(hash(id, 7), 7)) AS shipmode",
        "CONCAT('instr', pmod(hash(id, 8), 4)) AS instruct",
        "SHA1(CAST(id AS STRING)) AS comment",
        "CONCAT('c', CAST(pmod(hash(id, 9), 1000000) AS STRING), 'xxxxxxxxxxxxxxxx') AS comment2",
    )
    .write.option("parquet.block.size", str(1 << 20))
    .parquet(src)
)


def size(p):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs if f.endswith(".parquet"))


with HyperspaceConfig(spark).override(system_path=root + "/idx"):
    hs = Hyperspace(spark)
    hs.create_index(spark.read.parquet(src), SplitIndexConfig("sk", ["orderkey"]))
    print(
        f"source {size(src) / 1e6:.1f} MB, index {size(root + '/idx') / 1e6:.1f} MB, ratio {size(root + '/idx') / size(src) * 100:.1f}%"
    )
    rnd = random.Random(19)

    def point():
        return spark.read.parquet(src).where(f"orderkey = {rnd.randrange(500000)}")

    def inlist():
        return spark.read.parquet(src).where(
            f"orderkey IN ({', '.join(str(rnd.randrange(500000)) for _ in range(100))})"
        )

    # The small side of a join: one row per order key, filtered on its name (not the key, whose
    # filter Spark would infer onto the big side, where the filter seek serves it).
    dim = root + "/dim"
    spark.range(0, 500000, 1, 1).selectExpr("id AS okey", "CONCAT('o', id) AS oname").write.parquet(dim)
    print(f"join small side {size(dim) / 1e6:.1f} MB")

    def join_of(n):
        def join():
            names = ", ".join(f"'o{rnd.randrange(500000)}'" for _ in range(n))
            big, small = spark.read.parquet(src), spark.read.parquet(dim).where(f"oname IN ({names})")
            return big.join(small, big.orderkey == small.okey)

        return join

    enable_hyperspace(spark)
    print("in100 whyNot:", hs.why_not(inlist(), "sk", display=False).strip().replace("\n", " | "))
    disable_hyperspace(spark)

    # SPLIT_BENCH_QUERIES picks cases (e.g. "join1,join2,join10,join100,join1000"); joinN joins with a
    # small side filtered to N keys. Join pruning is on for the "with" runs unless SPLIT_BENCH_PRUNING=default.
    if os.environ.get("SPLIT_BENCH_PRUNING", "on") == "on":
        spark.conf.set("spark.hyperspace.index.split.joinPruning.enabled", "true")
    cases = {"point": point, "in100": inlist} | {f"join{n}": join_of(n) for n in (1, 2, 10, 100, 1000)}
    chosen = os.environ.get("SPLIT_BENCH_QUERIES", "point,in100,join2,join10").split(",")
    runs = int(os.environ.get("SPLIT_BENCH_RUNS", "7"))
    for name in chosen:
        q = cases[name]
        times = {True: [], False: []}
        plans = {True: [], False: []}
        for i in range(runs):
            for on in [True, False] if i % 2 == 0 else [False, True]:
                (enable_hyperspace if on else disable_hyperspace)(spark)
                df = q()
                t = time.perf_counter()
                df._jdf.queryExecution().executedPlan()  # planning (with join pruning's key collection)
                planned = time.perf_counter()
                df.collect()
                times[on].append(time.perf_counter() - t)
                plans[on].append(planned - t)
        if name.startswith("join"):
            enable_hyperspace(spark)
            why = hs.why_not(q(), "sk", display=False).strip().replace("\n", " | ")
            print(f"{name} whyNot: {why[:400]}")
        disable_hyperspace(spark)
        m_on, m_off = statistics.median(times[True][1:]), statistics.median(times[False][1:])
        p_on, p_off = statistics.median(plans[True][1:]), statistics.median(plans[False][1:])
        print(
            f"{name}: with split index {m_on * 1000:.0f} ms (planning {p_on * 1000:.0f}), without {m_off * 1000:.0f} ms "
            f"(planning {p_off * 1000:.0f}), speedup {m_off / m_on:.2f}x, loadavg {open('/proc/loadavg').read().strip()}"
        )
