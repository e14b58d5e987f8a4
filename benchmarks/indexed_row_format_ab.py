"""The Indexed DataFrame's two row formats side by side in one session:
``python -m benchmarks.indexed_row_format_ab``.

On the indexed suite's edge table (``src = id % (rows / 4)``, ``dst``, ``weight``, ``label``;
16 partitions) it builds one index with ``spark.hyperspace.indexed.rowFormat=compact`` and one
with ``unsafe``, then times, round by round with the order alternating: eager lookups of a few
random keys, joins with probe sides of 10K, 100K and 1M rows (the suite's shapes, the index
always probed; aggregating the probe side's column only, then at 100K and 1M the index side's
columns, which a compact row must decode), and a full scan aggregate. Every round checks both indexes return the same rows.
Medians and the load average before and after each round are printed (JSON with ``--out``).
HYPERSPACE_BENCH_INDEXED_ROWS sets the size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from typing import Any

ROWS = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 10_000_000))


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", help="write the figures here (JSON)")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from benchmarks.context import local_session
    from hyperspace import HyperspaceConfig, configure_spark_with_hyperspace
    from hyperspace.indexed import create_index

    spark = configure_spark_with_hyperspace(local_session("4g", 16)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conf = HyperspaceConfig(spark)
    rows = ROWS
    keys = max(1, rows // 4)
    table = spark.range(rows).selectExpr(
        f"id % {keys} AS src",
        "id AS dst",
        "CAST(id % 1000 AS DOUBLE) / 7 AS weight",
        "concat('edge-', id % 1000) AS label",
    )
    indexes = {}
    for form in ("compact", "unsafe"):
        with conf.override(indexed_row_format=form):
            indexes[form] = create_index(table, "src", num_partitions=16).cache()
        stats = indexes[form].memory_stats()
        print(f"{form}: {stats['blockManagerBytes']:,} B in the block manager", flush=True)
    probes = {}
    for size in (10_000, 100_000, 1_000_000):
        probe = spark.range(size).selectExpr(f"(id * 7919) % {2 * keys} AS pk", "id AS pv").cache()
        probe.count()
        probes[size] = probe
    rng = random.Random(11)
    times: dict[str, dict[str, list[float]]] = {f: {} for f in indexes}
    loads: list[str] = []

    def timed(form: str, name: str, fn: Any, record: bool) -> Any:
        t = time.perf_counter()
        out = fn()
        if record:
            times[form].setdefault(name, []).append((time.perf_counter() - t) * 1000)
        return out

    for r in range(args.rounds + 1):
        record = r > 0  # round 0 warms both up
        load_before = _load()
        order = ["compact", "unsafe"] if r % 2 == 0 else ["unsafe", "compact"]
        lookup_keys = [rng.randrange(keys) for _ in range(5)]
        results: dict[str, dict[str, Any]] = {f: {} for f in indexes}
        for form in order:
            idf = indexes[form]
            with conf.override(indexed_join_selection="index"):
                for k in lookup_keys:
                    got = timed(form, "lookup", lambda idf=idf, k=k: idf.lookup([k]), record)
                    results[form][f"lookup {k}"] = sorted(map(str, got))
                for size, probe in probes.items():
                    results[form][f"join {size}"] = timed(
                        form,
                        f"join {size // 1000}K",
                        lambda idf=idf, probe=probe: (
                            idf.join(probe, idf["src"] == probe["pk"]).agg(F.count("*"), F.sum("pv")).collect()
                        ),
                        record,
                    )
                # The same joins reading the index side's columns (each decoded per matched row).
                for size in (100_000, 1_000_000):
                    probe = probes[size]
                    results[form][f"join cols {size}"] = timed(
                        form,
                        f"join {size // 1000}K reading dst, weight, label",
                        lambda idf=idf, probe=probe: (
                            idf.join(probe, idf["src"] == probe["pk"])
                            .agg(F.sum("dst"), F.sum("weight"), F.max("label"))
                            .collect()
                        ),
                        record,
                    )
                results[form]["scan"] = timed(
                    form,
                    "scan aggregate",
                    lambda idf=idf: idf.to_df().agg(F.sum("dst"), F.sum("weight"), F.max("label")).collect(),
                    record,
                )
        if results["compact"] != results["unsafe"]:
            raise AssertionError(f"round {r}: the two row formats disagree")
        loads.append(f"{load_before} -> {_load()}")
        print(f"round {r} done; load {loads[-1]}", flush=True)

    print("| figure (ms, median) | compact | unsafe | compact / unsafe |")
    print("|---|---|---|---|")
    summary = {}
    for name in times["compact"]:
        c = statistics.median(times["compact"][name])
        u = statistics.median(times["unsafe"][name])
        summary[name] = {"compact": c, "unsafe": u}
        print(f"| {name} | {c:,.1f} | {u:,.1f} | {c / u:.2f} |")
    print(f"load per round: {loads}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "times": times, "summary": summary, "loads": loads}, f, indent=1)
    spark.stop()


if __name__ == "__main__":
    main()
