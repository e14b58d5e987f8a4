"""The index advisor on the TPC-H suite's queries (#21).

``python -m benchmarks.advisor_bench [--sf 0.01] [--runs 5] [--name N] [--advisor-only]``: the tpch suite's queries are the
workload; the advisor recommends indexes within a budget of 1x the source size; then the queries
run three ways, interleaved — plain Spark, the hand-picked indexes of ``suites/tpch.py``, the
advisor's — and the advisor's share of the hand-picked set's speedup is reported, with the
advisor's own run time and the load average before and after. Writes
``benchmarks/results/advisor-sf<SF>.{json,md}`` (``--advisor-only``: only the advisor's run time and
recommendations, no index built and no query run, into ``advisor-sf<SF>-advisor-only.{json,md}``).
``--name`` names the work directory (``<data-dir>/work-<name>``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.context import BenchContext, local_session
from benchmarks.harness import Variant, run_queries
from benchmarks.suites.tpch import FILE_TABLES, QUERIES, FileViews, build_indexes, load_queries
from benchmarks.tpch_data import prepare
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)

HERE = Path(__file__).resolve().parent


def _loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=0.01)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--data-dir", default=str(HERE / "data"))
    parser.add_argument("--results-dir", default=str(HERE / "results"))
    parser.add_argument("--name", default=None, help="work directory name (default advisor-sf<SF>)")
    parser.add_argument("--advisor-only", action="store_true", help="time the advisor only; build and run nothing")
    args = parser.parse_args(argv)
    name = f"advisor-sf{args.sf:g}" + ("-advisor-only" if args.advisor_only else "")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    data_dir = Path(args.data_dir).resolve()
    work_dir = data_dir / f"work-{args.name or name}"
    shutil.rmtree(work_dir, ignore_errors=True)
    builder = local_session("4g", max(4, args.buckets), f"hyperspace-bench-{name}", work_dir / "warehouse")
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    load_before = _loadavg()
    try:
        lake = prepare(spark, data_dir, args.sf, args.files)
        ctx = BenchContext(spark, lake, work_dir, args.runs, args.buckets, False, None)
        conf = HyperspaceConfig(spark)
        hs = Hyperspace(spark)

        # The hand-picked set, built by the tpch suite's own code (into work_dir/indexes).
        hand_path = str(work_dir / "indexes")
        hand = [] if args.advisor_only else build_indexes(spark, ctx)

        views = FileViews(spark, ctx)
        views.register()
        queries = {q: sql for q, (sql, _) in load_queries().items()}
        source_bytes = sum(
            f.stat().st_size for t in FILE_TABLES if t != "lineitem_csv" for f in Path(lake.path(t)).rglob("*.parquet")
        ) + sum(f.stat().st_size for f in Path(lake.lineitem_csv).rglob("*") if f.is_file())

        advisor_path = str(work_dir / "advisor-indexes")
        conf.system_path = advisor_path
        started = time.perf_counter()
        recs = hs.recommend([queries[q] for q in QUERIES], budget_bytes=source_bytes)
        advisor_seconds = time.perf_counter() - started
        ctx.log(f"advisor: {advisor_seconds:.1f}s\n{recs}")
        if args.advisor_only:
            load_after = _loadavg()
            _write_advisor_only(args, name, source_bytes, advisor_seconds, recs, load_before, load_after)
            return 0
        started = time.perf_counter()
        recs.create_all()
        advisor_build_seconds = time.perf_counter() - started
        advisor_sizes = {r["name"]: r["sizeInBytes"] for r in hs.indexes().select("name", "sizeInBytes").collect()}

        def using(path: str | None) -> None:
            views.register()
            if path is None:
                disable_hyperspace(spark)
            else:
                conf.system_path = path
                enable_hyperspace(spark)

        variants = [
            Variant("spark", lambda q: using(None)),
            Variant("handpicked", lambda q: using(hand_path)),
            Variant("advisor", lambda q: using(advisor_path)),
        ]
        measured = run_queries(spark, queries, variants, args.runs, ctx.log)
        disable_hyperspace(spark)
        load_after = _loadavg()
    finally:
        spark.stop()

    totals = {v: sum(per[v].median for per in measured.values()) for v in ("spark", "handpicked", "advisor")}
    hand_gain = totals["spark"] - totals["handpicked"]
    share = (totals["spark"] - totals["advisor"]) / hand_gain if hand_gain > 0 else float("nan")
    result: dict[str, Any] = {
        "sf": args.sf,
        "runs": args.runs,
        "loadavgBefore": load_before,
        "loadavgAfter": load_after,
        "sourceBytes": source_bytes,
        "advisorSeconds": advisor_seconds,
        "advisorBuildSeconds": advisor_build_seconds,
        "recommended": [
            {
                "name": r.config.name,
                "kind": r.kind,
                "indexed": list(r.indexed_columns),
                "included": list(r.included_columns),
                "source": r.source,
                "estimatedSizeBytes": r.estimated_size_bytes,
                "sizeInBytes": advisor_sizes.get(r.config.name),
                "queries": [q.query for q in r.queries],
            }
            for r in recs.indexes
        ],
        "rejected": [
            {
                "name": r.name,
                "kind": r.kind,
                "estimatedSizeBytes": r.estimated_size_bytes,
                "reason": r.reason,
                "detail": r.detail,
            }
            for r in recs.rejected
        ],
        "handpicked": hand,
        "totals": totals,
        "shareOfHandpickedSpeedup": share,
        "queries": {
            q: {v: {"median": m.median, "seconds": m.seconds, "facts": m.facts} for v, m in per.items()}
            for q, per in measured.items()
        },
    }
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    label = {queries[q].strip(): q for q in QUERIES}
    lines = [
        f"# The index advisor on the TPC-H suite, SF {args.sf:g}",
        "",
        f"Written by `python -m benchmarks.advisor_bench --sf {args.sf:g} --runs {args.runs}`; "
        f"load average {' / '.join(f'{x:.2f}' for x in load_before)} before, "
        f"{' / '.join(f'{x:.2f}' for x in load_after)} after (`/proc/loadavg`, 1/5/15 min).",
        "",
        f"- Workload: the {len(QUERIES)} queries of `benchmarks/suites/tpch.py`, weight 1 each; budget 1x the "
        f"source size ({source_bytes:,} bytes).",
        f"- Advisor run time: {advisor_seconds:.1f} s; building its {len(recs)} indexes: {advisor_build_seconds:.1f} s.",
        f"- Sum of medians ({args.runs} interleaved runs per query and variant): Spark {totals['spark']:.3f} s, "
        f"hand-picked {totals['handpicked']:.3f} s, advisor {totals['advisor']:.3f} s.",
        f"- The advisor's indexes give {share:.0%} of the hand-picked set's speedup (target >= 80%).",
        "",
        "## Recommended (rank order) vs hand-picked",
        "",
        "| rank | index | kind | indexed | included | estimated bytes | built bytes | queries served |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(result["recommended"], start=1):
        served = ", ".join(label.get(q, q) for q in r["queries"])
        lines.append(
            f"| {i} | {r['name']} | {r['kind']} | {', '.join(r['indexed'])} | {', '.join(r['included'])} | "
            f"{r['estimatedSizeBytes']:,} | {r['sizeInBytes'] or 0:,} | {served} |"
        )
    lines += [
        "",
        "Hand-picked: " + ", ".join(f"{h['index']} ({h['table']}, {h['sizeInBytes']:,} bytes)" for h in hand),
        "",
    ]
    lines += [
        "## Considered, not recommended",
        "",
        "| index | kind | estimated bytes | reason | detail |",
        "|---|---|---|---|---|",
    ]
    for r in result["rejected"]:
        detail = r["detail"].replace("|", "/")
        lines.append(f"| {r['name']} | {r['kind']} | {r['estimatedSizeBytes']:,} | {r['reason']} | {detail} |")
    lines += [""]
    lines += ["## Per query (median seconds)", "", "| query | spark | hand-picked | advisor |", "|---|---|---|---|"]
    for q, per in measured.items():
        lines.append(
            f"| {q} | {per['spark'].median:.3f} | {per['handpicked'].median:.3f} | {per['advisor'].median:.3f} |"
        )
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / name}.md; share {share:.0%}; medians {statistics.fmean(totals.values()):.3f}")
    return 0


def _write_advisor_only(
    args: argparse.Namespace,
    name: str,
    source_bytes: int,
    seconds: float,
    recs: Any,
    load_before: list[float],
    load_after: list[float],
) -> None:
    """The advisor's run time and its recommendations, when nothing is built or run."""
    label = {sql.strip(): q for q, (sql, _) in load_queries().items()}
    recommended = [
        {
            "name": r.config.name,
            "kind": r.kind,
            "indexed": list(r.indexed_columns),
            "included": list(r.included_columns),
            "estimatedSizeBytes": r.estimated_size_bytes,
            "queries": [label.get(q.query.strip(), q.query) for q in r.queries],
        }
        for r in recs.indexes
    ]
    result = {
        "sf": args.sf,
        "loadavgBefore": load_before,
        "loadavgAfter": load_after,
        "sourceBytes": source_bytes,
        "advisorSeconds": seconds,
        "advisorElapsedMs": recs.elapsed_ms,
        "recommended": recommended,
    }
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# The index advisor's run time on the TPC-H suite, SF {args.sf:g}",
        "",
        f"Written by `python -m benchmarks.advisor_bench --sf {args.sf:g} --files {args.files} --advisor-only`; "
        f"load average {' / '.join(f'{x:.2f}' for x in load_before)} before, "
        f"{' / '.join(f'{x:.2f}' for x in load_after)} after (`/proc/loadavg`, 1/5/15 min).",
        "",
        f"- Workload: the {len(QUERIES)} queries of `benchmarks/suites/tpch.py`, weight 1 each; budget 1x the "
        f"source size ({source_bytes:,} bytes).",
        f"- Advisor run time: {seconds:.1f} s (target <= 30 s at SF1); {len(recommended)} indexes recommended, "
        f"~{sum(r['estimatedSizeBytes'] for r in recommended):,} bytes estimated.",
        "",
        "| rank | index | kind | indexed | included | estimated bytes | queries served |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(recommended, start=1):
        lines.append(
            f"| {i} | {r['name']} | {r['kind']} | {', '.join(r['indexed'])} | {', '.join(r['included'])} | "
            f"{r['estimatedSizeBytes']:,} | {', '.join(r['queries'])} |"
        )
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / name}.md; advisor {seconds:.1f}s")


if __name__ == "__main__":
    sys.exit(main())
