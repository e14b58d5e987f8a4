"""`make demo` runs `python -m hyperspace.demo`; this runs it small, in its own process, and checks
the report's structure: every query measured, read through the indexes the plan says it used,
with the same rows as without them. Timings are printed, never asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, short_jvm_env

pytestmark = [pytest.mark.slow, pytest.mark.ivy]

# The report's query titles and the indexes each query's plan must read.
EXPECTED_INDEXES = {
    "lookup (one order)": {"lineitem_by_orderkey"},
    "range (one week)": {"lineitem_by_shipdate"},
    "join + aggregate": {"lineitem_by_orderkey", "orders_by_orderkey"},
}


def _sections(report: str) -> dict[str, str]:
    """The report split at its ruler lines, each query's section keyed by its title."""
    out = {}
    for section in re.split(r"^-{78}$", report, flags=re.M):
        for title in EXPECTED_INDEXES:
            if section.lstrip("\n").startswith(title):
                out[title] = section
    return out


def _run_demo(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperspace.demo", "--data-dir", str(data_dir), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(REPO),
        # The size preset through the environment, the way a user would shrink `make demo`.
        env=short_jvm_env(HYPERSPACE_DEMO_SIZE="small"),
    )


def test_demo_prints_its_report(tmp_path: Path) -> None:
    result = _run_demo(tmp_path / "demo")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = result.stdout
    assert "Hyperspace for Spark 4 — demo report" in report
    assert "rewriting enabled      before enable_hyperspace: False, after: True" in report
    assert re.search(r"lineitem: [\d,]+ rows in 4 Parquet files, orders: 20,000 rows in 1 ", report), report
    assert "generated in " in report  # a fresh directory: nothing to reuse
    assert "orders_by_orderkey: 0:CREATING → 1:ACTIVE → 2:DELETING → 3:DELETED → 4:RESTORING → 5:ACTIVE" in report

    sections = _sections(report)
    assert set(sections) == set(EXPECTED_INDEXES), report
    for title, expected in EXPECTED_INDEXES.items():
        section = sections[title]
        assert re.search(
            r"^  time +no index [\d.]+s, Hyperspace [\d.]+s: speedup [\d.]+× \(medians of 1 interleaved runs;"
            r" load [\d.]+\)$",
            section,
            flags=re.M,
        ), section
        assert re.search(r"^  files read +[\d,]+ → [\d,]+$", section, flags=re.M), section
        assert re.search(r"^  bytes read +[\d,]+ → [\d,]+$", section, flags=re.M), section
        assert re.search(r"^  rows equal +True \([\d,]+ row\(s\)", section, flags=re.M), section
        used = re.search(r"^  Indexes used +(.+)$", section, flags=re.M)
        assert used is not None, section
        assert set(used.group(1).split(", ")) == expected, section
        assert "why not:" not in section, section
        for index in expected:  # the explain diff shows the index scans that replaced the source's
            scan = rf"FileScan Hyperspace\(Type: CI, Name: {index},"
            # The brief diff tags the scan with its plan; the full explain (the join) marks it.
            assert re.search(rf"^    with index: +{scan}|^    <----.*{scan}", section, flags=re.M), section
    # Only the join's explain is printed in full: both plans and the operator counts.
    join = sections["join + aggregate"]
    assert "Plan without indexes:" in join and "Physical operator stats:" in join, join
    assert re.search(r"\(Exchange 3 → 1\)", join), join
    assert "Plan without indexes:" not in sections["lookup (one order)"]
    assert re.search(r"^    without: +FileScan parquet ", sections["lookup (one order)"], flags=re.M)
    assert re.search(
        r"^demo wall time +[\d.]+s \(load [\d.]+\): Spark start [\d.]+s, lake [\d.]+s", report, flags=re.M
    ), report

    # The Delta part: an index over a Delta table, refreshed from the log after a DELETE.
    assert re.search(
        r"delta\s+orders_delta: DELETE \(deletion vectors\), refresh incremental: \d+ appended / \d+ deleted "
        r"file\(s\), from 1 commit\(s\) of the delta log \(versions 1 to 1\); lookup through the index: "
        r"same result True",
        report,
    ), report
    # The builds' progress bar, on stderr.
    assert "create index 'lineitem_by_orderkey'" in result.stderr


def test_a_generated_lake_is_reused_only_for_the_same_generator_version_and_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hyperspace import demo

    stamp = demo.lake_stamp(1000, 4)
    root = demo.lake_root(tmp_path, stamp)
    root.mkdir()
    assert not demo.reusable(root, stamp)  # no marker: generation did not finish
    (root / "_READY").write_text(stamp)
    assert demo.reusable(root, stamp)
    assert demo.lake_root(tmp_path, demo.lake_stamp(1000, 8)) != root
    assert demo.lake_root(tmp_path, demo.lake_stamp(2000, 4)) != root
    monkeypatch.setattr(demo, "GENERATOR_VERSION", demo.GENERATOR_VERSION + 1)
    newer = demo.lake_stamp(1000, 4)
    assert demo.lake_root(tmp_path, newer) != root
    # Even at the same place (a colliding key), a marker written for other parameters is not trusted.
    assert not demo.reusable(root, newer)
