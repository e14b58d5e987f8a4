"""``python -m hyperspace.demo``: the end-to-end demo behind ``make demo``.

Generates a lake the size where an index matters — a lineitem-like fact table of a few million
rows and its orders dimension, Parquet files in random row order — starts local Spark with the
packaged jar exactly as a user would, builds three covering indexes and runs a point lookup, a
one-week range and a join of the two tables with Hyperspace on and off: interleaved runs,
medians, rows compared on every run. For each query it prints the speedup, the files and bytes
the executed plans read, the indexes the plan used (and, for an expected index the plan did not
use, why not) and the explain diff. When delta-spark is installed (``hyperspace-spark[delta]``), a
short Delta part follows: a Delta table indexed, a DELETE on it (deletion vectors), the index
refreshed from the table's log, and a lookup with the index and without.

The generated tables are kept under ``--data-dir`` keyed by the generator's version and
parameters, so a second run skips generation; the indexes are rebuilt every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import hyperspace
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    IndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
    is_hyperspace_enabled,
)
from hyperspace._jvm import plan_facts
from hyperspace.log import history

# Bump whenever generate() changes what it writes: the cache key includes it, so a lake written
# by an older generator is never reused.
GENERATOR_VERSION = 1

# (orders, lineitem files, buckets) per size; about 4 lines per order. "full" is what `make demo`
# runs (sized to stay under ~2 minutes on 2 cores); "small" is for tests/test_demo.py.
SIZES = {"full": (750_000, 32, 8), "small": (20_000, 4, 4)}

LOOKUP_KEY = 4242
WEEK = ("1995-03-01", "1995-03-08")


def _load() -> float:
    return os.getloadavg()[0]


def _r(n: int, *cols: Column | str, salt: int) -> Column:
    """A deterministic pseudo-random long in [0, n) of ``cols``, one stream per ``salt``: the lake
    must be the same every time its parameters are, so no ``rand()`` goes into values."""
    return F.pmod(F.xxhash64(*cols, F.lit(salt)), F.lit(n))


def _pick(values: tuple[str, ...], h: Column) -> Column:
    return F.element_at(F.array(*[F.lit(v) for v in values]), (h + 1).cast("int"))


def _days_after_order(key: Column, days: Column) -> Column:
    # TPC-H's order dates: 1992-01-01 plus up to 2405 days. Both tables derive it from the key,
    # so a line ships after its order.
    return F.date_add(F.lit("1992-01-01").cast("date"), (_r(2406, key, salt=0) + days).cast("int"))


def _write_lake(spark: SparkSession, root: Path, orders: int, files: int) -> None:
    keys = spark.range(orders).withColumnRenamed("id", "k")
    k, kl = ("k",), ("k", "l")
    ship = _r(121, *kl, salt=10) + 1
    lines = keys.select("k", F.explode(F.sequence(F.lit(1), (_r(7, *k, salt=1) + 1).cast("int"))).alias("l")).select(
        F.col("k").alias("l_orderkey"),
        (_r(200_000, *kl, salt=2) + 1).alias("l_partkey"),
        (_r(10_000, *kl, salt=3) + 1).alias("l_suppkey"),
        F.col("l").alias("l_linenumber"),
        (_r(50, *kl, salt=4) + 1).cast("decimal(12,2)").alias("l_quantity"),
        ((_r(50, *kl, salt=4) + 1) * (900 + _r(100_000, *kl, salt=5) / 100))
        .cast("decimal(12,2)")
        .alias("l_extendedprice"),
        (_r(11, *kl, salt=6) / 100).cast("decimal(12,2)").alias("l_discount"),
        (_r(9, *kl, salt=7) / 100).cast("decimal(12,2)").alias("l_tax"),
        _pick(("R", "A", "N"), _r(3, *kl, salt=8)).alias("l_returnflag"),
        _pick(("O", "F"), _r(2, *kl, salt=9)).alias("l_linestatus"),
        _days_after_order(F.col("k"), ship).alias("l_shipdate"),
        _days_after_order(F.col("k"), _r(61, *kl, salt=11) + 30).alias("l_commitdate"),
        _days_after_order(F.col("k"), ship + _r(30, *kl, salt=12) + 1).alias("l_receiptdate"),
        _pick(("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"), _r(4, *kl, salt=13)).alias(
            "l_shipinstruct"
        ),
        _pick(("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"), _r(7, *kl, salt=14)).alias("l_shipmode"),
        F.substring(F.sha2(F.concat_ws("-", *kl), 256), 1, (_r(34, *kl, salt=15) + 10).cast("int")).alias("l_comment"),
    )
    # Round-robin into the files, then shuffled inside each: every file spans every key and
    # date, so Parquet min/max statistics cannot skip anything without an index — a lake's
    # usual layout.
    lines.repartition(files).sortWithinPartitions(F.rand(seed=42)).write.parquet(str(root / "lineitem"))
    keys.select(
        F.col("k").alias("o_orderkey"),
        (_r(150_000, *k, salt=20) + 1).alias("o_custkey"),
        _pick(("O", "F", "P"), _r(3, *k, salt=21)).alias("o_orderstatus"),
        (_r(50_000_000, *k, salt=22) / 100 + 800).cast("decimal(12,2)").alias("o_totalprice"),
        _days_after_order(F.col("k"), F.lit(0)).alias("o_orderdate"),
        _pick(("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"), _r(5, *k, salt=23)).alias(
            "o_orderpriority"
        ),
        F.format_string("Clerk#%09d", (_r(1000, *k, salt=24) + 1).cast("int")).alias("o_clerk"),
        F.lit(0).alias("o_shippriority"),
        F.substring(F.sha2(F.col("k").cast("string"), 256), 1, (_r(60, *k, salt=25) + 19).cast("int")).alias(
            "o_comment"
        ),
    ).repartition(max(1, files // 4)).sortWithinPartitions(F.rand(seed=7)).write.parquet(str(root / "orders"))


@dataclass(frozen=True)
class Lake:
    lineitem: str
    orders: str
    generated_seconds: float | None  # None: reused from the cache
    generated_load: float
    root: Path


def lake_stamp(orders: int, files: int) -> str:
    """What identifies a generated lake: the generator's version and its parameters."""
    return json.dumps({"generator": GENERATOR_VERSION, "orders": orders, "files": files}, sort_keys=True)


def lake_root(data_dir: Path, stamp: str) -> Path:
    return data_dir / ("lake-" + hashlib.sha256(stamp.encode()).hexdigest()[:16])


def reusable(root: Path, stamp: str) -> bool:
    """Whether ``root`` holds a complete lake written for ``stamp``. The marker holds the stamp
    and is written last: a lake cut short by a crash, or one whose key collided, is generated
    again rather than trusted."""
    ready = root / "_READY"
    return ready.is_file() and ready.read_text() == stamp


def lake(spark: SparkSession, data_dir: Path, orders: int, files: int) -> Lake:
    """The lake for these parameters: reused when a complete one written by this generator
    version exists, generated otherwise. Lakes of other parameters or versions are removed."""
    stamp = lake_stamp(orders, files)
    root = lake_root(data_dir, stamp)
    for stale in data_dir.glob("lake-*"):
        if stale != root:
            shutil.rmtree(stale)
    seconds: float | None = None
    if not reusable(root, stamp):
        shutil.rmtree(root, ignore_errors=True)
        start = time.perf_counter()
        _write_lake(spark, root, orders, files)
        seconds = time.perf_counter() - start
        (root / "_READY").write_text(stamp)
    return Lake(str(root / "lineitem"), str(root / "orders"), seconds, _load(), root)


@dataclass
class Result:
    """One query measured with Hyperspace on and off."""

    name: str
    sql: str
    expected_indexes: list[str]
    runs: int
    on: list[float] = field(default_factory=list)
    off: list[float] = field(default_factory=list)
    facts_on: dict[str, Any] = field(default_factory=dict)
    facts_off: dict[str, Any] = field(default_factory=dict)
    rows: int = 0
    same: bool = True
    load: float = 0.0
    why_not: str = ""
    explain: str = ""

    @property
    def used_expected(self) -> bool:
        return set(self.expected_indexes) <= set(self.facts_on["indexes"])


def _sorted_rows(rows: list[Row]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in rows)


def measure(spark: SparkSession, result: Result) -> None:
    """A warm-up with each setting (its executed plan gives files, bytes and indexes), then
    ``result.runs`` rounds in which the two take turns, the order alternating so drift hits both. Every
    run's rows are compared with the first run without indexes."""
    expected: list[tuple[Any, ...]] | None = None
    for enabled in (False, True):
        (enable_hyperspace if enabled else disable_hyperspace)(spark)
        df = spark.sql(result.sql)
        rows = _sorted_rows(df.collect())
        if expected is None:
            expected, result.rows = rows, len(rows)
        result.same = result.same and rows == expected
        if enabled:
            result.facts_on = plan_facts(df)
        else:
            result.facts_off = plan_facts(df)
    for r in range(result.runs):
        for enabled in (True, False) if r % 2 == 0 else (False, True):
            (enable_hyperspace if enabled else disable_hyperspace)(spark)
            start = time.perf_counter()
            collected = spark.sql(result.sql).collect()
            (result.on if enabled else result.off).append(time.perf_counter() - start)
            result.same = result.same and _sorted_rows(collected) == expected
    result.load = _load()
    disable_hyperspace(spark)


def delta_part(spark: SparkSession, hs: Hyperspace, orders_path: str, root: Path) -> tuple[str, bool]:
    """A Delta table of the orders, indexed, changed by a DELETE, refreshed: one report line and
    whether the lookup returned the same rows with the index (used) and without."""
    table = str(root / "orders_delta")
    shutil.rmtree(table, ignore_errors=True)
    # A tenth of the orders in two files: the Delta part shows the log-driven refresh, not scan
    # speed, and must stay short.
    (
        spark.read.parquet(orders_path)
        .where(F.col("o_orderkey") % 10 == 0)
        .coalesce(2)
        .write.format("delta")
        .option("delta.enableDeletionVectors", "true")
        .save(table)
    )
    hs.create_index(
        spark.read.format("delta").load(table),
        IndexConfig("orders_delta_by_key", ["o_orderkey"], ["o_totalprice", "o_orderstatus"], lineage=True),
    )
    spark.sql(f"DELETE FROM delta.`{table}` WHERE o_orderstatus = 'F' AND o_custkey < 40000")
    refreshed = hs.refresh_index("orders_delta_by_key", "incremental")

    def lookup() -> DataFrame:
        return (
            spark.read.format("delta")
            .load(table)
            .where(F.col("o_orderkey").isin(10, LOOKUP_KEY * 10, 19990))
            .select("o_orderkey", "o_totalprice", "o_orderstatus")
        )

    disable_hyperspace(spark)
    without = _sorted_rows(lookup().collect())
    enable_hyperspace(spark)
    df = lookup()
    with_index = _sorted_rows(df.collect())
    used = "orders_delta_by_key" in plan_facts(df)["indexes"]
    disable_hyperspace(spark)
    same = with_index == without and used
    where = refreshed.message.split("Source files ", 1)[-1].rstrip(".")
    return (
        f"delta                  orders_delta: DELETE (deletion vectors), refresh incremental: "
        f"{refreshed.appended_files} appended / {refreshed.deleted_files} deleted file(s), {where}; "
        f"lookup through the index: same result {same}"
    ), same


def _brief_diff(explain: str) -> list[str]:
    """The lines ``explain`` marks as differing, each tagged with its plan; a scan shortened to
    what tells the two apart (what it reads, from where, which buckets) instead of its columns
    and filters, which both plans share."""
    out, side = [], ""
    for ln in explain.splitlines():
        if "Plan with indexes:" in ln:
            side = "with index"
        elif "Plan without indexes:" in ln:
            side = "without"
        elif "Indexes used:" in ln:
            break
        elif "<----" in ln:
            text = ln.replace("<----", "").replace("---->", "").strip().lstrip(":+- ")
            if text.startswith("FileScan"):
                where = re.search(r"Location: (\w+\(\d+ paths?\)\[[^\]]*\])", text)
                buckets = re.search(r"SelectedBucketsCount: [^,]+", text)
                text = " ".join(
                    [text.split(" [", 1)[0]]
                    + ([where.group(1)] if where else [])
                    + ([buckets.group(0)] if buckets else [])
                )
            out.append(f"{side + ':':<12}{text}")
    return out


def _query_report(r: Result, full_explain: bool) -> list[str]:
    on, off = statistics.median(r.on), statistics.median(r.off)
    out = [
        f"{r.name:<22} {' '.join(r.sql.split())}",
        f"  time                 no index {off:.3f}s, Hyperspace {on:.3f}s: speedup {off / on:.1f}×"
        f" (medians of {r.runs} interleaved runs; load {r.load:.2f})",
        f"  files read           {r.facts_off['filesRead']:,} → {r.facts_on['filesRead']:,}",
        f"  bytes read           {r.facts_off['bytesRead']:,} → {r.facts_on['bytesRead']:,}",
        f"  Exchanges            {r.facts_off['exchanges']} → {r.facts_on['exchanges']}",
        f"  rows equal           {r.same} ({r.rows:,} row(s), compared on every run)",
        f"  Indexes used         {', '.join(r.facts_on['indexes']) or 'none'}",
    ]
    if r.why_not:
        out.append("  why not:")
        out += ["    " + ln for ln in r.why_not.strip().splitlines()]
    if full_explain:
        out.append("  explain (full; lines that differ are marked <---- ---->):")
        out += ["    " + ln for ln in r.explain.rstrip().splitlines()]
    else:
        out.append("  explain diff (the operators that differ, scans shortened):")
        out += ["    " + ln for ln in _brief_diff(r.explain)]
    return out


def main(argv: list[str] | None = None) -> int:
    wall_start = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data/demo", help="where the lake and indexes are kept")
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default=os.environ.get("HYPERSPACE_DEMO_SIZE", "full"),
        help="preset lake size (env HYPERSPACE_DEMO_SIZE); --orders/--files/--buckets override it",
    )
    parser.add_argument("--orders", type=int, help="orders (lineitem has about 4 lines per order)")
    parser.add_argument("--files", type=int, help="lineitem Parquet files (orders get a quarter)")
    parser.add_argument("--buckets", type=int, help="index buckets")
    parser.add_argument(
        "--runs", type=int, default=5, help="timed runs per variant (the join, seconds a run, at most 3)"
    )
    parser.add_argument("--no-delta", action="store_true", help="skip the Delta part")
    args = parser.parse_args(argv)
    preset = SIZES[args.size]
    orders_n = args.orders or preset[0]
    files = args.files or preset[1]
    buckets = args.buckets or preset[2]
    try:  # delta-spark is the optional hyperspace-spark[delta] extra
        import delta  # noqa: F401

        delta_installed = True
    except ImportError:
        delta_installed = False
    with_delta = delta_installed and not args.no_delta

    # A demo on one machine: bind to loopback instead of guessing a routable interface.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hyperspace-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.warehouse.dir", str(data_dir / "warehouse"))
        .config("spark.driver.host", "127.0.0.1")
    )
    if with_delta:
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(
            builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            # Delta rebuilds a table's state in 50 tasks by default, sized for clusters; a
            # two-file table on 2 cores spent most of the Delta part scheduling them.
            .config("spark.databricks.delta.snapshotPartitions", "2")
        )
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    phases: dict[str, float] = {"Spark start": time.perf_counter() - wall_start}
    try:
        start = time.perf_counter()
        data = lake(spark, data_dir, orders_n, files)
        lineitem = spark.read.parquet(data.lineitem)
        orders = spark.read.parquet(data.orders)
        lineitem.createOrReplaceTempView("lineitem")
        orders.createOrReplaceTempView("orders")
        lineitem_rows, orders_rows = lineitem.count(), orders.count()
        phases["lake"] = time.perf_counter() - start

        # The bar even when output is piped: showing what a build is doing is part of the demo.
        hs = Hyperspace(spark, progress="bar")
        conf = HyperspaceConfig(spark)
        shutil.rmtree(data_dir / "indexes", ignore_errors=True)
        conf.system_path = str(data_dir / "indexes")
        conf.num_buckets = buckets
        enabled_before = is_hyperspace_enabled(spark)

        # One index per access path. The join's two indexes share the key and the bucket count,
        # so their buckets line up and neither side is shuffled.
        start = time.perf_counter()
        hs.create_index(
            lineitem,
            IndexConfig(
                "lineitem_by_orderkey",
                ["l_orderkey"],
                ["l_linenumber", "l_quantity", "l_extendedprice", "l_shipdate"],
            ),
        )
        hs.create_index(orders, IndexConfig("orders_by_orderkey", ["o_orderkey"], ["o_orderpriority"]))
        # Keyed on the date and carrying only what the range reads: the range opens every bucket
        # (hash buckets cannot prune a range) but a tenth of the source's bytes.
        hs.create_index(
            lineitem, IndexConfig("lineitem_by_shipdate", ["l_shipdate"], ["l_extendedprice", "l_discount"])
        )
        build_seconds, build_load = time.perf_counter() - start, _load()
        phases["indexes"] = build_seconds
        hs.delete_index("orders_by_orderkey")  # the lifecycle: soft delete ...
        hs.restore_index("orders_by_orderkey")  # ... and back
        summary = hs.index("orders_by_orderkey").collect()[0]
        index_log = history(summary["indexRoot"])

        results = [
            Result(
                "lookup (one order)",
                "SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate FROM lineitem "
                f"WHERE l_orderkey = {LOOKUP_KEY}",
                ["lineitem_by_orderkey"],
                args.runs,
            ),
            Result(
                "range (one week)",
                "SELECT count(*) AS lines, sum(l_extendedprice * l_discount) AS revenue FROM lineitem "
                f"WHERE l_shipdate >= DATE '{WEEK[0]}' AND l_shipdate < DATE '{WEEK[1]}'",
                ["lineitem_by_shipdate"],
                args.runs,
            ),
            Result(
                "join + aggregate",
                "SELECT o_orderpriority, count(*) AS lines, sum(l_extendedprice) AS revenue "
                "FROM lineitem JOIN orders ON l_orderkey = o_orderkey GROUP BY o_orderpriority",
                ["lineitem_by_orderkey", "orders_by_orderkey"],
                # Its runs take seconds: three keep the demo inside its time budget.
                min(args.runs, 3),
            ),
        ]
        start = time.perf_counter()
        for r in results:
            measure(spark, r)
            enable_hyperspace(spark)
            df = spark.sql(r.sql)
            r.explain = hs.explain(df, verbose=r is results[-1], display=False)
            missing = [i for i in r.expected_indexes if i not in r.facts_on["indexes"]]
            r.why_not = "\n".join(hs.why_not(df, i, display=False) for i in missing)
            disable_hyperspace(spark)
        enable_hyperspace(spark)
        enabled_after = is_hyperspace_enabled(spark)
        disable_hyperspace(spark)
        phases["queries"] = time.perf_counter() - start
        start = time.perf_counter()
        delta_line, delta_ok = delta_part(spark, hs, data.orders, data_dir) if with_delta else ("", True)

        if with_delta:
            phases["delta"] = time.perf_counter() - start
        line = "-" * 78
        print(line)
        print("Hyperspace for Spark 4 — demo report")
        print(line)
        print(f"hyperspace-spark          {hyperspace.__version__}")
        print(f"jar                    {hyperspace.jar_path().name} (built for Spark {hs.spark_version})")
        print(f"Spark                  {spark.version}, master {spark.sparkContext.master}, {os.cpu_count()} CPUs")
        print(f"extension installed    spark.sql.extensions = {spark.conf.get('spark.sql.extensions')}")
        print(f"rewriting enabled      before enable_hyperspace: {enabled_before}, after: {enabled_after}")
        print(
            f"lake                   lineitem: {lineitem_rows:,} rows in {len(lineitem.inputFiles())} Parquet files,"
            f" orders: {orders_rows:,} rows in {len(orders.inputFiles())} (random row order)"
        )
        made = (
            f"generated in {data.generated_seconds:.1f}s (load {data.generated_load:.2f})"
            if data.generated_seconds is not None
            else "reused: generated by an earlier run with the same generator version and parameters"
        )
        print(f"                       {made}; {data.root}")
        print(f"indexes                built in {build_seconds:.1f}s (load {build_load:.2f}) under {hs.system_path}")
        for row in hs.indexes().orderBy("name").collect():
            print(
                f"                         {row['name']}: {list(row['indexedColumns'])}"
                f" incl. {list(row['includedColumns'])}, {row['numBuckets']} buckets,"
                f" {row['numIndexFiles']} files, {row['sizeInBytes']:,} bytes, {row['state']}"
            )
        print(
            "index log              orders_by_orderkey: "
            + " → ".join(f"{r.id}:{r.state}" for r in index_log.itertuples())
        )
        for r in results:
            print(line)
            print("\n".join(_query_report(r, full_explain=r is results[-1])))
        if delta_line:
            print(line)
            print(delta_line)
        print(line)
        print(
            f"demo wall time         {time.perf_counter() - wall_start:.1f}s (load {_load():.2f}): "
            + ", ".join(f"{k} {v:.1f}s" for k, v in phases.items())
        )
        print(line)
        ok = (
            all(r.same and r.used_expected for r in results)
            and delta_ok
            and enabled_after
            and not enabled_before
            and summary["state"] == "ACTIVE"
        )
        return 0 if ok else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
