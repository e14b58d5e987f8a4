"""``python -m benchmarks [--suite tpch|overhead,seek|tpcds|all] [--sf 1] [--runs 5] [--name NAME]``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from benchmarks import report
from benchmarks.context import BenchContext, local_session
from benchmarks.suites import OWN_DATA, SUITES, lakehouse
from benchmarks.tpch_data import prepare
from hyperspace import configure_spark_with_hyperspace

HERE = Path(__file__).resolve().parent


def _suites(value: str) -> list[str]:
    """``all`` or a comma-separated list of suite names, in the order given."""
    if value == "all":
        return [n for n in SUITES if n not in OWN_DATA]
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in SUITES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown suite(s) {', '.join(unknown) or value!r}; known: {', '.join(SUITES)}"
        )
    return list(dict.fromkeys(names))


def _default_name(suites: list[str], sf: float) -> str:
    """``sf<SF>``, or ``tpcds-sf<SF>`` for a run of the TPC-DS suite alone."""
    return f"tpcds-sf{sf:g}" if set(suites) <= OWN_DATA else f"sf{sf:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--suite", default="all", type=_suites, help=f"all, or comma-separated suites of: {', '.join(SUITES)}"
    )
    parser.add_argument("--sf", type=float, default=1.0, help="TPC-H (and TPC-DS) scale factor")
    parser.add_argument("--files", type=int, default=64, help="files lineitem and orders are spread over")
    parser.add_argument("--buckets", type=int, default=16, help="buckets of indexes and tuned tables")
    parser.add_argument(
        "--runs", type=int, default=5, help="timed runs per variant (after a warm-up; 0: the warm-up is timed)"
    )
    parser.add_argument(
        "--queries",
        default=None,
        help="comma-separated query names to run (tpch, dataskipping and tpcds suites); default all",
    )
    parser.add_argument(
        "--budget", default=None, help="tpcds: the advisor's budget (e.g. 2g, 500m; default the source size)"
    )
    parser.add_argument(
        "--index-sets",
        default="advisor,handpicked",
        help="tpcds: the index sets compared with no index (advisor, handpicked or both)",
    )
    parser.add_argument("--driver-memory", default="8g", help="the local session's driver (and only) JVM heap")
    parser.add_argument("--name", default=None, help="results file name (default sf<SF>)")
    parser.add_argument("--data-dir", default=str(HERE / "data"), help="cache of generated data")
    parser.add_argument("--results-dir", default=str(HERE / "results"))
    parser.add_argument(
        "--quick", action="store_true", help="tiny smoke run: sf 0.01, each query once per variant, few files"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite <name>.md/.png from <name>.json (e.g. after editing <name>.notes.md)",
    )
    args = parser.parse_args(argv)
    bad_sets = set(args.index_sets.split(",")) - {"advisor", "handpicked"}
    if bad_sets:
        parser.error(f"--index-sets: unknown {', '.join(sorted(bad_sets))}; known: advisor, handpicked")
    if args.report_only:
        name = args.name or _default_name(args.suite, args.sf)
        raw = json.loads((Path(args.results_dir) / f"{name}.json").read_text())
        paths = report.write(Path(args.results_dir), name, raw["environment"], raw["suites"])
        print("wrote " + ", ".join(str(p) for p in paths))
        return 0
    if args.quick:
        args.sf, args.runs, args.files, args.buckets = 0.01, 0, 4, 4
    name = args.name or _default_name(args.suite, args.sf)

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    data_dir = Path(args.data_dir).resolve()
    work_dir = data_dir / f"work-{name}"
    shutil.rmtree(work_dir, ignore_errors=True)
    builder = local_session(
        args.driver_memory, max(4, args.buckets), f"hyperspace-bench-{name}", work_dir / "warehouse"
    )
    chosen = args.suite
    if "lakehouse" in chosen:  # Delta and Iceberg tables: their jars, extensions and catalogs, when available
        builder = lakehouse.builder_hook(builder, work_dir)
        if args.quick:
            # Delta rebuilds a snapshot in 50 tasks by default (sized for big logs): on the quick
            # run's tiny tables that is most of each read. Full runs keep what users run.
            builder = builder.config("spark.databricks.delta.snapshotPartitions", "2")
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    try:
        # The TPC-H lake, unless only suites with data of their own run.
        lake = prepare(spark, data_dir, args.sf, args.files) if set(chosen) - OWN_DATA else None
        only = frozenset(q.strip() for q in args.queries.split(",")) if args.queries else None
        options = {
            "budget": args.budget,
            "index_sets": [s.strip() for s in args.index_sets.split(",") if s.strip()],
        }
        ctx = BenchContext(spark, lake, work_dir, args.runs, args.buckets, args.quick, only, args.sf, data_dir, options)
        results = {}
        for suite in chosen:
            ctx.log(f"== suite {suite} (sf {args.sf:g}) ==")
            suite_started = time.perf_counter()
            results[suite] = SUITES[suite](ctx)
            ctx.log(f"== suite {suite}: {time.perf_counter() - suite_started:.0f}s ==")
        paths = report.write(Path(args.results_dir), name, report.environment(spark, args.sf), results)
        print(f"done in {time.perf_counter() - started:.0f}s; wrote " + ", ".join(str(p) for p in paths))
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
