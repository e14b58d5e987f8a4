"""Data skipping over time-ordered event data in many files.

Events are written in time order, so every file holds a narrow time range, a narrow range of the
URL's tenant prefix, and its own set of request ids (random strings, so min/max cannot help).
One data skipping index (Bloom filter on the request id, min/max on the time, prefix and suffix
sketches on the URL) serves point lookups, time ranges and LIKE filters, and prunes the events' files
by the request ids of a small incidents table they are joined with (join pruning at run time). Each query runs with and
without the index, interleaved on the same data; files read come from the scans' metrics. Index
build time and index size relative to the data are reported too.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.harness import Variant, run_queries
from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceConfig,
    MinMaxSketch,
    PrefixSketch,
    SuffixSketch,
    disable_hyperspace,
    enable_hyperspace,
)

INDEX = "events_skip"


def _queries(files: int, rows_per_file: int) -> dict[str, str]:
    mid = files * rows_per_file // 2
    tenant = files // 12  # a tenant spans 6 files: one in the middle
    return {
        "point_lookup": f"SELECT * FROM ev WHERE request_id = md5('{mid + 17}')",
        "in_lookup": f"SELECT * FROM ev WHERE request_id IN (md5('{mid // 3}'), md5('{mid}'), md5('{mid + mid // 2}'))",
        "time_range": f"""SELECT count(*), sum(bytes) FROM ev WHERE ts >= TIMESTAMP'2025-01-01 00:00:00' + INTERVAL {mid} SECONDS
                          AND ts < TIMESTAMP'2025-01-01 00:00:00' + INTERVAL {mid + 2 * rows_per_file} SECONDS""",
        "prefix_like": f"SELECT count(*), max(ts) FROM ev WHERE url LIKE '/t{tenant:05d}/%'",
        "suffix_like": "SELECT count(*) FROM ev WHERE url LIKE '%.pdf'",
        # No sketch summarizes `bytes`: the index cannot help and must cost nothing.
        "no_sketch_applies": "SELECT count(*), max(ts) FROM ev WHERE bytes BETWEEN 1000 AND 1100",
        # The min/max sketch on ts evaluates this, but every file has a row after the start.
        "nothing_skipped": "SELECT count(*), sum(bytes) FROM ev WHERE ts >= TIMESTAMP'2025-01-01 00:00:00' AND bytes < 500",
        # Joins with a small side Spark broadcasts, filtered on a column that is not the key: the
        # Bloom filter on request_id prunes the events' files at run time by the broadcast's keys.
        "join_few": f"{INCIDENT_JOIN} WHERE i.severity = 'critical'",
        "join_many": f"{INCIDENT_JOIN} WHERE i.severity = 'major'",
    }


INCIDENT_JOIN = "SELECT count(*), sum(e.bytes), max(e.ts) FROM ev e JOIN incidents i ON e.request_id = i.request_id"


def _write_incidents(spark: Any, path: Path, events: int) -> None:
    """1,000 incidents, each naming one request spread evenly over the events: 3 critical, 250 major."""
    (
        spark.range(0, 1000, 1, 1)
        .selectExpr(
            f"md5(CAST(id * {events // 1000} + 7 AS STRING)) AS request_id",
            "CASE WHEN id % 333 = 5 THEN 'critical' WHEN id % 4 = 0 THEN 'major' ELSE 'minor' END AS severity",
        )
        .write.parquet(str(path))
    )


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    root = ctx.work_dir / "dataskipping"
    shutil.rmtree(root, ignore_errors=True)
    conf.system_path = str(root / "indexes")
    files, rows_per_file = (20, 200) if ctx.quick else (2000, 1000)
    data = root / "events"
    # spark.range with one partition per file keeps ids contiguous per file: time-ordered files.
    # One tenant per 6 files; PDFs only in every 50th file (a rare suffix).
    (
        spark.range(0, files * rows_per_file, 1, files)
        .selectExpr(
            "id AS event_id",
            "TIMESTAMP'2025-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts",
            "md5(CAST(id AS STRING)) AS request_id",
            f"CONCAT('/t', LPAD(CAST(id DIV {rows_per_file * 6} AS STRING), 5, '0'), '/page', CAST(id % 97 AS STRING), "
            f"CASE WHEN (id DIV {rows_per_file}) % 50 = 7 AND id % 5 = 0 THEN '.pdf' ELSE '.html' END) AS url",
            "CAST(id * 7919 % 100000 AS BIGINT) AS bytes",
        )
        .write.parquet(str(data))
    )
    incidents = root / "incidents"
    _write_incidents(spark, incidents, files * rows_per_file)
    data_bytes = _size(data)
    source = spark.read.parquet(str(data))
    config = DataSkippingIndexConfig(
        INDEX, BloomFilterSketch("request_id"), MinMaxSketch("ts"), PrefixSketch("url", 7), SuffixSketch("url", 4)
    )
    start = time.perf_counter()
    hs.create_index(source, config)
    build_seconds = time.perf_counter() - start
    index_bytes = int(hs.index(INDEX).collect()[0]["sizeInBytes"])
    ctx.log(f"  index built in {build_seconds:.2f}s: {index_bytes} bytes for {data_bytes} bytes of data")

    def variant(name: str, on: bool) -> Variant:
        def prepare(_: str) -> None:
            spark.read.parquet(str(data)).createOrReplaceTempView("ev")
            spark.read.parquet(str(incidents)).createOrReplaceTempView("incidents")
            (enable_hyperspace if on else disable_hyperspace)(spark)

        return Variant(name, prepare)

    measured = run_queries(
        spark,
        ctx.selected(_queries(files, rows_per_file)),
        [variant("no index", False), variant("data skipping", True)],
        ctx.runs,
        ctx.log,
    )
    disable_hyperspace(spark)
    out: dict[str, Any] = {
        "files": files,
        "rowsPerFile": rows_per_file,
        "dataBytes": data_bytes,
        "indexBytes": index_bytes,
        "indexSizeRatio": index_bytes / max(1, data_bytes),
        "buildSeconds": build_seconds,
        "sketches": [repr(s) for s in config.sketches],
        "queries": {
            q: {v: {"median": m.median, "min": m.low, "max": m.high, "facts": m.facts} for v, m in per.items()}
            for q, per in measured.items()
        },
    }
    out["markdown"] = markdown(out)
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        "## Data skipping",
        "",
        f"Time-ordered events in {result['files']} Parquet files of {result['rowsPerFile']} rows "
        f"({result['dataBytes'] / 1e6:.1f} MB). Index `{INDEX}`: {', '.join(result['sketches'])}; built in "
        f"{result['buildSeconds']:.1f} s, {result['indexBytes'] / 1e6:.2f} MB "
        f"({result['indexSizeRatio']:.2%} of the data). Seconds are medians (min–max), files read from the "
        "scan metrics; the ratio is no index / data skipping.",
        "",
        "| query | no index | data skipping | speedup | files read (no index → skipping) |",
        "|---|---|---|---|---|",
    ]
    for q, per in result["queries"].items():
        n, s = per["no index"], per["data skipping"]
        lines.append(
            f"| {q} | {n['median']:.3f} ({n['min']:.2f}–{n['max']:.2f}) "
            f"| {s['median']:.3f} ({s['min']:.2f}–{s['max']:.2f}) | {n['median'] / s['median']:.2f}× "
            f"| {n['facts']['filesRead']} → {s['facts']['filesRead']} |"
        )
    return lines + [""]
