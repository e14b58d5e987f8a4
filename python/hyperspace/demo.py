"""``python -m hyperspace.demo``: the end-to-end demo behind ``make demo``.

Generates a small dataset, starts local Spark with the packaged jar exactly as a user would,
and prints a report: versions, that the extension is active in the session, and that queries
give the same answers with Hyperspace on and off. Later releases grow it into the full
showcase (index creation, rewritten plans, speedups).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import hyperspace
from hyperspace.log import history
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    IndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
    is_hyperspace_enabled,
)


def generate_orders(spark: SparkSession, path: Path, rows: int, files: int) -> None:
    """Writes a synthetic orders table: ``rows`` rows in ``files`` Parquet files, random order."""
    (
        spark.range(rows)
        .select(
            F.col("id").alias("order_id"),
            (F.col("id") * 7919 % 5000).alias("customer_id"),
            F.expr("date_add(DATE'2024-01-01', CAST(id % 730 AS INT))").alias("order_date"),
            (F.col("id") % 997 * 1.25).cast("decimal(12,2)").alias("amount"),
            F.element_at(F.array(*[F.lit(s) for s in ("OPEN", "SHIPPED", "RETURNED")]),
                         (F.col("id") % 3 + 1).cast("int")).alias("status"),
        )
        .orderBy(F.rand(seed=42))
        .repartition(files)
        .write.mode("overwrite")
        .parquet(str(path))
    )


def median_seconds(action: Callable[[], object], runs: int) -> float:
    """Median wall time of ``action`` over ``runs`` runs."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data/demo", help="where the dataset is generated")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per variant")
    args = parser.parse_args(argv)

    # A demo on one machine: bind to loopback instead of guessing a routable interface.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    data_dir = Path(args.data_dir).resolve()
    orders_path = data_dir / "orders"
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hyperspace-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.warehouse.dir", str(data_dir / "warehouse"))
        .config("spark.driver.host", "127.0.0.1")
    )
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        index_root = data_dir / "indexes"
        for stale in (orders_path, index_root):
            if stale.exists():
                shutil.rmtree(stale)
        generate_orders(spark, orders_path, args.rows, args.files)
        orders = spark.read.parquet(str(orders_path))

        hs = Hyperspace(spark)
        conf = HyperspaceConfig(spark)
        conf.system_path = str(index_root)
        conf.num_buckets = 16

        start = time.perf_counter()
        hs.create_index(orders, IndexConfig("orders_by_customer", ["customer_id"], ["amount", "status"]))
        build_seconds = time.perf_counter() - start
        hs.delete_index("orders_by_customer")
        hs.restore_index("orders_by_customer")
        summary = hs.index("orders_by_customer").first()
        index_log = history(summary["indexLocation"])
        enabled_before = is_hyperspace_enabled(spark)
        enable_hyperspace(spark)
        enabled_after = is_hyperspace_enabled(spark)

        def query() -> DataFrame:
            return (
                orders.where(F.col("customer_id").isin(17, 42, 4999))
                .groupBy("status")
                .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
                .orderBy("status")
            )

        with_hs = query().collect()
        t_on = median_seconds(lambda: query().collect(), args.runs)
        disable_hyperspace(spark)
        without_hs = query().collect()
        t_off = median_seconds(lambda: query().collect(), args.runs)

        buckets = (
            orders.select(F.expr(f"hyperspace_bucket_id({conf.num_buckets}, customer_id)").alias("b"))
            .groupBy("b").count()
            .agg(F.count("*").alias("used"), F.min("count").alias("lo"), F.max("count").alias("hi"))
            .first()
        )

        line = "-" * 72
        print(line)
        print("Hyperspace for Spark 4 — demo report")
        print(line)
        print(f"hyperspace-py          {hyperspace.__version__}")
        print(f"jar                    {hyperspace.jar_path().name} (built for Spark {hs.spark_version})")
        print(f"Spark                  {spark.version}, master {spark.sparkContext.master}")
        print(f"extension installed    spark.sql.extensions = {spark.conf.get('spark.sql.extensions')}")
        print(f"rewriting enabled      before enable_hyperspace: {enabled_before}, after: {enabled_after}")
        print(f"index root             {hs.system_path}")
        print(f"dataset                {args.rows:,} rows in {len(orders.inputFiles())} Parquet files at {orders_path}")
        print(f"bucket layout          {conf.num_buckets} buckets by customer_id (hyperspace_bucket_id):"
              f" {buckets['used']} used, {buckets['lo']}–{buckets['hi']} rows each")
        print(f"index                  {summary['name']}: {summary['kind']} on {list(summary['indexedColumns'])}"
              f" incl. {list(summary['includedColumns'])}, {summary['numBuckets']} buckets")
        print(f"                       built in {build_seconds:.2f}s: {summary['numIndexFiles']} files,"
              f" {summary['sizeInBytes']:,} bytes from {summary['numSourceFiles']} source files;"
              f" state {summary['state']}")
        print(f"index log              " + " → ".join(
            f"{row.id}:{row.state}" for row in index_log.itertuples()))
        print(f"query                  orders of 3 customers, grouped by status")
        for row in with_hs:
            print(f"                         {row['status']:<9} {row['orders']:>5} orders  {row['revenue']:>12}")
        same = sorted(with_hs) == sorted(without_hs)
        print(f"same result on/off     {same}")
        print(f"median time            on {t_on:.3f}s, off {t_off:.3f}s over {args.runs} runs"
              " (query rewriting arrives with the optimizer rules; both plans are the same today)")
        print(line)
        ok = same and enabled_after and not enabled_before and summary["state"] == "ACTIVE"
        return 0 if ok else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
