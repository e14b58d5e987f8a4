"""`make demo` runs `python -m hyperspace.demo`; this runs it small, in its own process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_demo_prints_its_report(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hyperspace.demo", "--data-dir", str(tmp_path),
         "--rows", "20000", "--files", "4", "--runs", "1"],
        capture_output=True, text=True, timeout=300, cwd=str(REPO),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = result.stdout
    assert "Hyperspace for Spark 4 — demo report" in report
    assert "rewriting enabled      before enable_hyperspace: False, after: True" in report
    assert "same result on/off     True" in report
    assert "20,000 rows in 4 Parquet files" in report
    assert "index                  orders_by_customer: CoveringIndex on ['customer_id']" in report
    assert "state ACTIVE" in report
    assert "0:CREATING → 1:ACTIVE → 2:DELETING → 3:DELETED → 4:RESTORING → 5:ACTIVE" in report
