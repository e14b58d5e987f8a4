"""``python -m hyperspace.demo``: the end-to-end demo behind ``make demo``.

Generates a small lake (orders and customers as Parquet files in random row order), starts
local Spark with the packaged jar exactly as a user would, builds two covering indexes, and
runs a selective filter and a join with Hyperspace on and off — interleaved, medians of several
runs, results compared — then prints the explain diff that shows why the indexed plans are
cheaper. When delta-spark is installed (``hyperspace-py[delta]``), a short Delta part follows: a
Delta table indexed, a DELETE on it (deletion vectors), the index refreshed from the table's log,
and the same lookup with the index and without.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
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
from hyperspace.log import history


def generate(spark: SparkSession, root: Path, rows: int, files: int) -> tuple[str, str]:
    """Writes orders (``rows`` rows, ``files`` files, random order) and customers; returns paths."""
    orders, customers = str(root / "orders"), str(root / "customers")
    (
        spark.range(rows)
        .select(
            F.col("id").alias("order_id"),
            (F.col("id") * 7919 % 20000).alias("customer_id"),
            F.expr("date_add(DATE'2024-01-01', CAST(id % 730 AS INT))").alias("order_date"),
            (F.col("id") % 997 * 1.25).cast("decimal(12,2)").alias("amount"),
            F.element_at(
                F.array(*[F.lit(s) for s in ("OPEN", "SHIPPED", "RETURNED")]), (F.col("id") % 3 + 1).cast("int")
            ).alias("status"),
            F.sha2(F.col("id").cast("string"), 256).alias("note"),
        )
        .orderBy(F.rand(seed=42))
        .repartition(files)
        .write.mode("overwrite")
        .parquet(orders)
    )
    (
        spark.range(20000)
        .select(
            F.col("id").alias("customer_id"),
            F.concat(F.lit("customer-"), F.col("id").cast("string")).alias("name"),
            F.element_at(
                F.array(*[F.lit(s) for s in ("retail", "wholesale", "online", "partner")]),
                (F.col("id") % 4 + 1).cast("int"),
            ).alias("segment"),
        )
        .orderBy(F.rand(seed=7))
        .repartition(4)
        .write.mode("overwrite")
        .parquet(customers)
    )
    return orders, customers


def compare(spark: SparkSession, query: Callable[[], DataFrame], runs: int) -> tuple[float, float, bool]:
    """Median seconds with Hyperspace on and off (runs interleaved, warm-up discarded) and
    whether both return the same rows."""
    enable_hyperspace(spark)
    with_rows = sorted(query().collect())
    disable_hyperspace(spark)
    without_rows = sorted(query().collect())
    on: list[float] = []
    off: list[float] = []
    for _ in range(runs):
        for enabled, times in ((True, on), (False, off)):
            (enable_hyperspace if enabled else disable_hyperspace)(spark)
            start = time.perf_counter()
            query().collect()
            times.append(time.perf_counter() - start)
    disable_hyperspace(spark)
    return statistics.median(on), statistics.median(off), with_rows == without_rows


def delta_part(spark: SparkSession, hs: Hyperspace, orders_path: str, root: Path) -> tuple[str, bool]:
    """A Delta table of the orders, indexed, changed by a DELETE, refreshed: one report line and
    whether the lookup returned the same rows with the index (used) and without."""
    table = str(root / "orders_delta")
    (spark.read.parquet(orders_path).write.format("delta").option("delta.enableDeletionVectors", "true").save(table))
    hs.create_index(
        spark.read.format("delta").load(table),
        IndexConfig("orders_delta_by_customer", ["customer_id"], ["amount", "status"], lineage=True),
    )
    spark.sql(f"DELETE FROM delta.`{table}` WHERE status = 'RETURNED' AND customer_id < 5000")
    refreshed = hs.refresh_index("orders_delta_by_customer", "incremental")

    def lookup() -> DataFrame:
        return (
            spark.read.format("delta")
            .load(table)
            .where(F.col("customer_id").isin(17, 4242, 19999))
            .groupBy("status")
            .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
        )

    disable_hyperspace(spark)
    without = sorted(lookup().collect())
    enable_hyperspace(spark)
    df = lookup()
    with_index = sorted(df.collect())
    used = "orders_delta_by_customer" in hs.explain(df, display=False).split("Indexes used:", 1)[1]
    disable_hyperspace(spark)
    same = with_index == without and used
    where = refreshed.message.split("Source files ", 1)[-1].rstrip(".")
    return (
        f"delta                  orders_delta: DELETE (deletion vectors), refresh incremental: "
        f"{refreshed.appended_files} appended / {refreshed.deleted_files} deleted file(s), {where}; "
        f"lookup through the index: same result {same}"
    ), same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data/demo", help="where the lake is generated")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per variant")
    parser.add_argument("--no-delta", action="store_true", help="skip the Delta part")
    args = parser.parse_args(argv)
    try:  # delta-spark is the optional hyperspace-py[delta] extra
        import delta  # noqa: F401

        delta_installed = True
    except ImportError:
        delta_installed = False
    with_delta = delta_installed and not args.no_delta

    # A demo on one machine: bind to loopback instead of guessing a routable interface.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    data_dir = Path(args.data_dir).resolve()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hyperspace-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.warehouse.dir", str(data_dir / "warehouse"))
        .config("spark.driver.host", "127.0.0.1")
    )
    if with_delta:
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(
            builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension").config(
                "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
            )
        )
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if data_dir.exists():
            shutil.rmtree(data_dir)
        orders_path, customers_path = generate(spark, data_dir, args.rows, args.files)
        orders = spark.read.parquet(orders_path)
        customers = spark.read.parquet(customers_path)

        # The bar even when output is piped: showing what a build is doing is part of the demo.
        hs = Hyperspace(spark, progress="bar")
        conf = HyperspaceConfig(spark)
        conf.system_path = str(data_dir / "indexes")
        conf.num_buckets = 8
        enabled_before = is_hyperspace_enabled(spark)

        start = time.perf_counter()
        hs.create_index(orders, IndexConfig("orders_by_customer", ["customer_id"], ["amount", "status"]))
        hs.create_index(customers, IndexConfig("customers_by_id", ["customer_id"], ["segment"]))
        build_seconds = time.perf_counter() - start
        hs.delete_index("orders_by_customer")  # the lifecycle: soft delete ...
        hs.restore_index("orders_by_customer")  # ... and back
        summary = hs.index("orders_by_customer").collect()[0]
        index_log = history(summary["indexRoot"])

        def lookup() -> DataFrame:
            return (
                spark.read.parquet(orders_path)
                .where(F.col("customer_id").isin(17, 4242, 19999))
                .groupBy("status")
                .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
            )

        def join() -> DataFrame:
            o = spark.read.parquet(orders_path).select("customer_id", "amount")
            c = spark.read.parquet(customers_path).select("customer_id", "segment")
            return o.join(c, "customer_id").groupBy("segment").agg(F.sum("amount").alias("revenue"))

        lookup_on, lookup_off, lookup_same = compare(spark, lookup, args.runs)
        join_on, join_off, join_same = compare(spark, join, args.runs)
        enable_hyperspace(spark)
        enabled_after = is_hyperspace_enabled(spark)
        join_explain = hs.explain(join(), verbose=True, display=False)
        lookup_explain = hs.explain(lookup(), display=False)
        disable_hyperspace(spark)
        delta_line, delta_ok = delta_part(spark, hs, orders_path, data_dir) if with_delta else ("", True)

        line = "-" * 78
        print(line)
        print("Hyperspace for Spark 4 — demo report")
        print(line)
        print(f"hyperspace-py          {hyperspace.__version__}")
        print(f"jar                    {hyperspace.jar_path().name} (built for Spark {hs.spark_version})")
        print(f"Spark                  {spark.version}, master {spark.sparkContext.master}")
        print(f"extension installed    spark.sql.extensions = {spark.conf.get('spark.sql.extensions')}")
        print(f"rewriting enabled      before enable_hyperspace: {enabled_before}, after: {enabled_after}")
        print(
            f"lake                   orders: {args.rows:,} rows in {len(orders.inputFiles())} Parquet files"
            f" (random order); customers: 20,000 rows"
        )
        print(f"indexes                built in {build_seconds:.1f}s under {hs.system_path}")
        for row in hs.indexes().orderBy("name").collect():
            print(
                f"                         {row['name']}: {list(row['indexedColumns'])}"
                f" incl. {list(row['includedColumns'])}, {row['numBuckets']} buckets,"
                f" {row['numIndexFiles']} files, {row['sizeInBytes']:,} bytes, {row['state']}"
            )
        print(
            "index log              orders_by_customer: "
            + " → ".join(f"{r.id}:{r.state}" for r in index_log.itertuples())
        )
        print(f"{'query':<22} {'no index':>9} {'Hyperspace':>11} {'speedup':>8}  same result")
        for name, on, off, same in (
            ("lookup (3 customers)", lookup_on, lookup_off, lookup_same),
            ("join + aggregate", join_on, join_off, join_same),
        ):
            print(f"{name:<22} {off:>8.3f}s {on:>10.3f}s {off / on:>7.1f}×  {same}")
        print(f"(medians of {args.runs} interleaved runs each)")
        if delta_line:
            print(delta_line)
        print(line)
        print("Why the lookup is cheaper (lines that differ are marked <---- ---->):")
        print("\n".join(ln for ln in lookup_explain.splitlines() if "<----" in ln or "Indexes used" in ln))
        print(line)
        print("Why the join is cheaper (operator counts with and without indexes):")
        stats = join_explain.split("Physical operator stats:", 1)[1]
        print(
            "\n".join(
                ln
                for ln in stats.splitlines()
                if "|" in ln and ("Exchange" in ln or "Operator" in ln or "Bytes" in ln or "Scan" in ln)
            )
        )
        print(line)
        ok = (
            lookup_same
            and join_same
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
