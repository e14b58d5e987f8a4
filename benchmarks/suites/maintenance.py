"""Index maintenance over a changing table: the paper's Figure 13 on this machine.

A copy of lineitem spread over many files is indexed once (with lineage). Then, for appends of
1%, 10% and 30% of its files and deletes of 1% and 10%, the queries run with no index and with
the stale index through hybrid scan (plus, at 10% appended, the stale index ignored — hybrid scan
off), side by side on the same data. The cost of every refresh mode is timed for the same changes:
incremental refresh must grow with the change, not with the table.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.harness import Measurement, Variant, run_queries
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace

QUERIES = {
    "lookup": """SELECT l_orderkey, l_partkey, l_quantity FROM mli
                 WHERE l_orderkey IN (7, 1000003, 2999908, 4500002, 5999971)""",
    "join": """SELECT o_orderpriority, count(*) AS n, sum(l_quantity) AS qty
               FROM mli JOIN morders ON l_orderkey = o_orderkey GROUP BY o_orderpriority""",
}

APPENDS = (0.01, 0.10, 0.30)
DELETES = (0.01, 0.10)
# The quick run's table has 20 files, where 1% and 10% both change a file or two: one change of
# each kind runs every scenario's and refresh's code (10% appended also has the ignored variant
# and the full refresh).
QUICK_APPENDS = (0.10,)
QUICK_DELETES = (0.10,)


class ChangingTable:
    """The benchmark's table and its changes: files copied in (appends) or moved out (deletes)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.held = root.parent / (root.name + "-held")
        self.held.mkdir(parents=True, exist_ok=True)

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.glob("*.parquet") if not p.name.startswith("appended-"))

    def append(self, fraction: float) -> int:
        base = self.files()
        n = max(1, round(len(base) * fraction))
        for i, f in enumerate(base[:n]):
            shutil.copy(f, self.root / f"appended-{i:05d}.parquet")
        return n

    def delete(self, fraction: float) -> int:
        base = self.files()
        n = max(1, round(len(base) * fraction))
        for f in base[-n:]:
            f.rename(self.held / f.name)
            crc = f.parent / f".{f.name}.crc"
            if crc.exists():
                crc.unlink()
        return n

    def undo(self) -> None:
        for f in self.root.glob("appended-*.parquet"):
            f.unlink()
        for f in self.held.glob("*.parquet"):
            f.rename(self.root / f.name)


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    hs = Hyperspace(spark)
    conf = HyperspaceConfig(spark)
    root = ctx.work_dir / "maintenance"
    shutil.rmtree(root, ignore_errors=True)
    conf.system_path = str(root / "indexes")
    conf.num_buckets = ctx.buckets
    files = 20 if ctx.quick else 200
    appends, deletes = (QUICK_APPENDS, QUICK_DELETES) if ctx.quick else (APPENDS, DELETES)
    table = ChangingTable(root / "lineitem")
    (
        spark.read.parquet(ctx.lake.path("lineitem"))
        .select("l_orderkey", "l_partkey", "l_quantity", "l_extendedprice", "l_shipdate")
        .repartition(files)
        .write.parquet(str(table.root))
    )
    orders = spark.read.parquet(ctx.lake.path("orders"))
    orders.createOrReplaceTempView("morders")

    def view() -> None:
        spark.read.parquet(str(table.root)).createOrReplaceTempView("mli")

    build = {
        "lineitem": _timed(
            lambda: hs.create_index(
                spark.read.parquet(str(table.root)),
                IndexConfig("mli_orderkey", ["l_orderkey"], ["l_partkey", "l_quantity"], lineage=True),
            )
        ),
        "orders": _timed(
            lambda: hs.create_index(orders, IndexConfig("morders_orderkey", ["o_orderkey"], ["o_orderpriority"]))
        ),
    }
    ctx.log(f"  indexes built: {build}")

    def variant(name: str, on: bool, hybrid: bool) -> Variant:
        def prepare(_: str) -> None:
            view()
            conf.hybrid_scan_enabled = hybrid
            (enable_hyperspace if on else disable_hyperspace)(spark)

        return Variant(name, prepare)

    no_index = variant("no index", on=False, hybrid=False)
    hybrid = variant("Hyperspace", on=True, hybrid=True)
    ignored = variant("stale index ignored", on=True, hybrid=False)
    conf.hybrid_scan_max_appended_ratio = 1.0
    conf.hybrid_scan_max_deleted_ratio = 1.0

    scenarios: dict[str, dict[str, dict[str, Measurement]]] = {}
    changed_files: dict[str, int] = {}

    def measure(label: str, variants: list[Variant]) -> None:
        ctx.log(f"  scenario {label}")
        scenarios[label] = run_queries(spark, QUERIES, variants, ctx.runs, ctx.log)

    measure("fully refreshed", [no_index, hybrid])
    for fraction in appends:
        label = f"{fraction:.0%} appended"
        changed_files[label] = table.append(fraction)
        measure(label, [no_index, hybrid] + ([ignored] if fraction == 0.10 else []))
        table.undo()
    for fraction in deletes:
        label = f"{fraction:.0%} deleted"
        changed_files[label] = table.delete(fraction)
        measure(label, [no_index, hybrid])
        table.undo()

    # Refresh costs. Each timed refresh starts from an index matching the unchanged table; the
    # change is undone afterwards and the index brought back in step (untimed unless noted).
    refresh: dict[str, dict[str, float]] = {}
    index = "mli_orderkey"
    for fraction in appends:
        label = f"{fraction:.0%} appended"
        costs = refresh.setdefault(label, {})
        table.append(fraction)
        costs["quick"] = _timed(lambda: hs.refresh_index(index, "quick"))
        costs["incremental"] = _timed(lambda: hs.refresh_index(index, "incremental"))
        table.undo()
        costs["incremental (deleting them again)"] = _timed(lambda: hs.refresh_index(index, "incremental"))
        if fraction == 0.10:
            table.append(fraction)
            costs["full"] = _timed(lambda: hs.refresh_index(index, "full"))
            table.undo()
            hs.refresh_index(index, "full")
        ctx.log(f"  refresh after {label}: " + ", ".join(f"{k} {v:.2f}s" for k, v in costs.items()))
    for fraction in deletes:
        label = f"{fraction:.0%} deleted"
        costs = refresh.setdefault(label, {})
        table.delete(fraction)
        costs["quick"] = _timed(lambda: hs.refresh_index(index, "quick"))
        costs["incremental"] = _timed(lambda: hs.refresh_index(index, "incremental"))
        table.undo()
        hs.refresh_index(index, "incremental")
        ctx.log(f"  refresh after {label}: " + ", ".join(f"{k} {v:.2f}s" for k, v in costs.items()))
    disable_hyperspace(spark)
    conf.hybrid_scan_enabled = False

    out = {
        "files": files,
        "buildSeconds": build,
        "changedFiles": changed_files,
        "scenarios": {
            label: {
                q: {v: {"median": m.median, "min": m.low, "max": m.high, "facts": m.facts} for v, m in per.items()}
                for q, per in queries.items()
            }
            for label, queries in scenarios.items()
        },
        "refreshSeconds": refresh,
    }
    out["markdown"] = markdown(out)
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        "## Maintenance and hybrid scan (Figure 13)",
        "",
        f"lineitem (5 columns) in {result['files']} files, indexed on l_orderkey with lineage; "
        "orders indexed on o_orderkey. Each scenario changes the table, then runs the queries "
        "with no index and with the stale index (hybrid scan) side by side; seconds are medians "
        "(min–max); the ratio is no index / Hyperspace on the same data.",
        "",
        "| scenario | files changed | query | no index | Hyperspace | speedup | stale index ignored |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, queries in result["scenarios"].items():
        for q, per in queries.items():
            n, h = per["no index"], per["Hyperspace"]
            ign = per.get("stale index ignored")
            ignored = f"{ign['median']:.3f}" if ign else "—"
            lines.append(
                f"| {label} | {result['changedFiles'].get(label, 0)} | {q} "
                f"| {n['median']:.3f} ({n['min']:.2f}–{n['max']:.2f}) "
                f"| {h['median']:.3f} ({h['min']:.2f}–{h['max']:.2f}) | {n['median'] / h['median']:.2f}× "
                f"| {ignored} |"
            )
    lines += [
        "",
        "### Refresh cost (seconds, one run each)",
        "",
        "| change | " + " | ".join(["quick", "incremental", "incremental (deleting them again)", "full"]) + " |",
        "|---|---|---|---|---|",
    ]
    for label, costs in result["refreshSeconds"].items():
        cells = [
            f"{costs[m]:.2f}" if m in costs else "—"
            for m in ("quick", "incremental", "incremental (deleting them again)", "full")
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    build = result["buildSeconds"]
    lines += ["", f"Index build: lineitem {build['lineitem']:.1f}s, orders {build['orders']:.1f}s.", ""]
    return lines
