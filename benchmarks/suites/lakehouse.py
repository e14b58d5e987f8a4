"""Indexes over lakehouse tables: TPC-H lineitem and orders as table-format tables (Delta Lake and
Apache Iceberg).

For each format: the tables are written in the format; a covering index on l_orderkey (with
lineage), one on o_orderkey and a data skipping index (a bloom filter on l_partkey, which the
format's own min/max cannot prune) are built; a point lookup, a range, a lookup on the bloom
filter's column and a join run with no index and with Hyperspace, interleaved (medians, ratio
no index / Hyperspace). The join runs twice: as Spark plans it (at SF1 Spark broadcasts orders, and
a join Spark broadcasts is left to it), and with a merge hint (a sort-merge join either way: Spark
shuffles both tables, Hyperspace reads both indexes bucketed alike). Then incremental refresh is timed after appending 1% and 10% of the 1×
table, with the table at 1× and grown to 4× its size (the same appended rows at both sizes):
refresh reads the changes from the table's log, so its time should follow the change and stay
flat as the table grows. The machine's load average is recorded before
and after (noise on a shared machine).

A format is a parameter (:class:`TableFormat`). Iceberg tables live in a local Hadoop catalog
(``lh_ice``) in the bench's work directory; Iceberg publishes a Spark runtime for some Spark lines
only (``iceberg.<line>`` in versions.properties): on a line without one the Iceberg part is not run,
and the results say so.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
from pyspark.sql import DataFrame, SparkSession

from benchmarks.context import BenchContext
from benchmarks.harness import Measurement, Variant, run_queries
from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceConfig,
    IndexConfig,
    disable_hyperspace,
    enable_hyperspace,
)


@dataclass(frozen=True)
class TableFormat:
    """How the suite writes, appends to and reads a table of one format."""

    name: str
    available: Callable[[SparkSession], str | None]  # None when usable, else why not
    write: Callable[[DataFrame, str], None]
    append: Callable[[DataFrame, str], None]
    read: Callable[[SparkSession, str], DataFrame]


def _delta_available(spark: SparkSession) -> str | None:
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if "io.delta.sql.DeltaSparkSessionExtension" not in extensions:
        return "the session has no Delta extension (install delta-spark: hyperspace-spark[delta])"
    return None


DELTA = TableFormat(
    name="delta",
    available=_delta_available,
    write=lambda df, path: df.write.format("delta").option("delta.enableDeletionVectors", "true").save(path),
    append=lambda df, path: df.write.format("delta").mode("append").save(path),
    read=lambda spark, path: spark.read.format("delta").load(path),
)

ICEBERG_CATALOG = "lh_ice"
ICEBERG_EXTENSION = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
VERSIONS = Path(__file__).resolve().parents[2] / "versions.properties"


def _spark_line() -> str:
    return ".".join(pyspark.__version__.split(".")[:2])


def iceberg_version() -> tuple[str | None, str]:
    """The Iceberg runtime versions.properties pins for the installed Spark line, or None and why not."""
    line = _spark_line()
    if not VERSIONS.exists():
        return None, f"versions.properties is not at {VERSIONS}, so the Iceberg runtime for Spark {line} is unknown"
    pins = dict(
        (k.strip(), v.strip())
        for k, v in (
            ln.split("=", 1) for ln in VERSIONS.read_text().splitlines() if "=" in ln and not ln.startswith("#")
        )
    )
    pinned = pins.get(f"iceberg.{line}", pins.get("iceberg", "none"))
    if pinned == "none":
        return None, f"Iceberg publishes no Spark runtime for Spark {line} (versions.properties: iceberg.{line}=none)"
    return pinned, ""


def _iceberg_available(spark: SparkSession) -> str | None:
    version, why = iceberg_version()
    if version is None:
        return why
    if not spark.conf.get(f"spark.sql.catalog.{ICEBERG_CATALOG}", None):
        return f"the session has no Iceberg catalog {ICEBERG_CATALOG} (the bench's session builder adds it)"
    return None


def _iceberg_table(path: str) -> str:
    # The suite names tables by their directory; Iceberg's by catalog name (the catalog places them).
    return f"{ICEBERG_CATALOG}.bench.{Path(path).name}"


ICEBERG = TableFormat(
    name="iceberg",
    available=_iceberg_available,
    write=lambda df, path: (
        df.writeTo(_iceberg_table(path)).using("iceberg").tableProperty("format-version", "2").createOrReplace()
    ),
    append=lambda df, path: df.writeTo(_iceberg_table(path)).append(),
    read=lambda spark, path: spark.table(_iceberg_table(path)),
)

FORMATS: dict[str, TableFormat] = {"delta": DELTA, "iceberg": ICEBERG}

LINEITEM_COLUMNS = ("l_orderkey", "l_partkey", "l_quantity", "l_extendedprice", "l_shipdate")
GROWTH = (1, 4)
APPENDED = (0.01, 0.10)
# Quick: each table format commit costs seconds at any size. Growing to 2x still tells a refresh
# that follows the change from one that reads the table, in one commit where 4x took three; 1%
# and 10% of the quick run's 8 files are both one file.
QUICK_GROWTH = (1, 2)
QUICK_APPENDED = (0.10,)


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def queries(max_orderkey: int, partkey: int) -> dict[str, str]:
    k = max_orderkey // 3
    return {
        "point_lookup": f"SELECT l_orderkey, l_partkey, l_quantity FROM lh_li WHERE l_orderkey = {k - k % 32 + 3}",
        "range": f"""SELECT count(*) AS n, sum(l_extendedprice) AS price FROM lh_li
                     WHERE l_orderkey BETWEEN {k} AND {k + max(100, max_orderkey // 500)}""",
        "partkey_lookup": f"SELECT l_orderkey, l_quantity FROM lh_li WHERE l_partkey = {partkey}",
        # Spark's own choice: at SF1 it broadcasts orders (its size estimate, about 10 MB for Delta
        # and 7 MB for Iceberg, is within spark.sql.autoBroadcastJoinThreshold), so the join rule
        # leaves the join to Spark and both variants run the same plan.
        "join": """SELECT o_orderpriority, count(*) AS n, sum(l_quantity) AS qty
                   FROM lh_li JOIN lh_orders ON l_orderkey = o_orderkey GROUP BY o_orderpriority""",
        # The same join as a sort-merge join in both variants (the hint): Spark shuffles both
        # tables, Hyperspace merges the two indexes bucketed alike on the order key, no Exchange.
        "join_merge": """SELECT /*+ MERGE(lh_li, lh_orders) */ o_orderpriority, count(*) AS n, sum(l_quantity) AS qty
                         FROM lh_li JOIN lh_orders ON l_orderkey = o_orderkey GROUP BY o_orderpriority""",
    }


def run_format(ctx: BenchContext, fmt: TableFormat) -> dict[str, Any]:
    spark = ctx.spark
    why_not = fmt.available(spark)
    if why_not is not None:
        ctx.log(f"  {fmt.name}: skipped ({why_not})")
        return {"skipped": why_not}
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    root = ctx.work_dir / "lakehouse" / fmt.name
    shutil.rmtree(root, ignore_errors=True)
    conf.system_path = str(root / "indexes")
    conf.num_buckets = ctx.buckets
    files = 8 if ctx.quick else 64
    lineitem, orders = str(root / "lineitem"), str(root / "orders")
    base = spark.read.parquet(ctx.lake.path("lineitem")).select(*LINEITEM_COLUMNS)
    fmt.write(base.repartition(files), lineitem)
    fmt.write(
        spark.read.parquet(ctx.lake.path("orders"))
        .select("o_orderkey", "o_orderpriority", "o_orderdate")
        .repartition(files),
        orders,
    )
    stats = spark.read.parquet(ctx.lake.path("lineitem")).selectExpr("max(l_orderkey)", "min(l_partkey)").first()
    max_orderkey, partkey = int(stats[0]), int(stats[1]) + 7

    build = {
        "lineitem_orderkey": _timed(
            lambda: hs.create_index(
                fmt.read(spark, lineitem),
                IndexConfig(f"{fmt.name}_li_orderkey", ["l_orderkey"], list(LINEITEM_COLUMNS[1:]), lineage=True),
            )
        ),
        "orders_orderkey": _timed(
            lambda: hs.create_index(
                fmt.read(spark, orders), IndexConfig(f"{fmt.name}_orders_orderkey", ["o_orderkey"], ["o_orderpriority"])
            )
        ),
        "lineitem_partkey_bloom": _timed(
            lambda: hs.create_index(
                fmt.read(spark, lineitem),
                DataSkippingIndexConfig(f"{fmt.name}_li_partkey", BloomFilterSketch("l_partkey")),
            )
        ),
    }
    ctx.log(f"  {fmt.name} indexes built: " + ", ".join(f"{k} {v:.1f}s" for k, v in build.items()))

    def views() -> None:
        fmt.read(spark, lineitem).createOrReplaceTempView("lh_li")
        fmt.read(spark, orders).createOrReplaceTempView("lh_orders")

    def variant(name: str, on: bool) -> Variant:
        def prepare(_: str) -> None:
            views()
            (enable_hyperspace if on else disable_hyperspace)(spark)

        return Variant(name, prepare)

    load_before = _load()
    measured: dict[str, dict[str, Measurement]] = run_queries(
        spark,
        ctx.selected(queries(max_orderkey, partkey)),
        [variant("no index", on=False), variant("Hyperspace", on=True)],
        ctx.runs,
        ctx.log,
    )
    disable_hyperspace(spark)

    # Incremental refresh as the table grows: at 1x, then grown to 4x (the base rows appended
    # again, the indexes refreshed in full, untimed), append 1% and 10% of the 1x table (the same
    # rows at both sizes) and time the refresh of each index. A refresh whose cost follows the
    # change takes the same time at 4x as at 1x; one that reads the table takes about 4 times as long.
    refresh: dict[str, dict[str, Any]] = {}
    size = 1
    growths, appended = (QUICK_GROWTH, QUICK_APPENDED) if ctx.quick else (GROWTH, APPENDED)
    for growth in growths:
        while size < growth:
            fmt.append(base.repartition(files), lineitem)
            size += 1
        if growth > 1:
            for name in (f"{fmt.name}_li_orderkey", f"{fmt.name}_li_partkey"):
                hs.refresh_index(name, "full")
        for fraction in appended:
            label = f"{growth}x table, {fraction:.0%} of the 1x table appended"
            added = base.sample(withReplacement=False, fraction=fraction, seed=11)
            fmt.append(added.repartition(max(1, round(files * fraction))), lineitem)
            costs: dict[str, Any] = {}
            for name in (f"{fmt.name}_li_orderkey", f"{fmt.name}_li_partkey"):
                start = time.perf_counter()
                result = hs.refresh_index(name, "incremental")
                costs[name] = time.perf_counter() - start
                costs[f"{name} changes"] = result.message.split("Source files ", 1)[-1].rstrip(".")
            refresh[label] = costs
            ctx.log(f"  refresh after {label}: " + ", ".join(f"{k} {v}" for k, v in costs.items()))
    load_after = _load()

    return {
        "files": files,
        "buildSeconds": build,
        "queries": {
            q: {v: {"median": m.median, "min": m.low, "max": m.high, "facts": m.facts} for v, m in per.items()}
            for q, per in measured.items()
        },
        "refreshSeconds": refresh,
        "loadAverage": {"before": load_before, "after": load_after},
    }


def run(ctx: BenchContext) -> dict[str, Any]:
    out: dict[str, Any] = {"formats": {name: run_format(ctx, fmt) for name, fmt in FORMATS.items()}}
    out["markdown"] = markdown(out)
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        "## Lakehouse tables",
        "",
        "TPC-H lineitem (5 columns) and orders as table-format tables; covering indexes on "
        "l_orderkey (lineage) and o_orderkey, a bloom filter data skipping index on l_partkey. "
        "Seconds are medians of interleaved runs (min–max); the ratio is no index / Hyperspace.",
    ]
    for name, r in result["formats"].items():
        lines += ["", f"### {name}", ""]
        if "skipped" in r:
            lines.append(f"Not run: {r['skipped']}.")
            continue
        load = r["loadAverage"]
        lines += [
            f"{r['files']} files per table; load average (1, 5, 15 min) {load['before']} before, "
            f"{load['after']} after.",
            "",
            "| query | no index | Hyperspace | ratio |",
            "|---|---|---|---|",
        ]
        for q, per in r["queries"].items():
            off, on = per["no index"], per["Hyperspace"]
            lines.append(
                f"| {q} | {off['median']:.3f}s ({off['min']:.3f}–{off['max']:.3f}) | "
                f"{on['median']:.3f}s ({on['min']:.3f}–{on['max']:.3f}) | {off['median'] / on['median']:.1f}× |"
            )
        lines += ["", "| incremental refresh after | index | seconds | changes read |", "|---|---|---|---|"]
        for label, costs in r["refreshSeconds"].items():
            for k, v in costs.items():
                if not k.endswith(" changes"):
                    lines.append(f"| {label} | {k} | {v:.2f} | {costs[f'{k} changes']} |")
    return lines


def builder_hook(builder: Any, work_dir: Path) -> Any:
    """``builder`` with Delta's jars, extension and catalog when delta-spark is installed, and with the
    line's Iceberg runtime (Maven Central), extension and a Hadoop catalog in ``work_dir`` when
    versions.properties pins one for the line."""
    iceberg, _ = iceberg_version()
    packages = [f"org.apache.iceberg:iceberg-spark-runtime-{_spark_line()}_2.13:{iceberg}"] if iceberg else []
    extensions = []
    if iceberg:
        extensions.append(ICEBERG_EXTENSION)
        builder = (
            builder.config(f"spark.sql.catalog.{ICEBERG_CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
            .config(f"spark.sql.catalog.{ICEBERG_CATALOG}.type", "hadoop")
            .config(
                f"spark.sql.catalog.{ICEBERG_CATALOG}.warehouse", str(work_dir / "lakehouse" / "iceberg" / "catalog")
            )
            .config(f"spark.sql.catalog.{ICEBERG_CATALOG}.cache-enabled", "false")
        )
    try:
        from delta import configure_spark_with_delta_pip
    except ImportError:
        configure_spark_with_delta_pip = None
    if configure_spark_with_delta_pip is not None:
        extensions.insert(0, "io.delta.sql.DeltaSparkSessionExtension")
        builder = builder.config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    if extensions:
        builder = builder.config("spark.sql.extensions", ",".join(extensions))
    if configure_spark_with_delta_pip is not None:
        return configure_spark_with_delta_pip(builder, extra_packages=packages)
    return builder.config("spark.jars.packages", ",".join(packages)) if packages else builder
