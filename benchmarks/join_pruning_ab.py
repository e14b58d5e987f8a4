"""Join pruning at run time by a covering index's buckets (plain Parquet) and by data skipping
sketches over a Delta table, each against the same query with Hyperspace off:
``python -m benchmarks.join_pruning_ab [--work-dir /work/bench-data/join-pruning] [--runs 7]``.

The big side is ``--files`` files of ``--rows-per-file`` rows with the key ``k`` contiguous per
file (a table written in key order, where pruning pays) and a few payload columns; it is written
as Parquet, with a covering index on ``k`` with lineage that includes one column only (the query
reads them all, so the index cannot serve it and its buckets are probed), and as a Delta table,
with a data skipping index of a bloom filter on ``k`` (Delta keeps min/max of ``k`` itself, but
does not prune a scan by a join's keys; join pruning of table formats, off by default, is turned
on here). The small side (100,000 rows) is filtered on a non-key
column to ``n`` keys spread over the big side, new ones every run, so that Spark broadcasts it and
infers no filter on ``k``. Runs alternate Hyperspace off and on (the order swapped every round)
after a warm-up of each; the medians and their ratio are printed with the files the query read
(both sides: the small side is one file) and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from benchmarks.context import local_session
from benchmarks.suites import lakehouse
from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceConfig,
    IndexConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)
from hyperspace._jvm import plan_facts

SMALL_ROWS = 100_000


def _write(spark: SparkSession, root: Path, files: int, rows_per_file: int) -> tuple[str, str, str]:
    n = files * rows_per_file
    big = spark.range(0, n, 1, files).selectExpr(
        "id AS k",
        "id * 7 AS a",
        "CAST(id % 1000 AS DOUBLE) / 10 AS b",
        "sha2(CAST(id AS STRING), 256) AS payload",
    )
    parquet, delta, small = (str(root / name) for name in ("big_parquet", "big_delta", "small"))
    big.write.parquet(parquet)
    big.write.format("delta").save(delta)
    # tag is unique per row: a filter on it selects rows, hence keys, without naming k.
    spark.range(0, SMALL_ROWS, 1, 1).selectExpr(
        f"CAST(id * {max(1, n // SMALL_ROWS)} AS BIGINT) AS k2", "CONCAT('t', id) AS tag"
    ).write.parquet(small)
    return parquet, delta, small


def _query(big: DataFrame, small: DataFrame, tags: list[int]) -> DataFrame:
    chosen = ", ".join(f"'t{t}'" for t in tags)
    joined = big.join(small.where(f"tag IN ({chosen})"), big["k"] == small["k2"])
    return joined.selectExpr("count(*) AS n", "sum(a) AS a", "sum(b) AS b", "sum(length(payload)) AS p")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.join_pruning_ab", description=__doc__)
    parser.add_argument("--work-dir", default="/work/bench-data/join-pruning")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows-per-file", type=int, default=10_000)
    parser.add_argument("--keys", default="1,10,100,1000")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = Path(args.work_dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    builder = lakehouse.builder_hook(local_session("6g", 4, "hyperspace-join-pruning-ab", root / "warehouse"), root)
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conf = HyperspaceConfig(spark)
    conf.system_path = str(root / "indexes")
    conf.num_buckets = 8
    hs = Hyperspace(spark)
    # Join pruning of table formats is off by default (measured here): on, to measure it.
    conf.dataskipping_join_pruning_table_formats_enabled = True
    parquet, delta, small_path = _write(spark, root, args.files, args.rows_per_file)
    with conf.override(lineage_enabled=True):
        hs.create_index(spark.read.parquet(parquet), IndexConfig("jp_cover", ["k"], ["a"]))
    hs.create_index(spark.read.format("delta").load(delta), DataSkippingIndexConfig("jp_bloom", BloomFilterSketch("k")))
    sides = {
        "parquet, covering index's buckets": lambda: spark.read.parquet(parquet),
        "delta, bloom filter sketch": lambda: spark.read.format("delta").load(delta),
    }
    load_start = os.getloadavg()
    started = time.strftime("%H:%M:%S", time.gmtime())
    rng = random.Random(19)
    rows = []
    for side, read in sides.items():
        for keys in (int(k) for k in args.keys.split(",")):
            times: dict[str, list[float]] = {"off": [], "on": []}
            files: dict[str, int] = {}
            for i in range(args.runs + 1):
                tags = rng.sample(range(SMALL_ROWS), keys)  # new keys every round, the same for both variants
                answers = {}
                for variant in ("off", "on") if i % 2 == 0 else ("on", "off"):
                    (enable_hyperspace if variant == "on" else disable_hyperspace)(spark)
                    query = _query(read(), spark.read.parquet(small_path), tags)
                    start = time.perf_counter()
                    answers[variant] = query.collect()
                    elapsed = (time.perf_counter() - start) * 1000
                    files[variant] = plan_facts(query)["filesRead"]
                    if i > 0:  # the first round is the warm-up
                        times[variant].append(elapsed)
                if answers["off"] != answers["on"]:
                    raise SystemExit(f"{side}, {keys} keys: results differ: {answers}")
            off, on = statistics.median(times["off"]), statistics.median(times["on"])
            rows.append((side, keys, off, on, files["off"], files["on"]))
            print(f"{side}, {keys} keys: off {off:.0f} ms, on {on:.0f} ms", flush=True)
    load_end = os.getloadavg()
    print()
    print(f"{args.files} files of {args.rows_per_file} rows, key in file order; small side {SMALL_ROWS} rows.")
    print(f"Started {started} UTC; {args.runs} interleaved runs after a warm-up, medians.")
    print("| big side, probe | small side keys | off ms | on ms | off / on | files read (both sides) off → on |")
    print("|---|---|---|---|---|---|")
    for side, keys, off, on, f_off, f_on in rows:
        print(f"| {side} | {keys} | {off:.0f} | {on:.0f} | {off / on:.2f}× | {f_off} → {f_on} |")
    print(f"\nLoad average (1 min) at the start {load_start[0]:.1f}, at the end {load_end[0]:.1f}.")
    spark.stop()


if __name__ == "__main__":
    main()
