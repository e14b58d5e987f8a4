#!/usr/bin/env python3
"""Where the time of a build and test run went: its phases and its slowest suites and modules.

    report.py [--total SECONDS]      the whole run (.ci/run)
    report.py --units --line LINE    one line's suites and modules only (the end of `make test`)

Reads what the run recorded under target/: ``ci-phases.jsonl`` (``.ci/phase.py``, one line per
phase), ``spark-<line>/suite-times.tsv`` (one line per Spark suite, from
``io.hyperspace.testing.SuiteTimes`` around each SparkSessionSuite) and ``pytest-times*.tsv``
(one line per Python test, from tests/conftest.py). Prints the phases, the 15 slowest suites and
modules with their wall and CPU seconds, and flags every suite or module over its budget (a
report, never a failure: wall time on a shared machine is not a test's result). Only the
standard library.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "target"

# A suite or module over this many wall seconds in one run is flagged: about 5% of the 30-minute
# CI budget, so that one suite cannot quietly become a sixth of the run.
SUITE_BUDGET_S = 90.0
SLOWEST = 15


def phases() -> list[dict[str, object]]:
    path = TARGET / "ci-phases.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def units(line_only: str | None) -> list[tuple[str, float, float]]:
    """(name, wall s, cpu s) per Scala suite and per pytest module, labelled with the run; with
    ``line_only``, that line's sbt suites and the source tree's pytest modules only."""
    found: list[tuple[str, float, float]] = []
    for tsv in sorted(TARGET.glob(f"spark-{line_only or '*'}/suite-times.tsv")):
        line = tsv.parent.name.removeprefix("spark-")
        for row in tsv.read_text().splitlines():
            name, wall, cpu, outcome = row.split("\t")
            short = name.removeprefix("io.hyperspace.") + ("" if outcome == "ok" else f" ({outcome})")
            found.append((f"sbt {line}  {short}", float(wall), float(cpu)))
    for tsv in sorted(TARGET.glob("pytest-times.tsv" if line_only else "pytest-times*.tsv")):
        label = tsv.stem.removeprefix("pytest-times").strip("-") or "source"
        per_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for row in tsv.read_text().splitlines():
            module, wall, cpu = row.split("\t")
            per_module[module][0] += float(wall)
            per_module[module][1] += float(cpu)
        found += [(f"pytest {label}  {m}", w, c) for m, (w, c) in per_module.items()]
    return found


def main(argv: list[str]) -> int:
    total = float(argv[argv.index("--total") + 1]) if "--total" in argv else None
    line_only = argv[argv.index("--line") + 1] if "--line" in argv else None
    recorded = [] if "--units" in argv else phases()
    if recorded:
        print(
            "\n== Phases (wall / CPU seconds of the processes it waited for / the machine's busy CPU seconds"
            " / CPU seconds of every process it started, where a cgroup counts them) =="
        )
        for p in recorded:
            steps = ", ".join(f"{k} {v} s" for k, v in p.get("steps", {}).items())  # type: ignore[union-attr]
            status = "" if p["exit"] == 0 else f"  EXIT {p['exit']}"
            machine = p.get("machine_cpu_s")
            machine_cell = f"{machine:>8.0f}" if isinstance(machine, (int, float)) else f"{'-':>8}"
            tree = p.get("tree_cpu_s")
            tree_cell = f"{tree:>8.0f}" if isinstance(tree, (int, float)) else f"{'-':>8}"
            print(
                f"{p['phase']:<28} {p['wall_s']:>8.0f} {p['cpu_s']:>8.0f} {machine_cell} {tree_cell}{status}  {steps}"
            )
        summed = sum(float(p["wall_s"]) for p in recorded)  # type: ignore[arg-type]
        print(f"{'phases together':<28} {summed:>8.0f}")
    if total is not None:
        print(f"{'whole run':<28} {total:>8.0f}   ({total / 60:.1f} min)")

    found = units(line_only)
    if found:
        print(f"\n== The {SLOWEST} slowest suites and modules (wall / CPU seconds) ==")
        for name, wall, cpu in sorted(found, key=lambda u: -u[1])[:SLOWEST]:
            print(f"{wall:>7.0f} {cpu:>7.0f}  {name}")
        by_run: dict[str, float] = defaultdict(float)
        for name, wall, _ in found:
            by_run[name.split("  ", 1)[0]] += wall
        print(
            "suite wall seconds per run (summed over JVMs and workers): "
            + ", ".join(f"{k} {v:.0f}" for k, v in sorted(by_run.items()))
        )
        over = [(name, wall) for name, wall, _ in found if wall > SUITE_BUDGET_S]
        print(f"\n== Over the per-suite budget of {SUITE_BUDGET_S:.0f} s: {len(over)} ==")
        for name, wall in sorted(over, key=lambda u: -u[1]):
            print(f"{wall:>7.0f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
