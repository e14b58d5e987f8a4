"""`make bench-quick` as part of the test suite: every benchmark suite runs end to end at a tiny
scale and writes its three result files. Nothing about timings is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, versions

pytestmark = [pytest.mark.slow, pytest.mark.ivy]


def test_quick_benchmark_run_writes_the_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--name",
            "smoke",
            "--data-dir",
            str(REPO / "benchmarks" / "data"),
            "--results-dir",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=str(REPO),
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = (results / "smoke.md").read_text()
    raw = json.loads((results / "smoke.json").read_text())
    assert (results / "smoke.png").stat().st_size > 0
    queries = raw["suites"]["tpch"]["queries"]
    assert set(queries) == {
        "point_lookup",
        "star_lookup",
        "in_list",
        "csv_lookup",
        "date_range",
        "q6",
        "q6_zorder",
        "q3",
        "q17",
        "join",
        "join_filtered",
        "broadcast_join",
        "no_index",
    }
    for per in queries.values():
        assert set(per) == {"spark", "hyperspace", "tuned"}
        assert per["spark"]["facts"]["indexes"] == []  # without Hyperspace no index is read
    assert queries["point_lookup"]["hyperspace"]["facts"]["indexes"] == ["li_orderkey"]
    # SELECT * is answered by the fully covering index; the narrow lookup keeps the narrow one.
    assert queries["star_lookup"]["hyperspace"]["facts"]["indexes"] == ["li_all_orderkey"]
    # The two-column range reads the Z-order index, fewer files than the source.
    zorder = queries["q6_zorder"]["hyperspace"]["facts"]
    assert zorder["indexes"] == ["li_zorder_shipdate_discount"], zorder
    # At this scale Spark broadcasts orders and part: those joins are left to Spark, and only the
    # streamed lineitem side reads the index led by the join key (its probes in key order).
    assert queries["join"]["hyperspace"]["facts"]["indexes"] == ["li_orderkey"]
    assert queries["broadcast_join"]["hyperspace"]["facts"]["indexes"] == ["li_partkey"]
    assert queries["no_index"]["hyperspace"]["facts"]["indexes"] == []
    assert raw["environment"]["scaleFactor"] == 0.01
    assert "| point_lookup |" in report and "## Optimizer overhead" in report
    assert set(raw["suites"]["overhead"]["planning"]["q6_no_index"]) == {"0", "10", "100"}
    # A lookup of one small index file is read in the driver (no job) unless that is turned off.
    seek = raw["suites"]["seek"]["queries"]["star_lookup"]
    assert seek["hyperspace"]["jobs"] == 0 and seek["hyperspace_job"]["jobs"] >= 1, seek
    assert seek["hyperspace"]["rowCount"] > 0 and "## Tiny seeks" in report
    # An aggregate of one order's lines (one small index file) plans no shuffle unless turned off.
    onepart = raw["suites"]["onepart"]["queries"]["order_total"]
    assert onepart["hyperspace"]["exchanges"] == 0 and onepart["hyperspace_shuffle"]["exchanges"] == 1, onepart
    # ... and is computed in the driver (no job) unless the driver-side read is turned off.
    assert onepart["hyperspace"]["jobs"] == 0 and onepart["hyperspace_job"]["jobs"] >= 1, onepart
    assert "## Small aggregates over an index" in report
    indexed = raw["suites"]["indexed"]
    assert set(indexed["joins"]) == {"100", "1000", "5000"} and indexed["rows"] == 20_000
    assert indexed["memory"]["indexBlockManagerBytes"] > 0 and "## Indexed DataFrame" in report
    # Iceberg runs on the lines with a runtime for it, and says why not on the others.
    iceberg = raw["suites"]["lakehouse"]["formats"]["iceberg"]
    if versions()["iceberg"] == "none":
        assert "no Spark runtime" in iceberg["skipped"], iceberg
    else:
        assert iceberg["queries"]["point_lookup"]["Hyperspace"]["facts"]["indexes"] == ["iceberg_li_orderkey"]
    # Spark broadcasts orders (the join is left to it, lineitem streamed from its index in key
    # order); with the merge hint both indexes are merged.
    delta = raw["suites"]["lakehouse"]["formats"]["delta"]["queries"]
    assert delta["join"]["Hyperspace"]["facts"]["indexes"] == ["delta_li_orderkey"]
    assert sorted(delta["join_merge"]["Hyperspace"]["facts"]["indexes"]) == [
        "delta_li_orderkey",
        "delta_orders_orderkey",
    ]
