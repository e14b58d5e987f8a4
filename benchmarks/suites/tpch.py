"""TPC-H queries three ways: plain Spark over the files, Hyperspace over the same files (the
query unchanged), and the hand-tuned layout a user would build instead (bucketed, sorted
tables). Also records each index's build time and size."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from benchmarks.context import BenchContext, local_session
from benchmarks.harness import Variant, run_queries
from benchmarks.suites.seek import LINEITEM_COLUMNS
from benchmarks.tpch_data import prepare
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    IndexConfig,
    ZOrderCoveringIndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)

QUERY_DIR = Path(__file__).resolve().parent.parent / "queries"
QUERIES = [
    "point_lookup",
    "star_lookup",
    "in_list",
    "csv_lookup",
    "date_range",
    "q6",
    "q6_zorder",
    "q3",
    "q17",
    "join",
    "join_filtered",
    "broadcast_join",
    "no_index",
]

# The documented index set: what a user would declare for these queries. `li_all_orderkey` is the
# fully covering one (every lineitem column) that answers `star_lookup`'s SELECT *.
INDEXES = [
    (
        "lineitem",
        IndexConfig(
            "li_orderkey", ["l_orderkey"], ["l_linenumber", "l_quantity", "l_extendedprice", "l_discount", "l_shipdate"]
        ),
    ),
    ("lineitem", IndexConfig("li_all_orderkey", ["l_orderkey"], LINEITEM_COLUMNS[1:])),
    (
        "orders",
        IndexConfig(
            "orders_orderkey", ["o_orderkey"], ["o_custkey", "o_orderdate", "o_shippriority", "o_orderpriority"]
        ),
    ),
    ("lineitem", IndexConfig("li_shipdate", ["l_shipdate"], ["l_extendedprice", "l_discount", "l_quantity"])),
    ("part", IndexConfig("part_partkey", ["p_partkey"], ["p_brand", "p_container"])),
    ("lineitem", IndexConfig("li_partkey", ["l_partkey"], ["l_quantity", "l_extendedprice"])),
    (
        "lineitem_csv",
        IndexConfig("li_csv_orderkey", ["l_orderkey"], ["l_linenumber", "l_quantity", "l_extendedprice", "l_shipdate"]),
    ),
    (
        "lineitem",
        ZOrderCoveringIndexConfig(
            "li_zorder_shipdate_discount", ["l_shipdate", "l_discount"], ["l_extendedprice", "l_quantity"]
        ),
    ),
]


def zorder_target_file_size(sf: float, quick: bool = False) -> int:
    """The Z-order index's target file size for this scale: about 2 MB (before compression) per
    unit of scale factor, at least 32 KB, so the index has some 80 files at any scale; at the
    default 128 MB an SF1 index would be two files and a range could skip nothing. ``quick``: four
    times that (some 20 files, still skipping most of them), as writing the 80 took most of the
    quick run's two Z-order builds."""
    return max(32 * 1024, int(2 * 1024 * 1024 * sf)) * (4 if quick else 1)


# The hand-tuned layout: (table name, source, bucket/sort column or None for a sorted copy).
TUNED = [
    ("tuned_lineitem_by_orderkey", "lineitem", "l_orderkey", True),
    ("tuned_orders_by_orderkey", "orders", "o_orderkey", True),
    ("tuned_lineitem_by_partkey", "lineitem", "l_partkey", True),
    ("tuned_part_by_partkey", "part", "p_partkey", True),
    ("tuned_lineitem_by_shipdate", "lineitem", "l_shipdate", False),
]


def load_queries() -> dict[str, tuple[str, dict[str, str]]]:
    """name -> (SQL text, {view: tuned table}) from benchmarks/queries/*.sql."""
    out = {}
    for name in QUERIES:
        text = (QUERY_DIR / f"{name}.sql").read_text()
        tuned = re.search(r"^-- tuned: (.*)$", text, flags=re.M)
        mapping = dict(pair.strip().split("=") for pair in tuned.group(1).split(",")) if tuned else {}
        out[name] = (text, mapping)
    return out


def _frame(spark: SparkSession, ctx: BenchContext, table: str):
    if table == "lineitem_csv":
        schema: StructType = spark.read.parquet(ctx.lake.path("lineitem")).schema
        return spark.read.schema(schema).option("header", "true").csv(ctx.lake.lineitem_csv)
    return spark.read.parquet(ctx.lake.path(table))


FILE_TABLES = ("lineitem", "orders", "customer", "part", "supplier", "partsupp", "nation", "region", "lineitem_csv")


def session_over_run(app_name: str, data_dir: Path, work_dir: Path) -> SparkSession:
    """A local session over the SF1 lake of ``data_dir``, its Parquet tables as temp views, and
    Hyperspace's system path at the indexes a tpch suite run left in ``work_dir``: for the profiles
    that re-run the suite's queries without rebuilding its indexes."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = configure_spark_with_hyperspace(local_session("8g", 16, app_name)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lake = prepare(spark, data_dir, 1.0, 64)
    for table in FILE_TABLES:
        if table != "lineitem_csv":
            spark.read.parquet(lake.path(table)).createOrReplaceTempView(table)
    HyperspaceConfig(spark).system_path = str(work_dir / "indexes")
    return spark


class FileViews:
    """The TPC-H tables as temp views over their files, switched back in before every file-based
    variant. The DataFrames are read once: reading them again at every switch (listing the files,
    a footer for the schema, nine tables) cost more than the queries themselves at small scales."""

    def __init__(self, spark: SparkSession, ctx: BenchContext) -> None:
        self._frames = {table: _frame(spark, ctx, table) for table in FILE_TABLES}

    def register(self) -> None:
        for table, df in self._frames.items():
            df.createOrReplaceTempView(table)


def build_tuned(spark: SparkSession, ctx: BenchContext) -> dict[str, float]:
    """Writes the hand-tuned tables (bucketBy().sortBy() or a sorted copy); returns seconds each."""
    seconds = {}
    for name, source, column, bucketed in TUNED:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        start = time.perf_counter()
        df = _frame(spark, ctx, source)
        if bucketed:
            df.write.bucketBy(ctx.buckets, column).sortBy(column).saveAsTable(name)
        else:
            df.orderBy(column).repartition(ctx.lake.files, column).sortWithinPartitions(column).write.saveAsTable(name)
        seconds[name] = time.perf_counter() - start
    return seconds


def build_indexes(spark: SparkSession, ctx: BenchContext) -> list[dict[str, Any]]:
    """Creates the documented indexes through the public Python API; build time and size each."""
    hs = Hyperspace(spark)
    index_root = ctx.work_dir / "indexes"
    shutil.rmtree(index_root, ignore_errors=True)
    HyperspaceConfig(spark).system_path = str(index_root)
    HyperspaceConfig(spark).num_buckets = ctx.buckets
    built = []
    conf = HyperspaceConfig(spark)
    for table, config in INDEXES:
        start = time.perf_counter()
        if isinstance(config, ZOrderCoveringIndexConfig):
            with conf.override(zorder_target_file_size=zorder_target_file_size(ctx.lake.sf, ctx.quick)):
                hs.create_index(_frame(spark, ctx, table), config)
        else:
            hs.create_index(_frame(spark, ctx, table), config)
        seconds = time.perf_counter() - start
        row = hs.index(config.name).first()
        built.append(
            {
                "index": config.name,
                "table": table,
                "seconds": seconds,
                "sizeInBytes": row["sizeInBytes"],
                "files": row["numIndexFiles"],
                "sourceBytes": row["sourceSizeInBytes"],
            }
        )
        ctx.log(f"  index {config.name}: {seconds:.1f}s, {row['sizeInBytes']:,} bytes")
    return built


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    ctx.log("tpch: building the hand-tuned layout")
    tuned_seconds = build_tuned(spark, ctx)
    ctx.log("tpch: building indexes")
    indexes = build_indexes(spark, ctx)
    queries = ctx.selected(load_queries())

    views = FileViews(spark, ctx)

    def files(_: str) -> None:
        views.register()

    def tuned(query: str) -> None:
        views.register()
        for view, table in queries[query][1].items():
            spark.table(table).createOrReplaceTempView(view)

    variants = [
        Variant("hyperspace", lambda q: (files(q), enable_hyperspace(spark))),
        Variant("spark", lambda q: (files(q), disable_hyperspace(spark))),
        Variant("tuned", lambda q: (tuned(q), disable_hyperspace(spark))),
    ]
    timed = f"{ctx.runs} runs (interleaved)" if ctx.runs else "a timed warm-up"
    ctx.log(f"tpch: {len(queries)} queries x {len(variants)} variants x {timed}")
    measured = run_queries(spark, {k: v[0] for k, v in queries.items()}, variants, ctx.runs, ctx.log)
    disable_hyperspace(spark)
    return {
        "indexes": indexes,
        "tunedBuildSeconds": tuned_seconds,
        "queries": {
            q: {
                v: {"seconds": m.seconds, "median": m.median, "min": m.low, "max": m.high, "facts": m.facts}
                for v, m in per.items()
            }
            for q, per in measured.items()
        },
    }
