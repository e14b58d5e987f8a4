"""`make demo` runs `python -m hyperspace.demo`; this runs it small, in its own process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.ivy]


def test_demo_prints_its_report(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hyperspace.demo",
            "--data-dir",
            str(tmp_path / "demo"),
            "--rows",
            "50000",
            "--files",
            "4",
            "--runs",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(REPO),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = result.stdout
    assert "Hyperspace for Spark 4 — demo report" in report
    assert "rewriting enabled      before enable_hyperspace: False, after: True" in report
    assert "orders: 50,000 rows in 4 Parquet files" in report
    assert "orders_by_customer: 0:CREATING → 1:ACTIVE → 2:DELETING → 3:DELETED → 4:RESTORING → 5:ACTIVE" in report
    assert re.search(r"lookup \(3 customers\)\s+[\d.]+s\s+[\d.]+s\s+[\d.]+×  True", report), report
    assert re.search(r"join \+ aggregate\s+[\d.]+s\s+[\d.]+s\s+[\d.]+×  True", report), report
    assert "FileScan Hyperspace(Type: CI, Name: orders_by_customer, LogVersion: 5)" in report
    assert "(Exchange 3 → 1)" in report
    # The Delta part: an index over a Delta table, refreshed from the log after a DELETE.
    assert re.search(
        r"delta\s+orders_delta: DELETE \(deletion vectors\), refresh incremental: \d+ appended / \d+ deleted "
        r"file\(s\), from 1 commit\(s\) of the delta log \(versions 1 to 1\); lookup through the index: "
        r"same result True",
        report,
    ), report
    # The builds' progress bar, on stderr.
    assert "create index 'orders_by_customer'" in result.stderr
