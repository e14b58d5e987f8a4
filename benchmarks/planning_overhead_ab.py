"""What Hyperspace adds to planning queries it does not rewrite: ``python -m benchmarks.planning_overhead_ab``.

On the TPC-H SF1 lake of ``--data-dir``, with the split index on ``l_orderkey`` of
``split_point_profile`` (built there if missing): per round, Hyperspace on and off in rotated
order, each query with new literals, planning only (the executed plan, not run):

- ``join2``: the split suite's join of lineitem with two orders picked by price, join pruning
  off (Hyperspace finds the index but does not rewrite the plan);
- ``q11``: TPC-H Q11's join of partsupp, supplier and nation with a new nation, tables without
  indexes.

Medians and minima of the rounds after warm-ups; the load average is printed with them. Run it
with one build's ``python`` directory on the path, then another's, to compare builds.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable
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

PRUNING = "spark.hyperspace.index.split.joinPruning.enabled"
NATIONS = ["GERMANY", "FRANCE", "BRAZIL", "CHINA", "JAPAN", "KENYA", "PERU", "RUSSIA", "CANADA", "INDIA"]


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/bench-data")
    rounds = int(os.environ.get("ROUNDS", "30"))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("4g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lake = data_dir / "tpch-sf1-64files" / "lake"
    work = data_dir / "work-h-19-profile"
    conf = HyperspaceConfig(spark)
    conf.system_path = str(work / "indexes")
    conf.num_buckets = 16
    for table in ("lineitem", "orders", "partsupp", "supplier", "nation"):
        spark.read.parquet(str(lake / table)).createOrReplaceTempView(table)
    if not (work / "indexes" / "split_orderkey").exists():
        shutil.rmtree(work, ignore_errors=True)
        Hyperspace(spark).create_index(
            spark.read.parquet(str(lake / "lineitem")), SplitIndexConfig("split_orderkey", ["l_orderkey"])
        )
    spark.conf.set(PRUNING, "false")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(64 * 1024 * 1024))
    prices = [str(r[0]) for r in spark.sql("SELECT o_totalprice FROM orders ORDER BY rand(19) LIMIT 1000").collect()]
    rnd = random.Random(7)

    def join2() -> str:
        return (
            "SELECT l.*, o.o_orderdate, o.o_orderpriority FROM lineitem l JOIN orders o "
            f"ON l.l_orderkey = o.o_orderkey WHERE o.o_totalprice IN ({', '.join(rnd.sample(prices, 2))})"
        )

    def q11() -> str:
        nation = rnd.choice(NATIONS)
        fraction = f"0.000{rnd.randrange(1, 10)}"
        return f"""SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
            FROM partsupp, supplier, nation
            WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = '{nation}'
            GROUP BY ps_partkey HAVING sum(ps_supplycost * ps_availqty) > (
              SELECT sum(ps_supplycost * ps_availqty) * {fraction} FROM partsupp, supplier, nation
              WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = '{nation}')
            ORDER BY value DESC"""

    times: dict[str, list[float]] = {}

    def planned(query: str, sql: str, on: bool) -> None:
        (enable_hyperspace if on else disable_hyperspace)(spark)
        t0 = time.perf_counter()
        df = spark.sql(sql)
        df._jdf.queryExecution().executedPlan()
        times.setdefault(f"{query} {'on' if on else 'off'}", []).append(time.perf_counter() - t0)
        phases = df._jdf.queryExecution().tracker().phases()
        if phases.contains("optimization"):
            d = phases.apply("optimization").durationMs() / 1000
            times.setdefault(f"{query} {'on' if on else 'off'} optimization", []).append(d)

    warmups = 5
    for i in range(rounds + warmups):
        steps = [
            lambda: planned("join2", join2(), True),
            lambda: planned("join2", join2(), False),
            lambda: planned("q11", q11(), True),
            lambda: planned("q11", q11(), False),
        ]
        for s in steps[i % 4 :] + steps[: i % 4]:
            s()
        if i == warmups - 1:
            times.clear()
            print(f"load at start {os.getloadavg()}")
    print(f"load at end {os.getloadavg()}")
    for name, ts in sorted(times.items()):
        print(f"{name:28s} {statistics.median(ts) * 1000:7.1f} ms (min {min(ts) * 1000:.1f}, n {len(ts)})")
    enable_hyperspace(spark)
    for query, make in (("join2", join2), ("q11", q11)):
        rule_metering(spark, query, [make() for _ in range(10)])
    catalog_read_cost(spark)
    conf_copy_cost(spark)
    spark.stop()


def rule_metering(spark: object, query: str, sqls: list[str]) -> None:
    """Spark's own metering of its optimizer rules (RuleExecutor's counters, reset first) over
    planning ``sqls`` with Hyperspace on: how often each Hyperspace rule ran per query, and the
    time in it (medians of the per-query figures)."""
    executor = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor  # type: ignore[attr-defined]
    per: dict[str, list[tuple[float, float]]] = {}
    for sql in sqls:
        executor.resetMetrics()
        spark.sql(sql)._jdf.queryExecution().executedPlan()  # type: ignore[attr-defined]
        for line in str(executor.dumpTimeSpent()).splitlines():
            if "io.hyperspace" in line:
                parts = line.split()
                # "<rule> <effective ns> / <total ns> <effective runs> / <total runs>"
                per.setdefault(parts[0].rsplit(".", 1)[-1], []).append((float(parts[3]), float(parts[6])))
    for rule, xs in sorted(per.items()):
        runs = statistics.median(r for _, r in xs)
        ms = statistics.median(t for t, _ in xs) / 1e6
        print(f"{query} rule {rule:38s} {runs:5.0f} runs a query, {ms:6.2f} ms a query (median of {len(xs)})")


def catalog_read_cost(spark: object) -> None:
    """Per call through py4j: what a pass of the rule reads of the catalog — before, a new
    catalog's active list (Hadoop configuration copy, system path check, token); after, the
    resolved root's token alone where the build has it."""
    jvm, jspark = spark._jvm, spark._jsparkSession  # type: ignore[attr-defined]
    calls = {
        "py4j call alone": lambda: jspark.sessionState().conf(),
        "active(new IndexCatalog)": lambda: jvm.io.hyperspace.rules.CandidateIndexes.active(jspark),
    }
    try:
        root = jvm.io.hyperspace.index.CatalogRoot.of(jspark, jvm.scala.Option.empty())
        calls["CatalogRoot.version()"] = lambda: root.version()
    except Exception:  # noqa: BLE001 - a build without it
        pass
    _time_calls(calls)


def conf_copy_cost(spark: object) -> None:
    """Per call: Spark's copy of the session's Hadoop configuration (through py4j, whose own cost a
    trivial call shows)."""
    jspark = spark._jsparkSession  # type: ignore[attr-defined]
    _time_calls(
        {
            "py4j call alone": lambda: jspark.sessionState().conf(),
            "newHadoopConf()": lambda: jspark.sessionState().newHadoopConf(),
        }
    )


def _time_calls(calls: dict[str, Callable[[], object]]) -> None:
    """Prints each call's median (and minimum) time over 5 rounds of 200 calls, rounds interleaved."""
    per: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(5):
        for name, call in calls.items():
            t = time.perf_counter()
            for _ in range(200):
                call()
            per[name].append((time.perf_counter() - t) / 200)
    for name, ts in per.items():
        print(f"{name:28s} {statistics.median(ts) * 1000:7.3f} ms a call (min {min(ts) * 1000:.3f})")


if __name__ == "__main__":
    main()
