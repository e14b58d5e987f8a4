"""`make bench-quick` as part of the test suite: every benchmark suite runs end to end at a tiny
scale and writes its result files. Nothing about timings is asserted.

Two runs: the lakehouse suite, the only one resolving Delta and Iceberg through Ivy, in the ``ivy``
group; the other nine in one process (a process per suite or two paid a JVM start and a warm-up
each: four runs took half as long again as two on CI's two cores).

CI runs the lakehouse run, which takes the harness, the report and the plan facts end to end; the
run of the other nine is marked ``full`` (``make test-full``, ``make bench-quick``): it was the
longest unit of ``make test`` (657 s of a worker's 1,200 on 2026-12-02, load 10-18), and what it
asserts of the product at benchmark scale (which index a lookup, a Z-order range and a join read,
the driver-side seek, the one-partition aggregate, the split index over CSV) the Scala suites
check in every run (FilterAndJoinRuleSuite, ZOrderCoveringIndexSuite, BroadcastProbeIndexSuite,
DriverIndexReadSuite, OnePartitionAggregateSuite, SplitIndexFileLevelSuite)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, short_jvm_env, versions

pytestmark = pytest.mark.slow


def quick_run(tmp_path: Path, suites: str, *extra: str) -> tuple[str, dict[str, Any]]:
    """Runs ``python -m benchmarks --quick --suite <suites>``; its report's text and raw results.
    Each run has a name of its own: the name is also its work directory's, which a run clears first."""
    results = tmp_path / "results"
    name = "smoke-" + suites.replace(",", "-")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--suite",
            suites,
            "--name",
            name,
            "--data-dir",
            str(REPO / "benchmarks" / "data"),
            "--results-dir",
            str(results),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=str(REPO),
        env=short_jvm_env(),
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    raw = json.loads((results / f"{name}.json").read_text())
    assert set(raw["suites"]) == set(suites.split(","))
    assert raw["environment"]["scaleFactor"] == 0.01
    return (results / f"{name}.md").read_text(), raw


CORE_SUITES = "tpch,seek,indexed,maintenance,overhead,split,onepart,dataskipping,broadcast"


@pytest.mark.full
@pytest.mark.xdist_group("bench-smoke")
def test_quick_run_of_every_suite_but_the_lakehouse(tmp_path: Path) -> None:
    report, raw = quick_run(tmp_path, CORE_SUITES)
    assert (tmp_path / "results" / f"smoke-{CORE_SUITES.replace(',', '-')}.png").stat().st_size > 0
    check_tpch_and_seek(report, raw)
    check_indexed_maintenance_and_overhead(report, raw)
    check_split_onepart_dataskipping_and_broadcast(report, raw)


def check_tpch_and_seek(report: str, raw: dict[str, Any]) -> None:
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
    # The query no index or tuned table serves runs one plan three times: not compared with hand-tuned.
    same_plan = re.search(r"\(([\w, ]+): the same plan in every variant, not compared\)", report)
    assert same_plan and "no_index" in same_plan.group(1).split(", "), report
    assert "| point_lookup |" in report
    # A lookup of one small index file is read in the driver (no job) unless that is turned off.
    seek = raw["suites"]["seek"]["queries"]["star_lookup"]
    assert seek["hyperspace"]["jobs"] == 0 and seek["hyperspace_job"]["jobs"] >= 1, seek
    assert seek["hyperspace"]["rowCount"] > 0 and "## Tiny seeks" in report


def check_indexed_maintenance_and_overhead(report: str, raw: dict[str, Any]) -> None:
    indexed = raw["suites"]["indexed"]
    assert set(indexed["joins"]) == {"100", "1000", "5000"} and indexed["rows"] == 20_000
    assert indexed["memory"]["indexBlockManagerBytes"] > 0 and "## Indexed DataFrame" in report
    assert "## Maintenance and hybrid scan" in report
    # A quick run defines 5 and 20 indexes (benchmarks/suites/overhead.py), a full run 10 and 100.
    assert set(raw["suites"]["overhead"]["planning"]["q6_no_index"]) == {"0", "5", "20"}
    assert "## Optimizer overhead" in report


def check_split_onepart_dataskipping_and_broadcast(report: str, raw: dict[str, Any]) -> None:
    # An aggregate of one order's lines (one small index file) plans no shuffle unless turned off.
    onepart = raw["suites"]["onepart"]["queries"]["order_total"]
    assert onepart["hyperspace"]["exchanges"] == 0 and onepart["hyperspace_shuffle"]["exchanges"] == 1, onepart
    # ... and is computed in the driver (no job) unless the driver-side read is turned off.
    assert onepart["hyperspace"]["jobs"] == 0 and onepart["hyperspace_job"]["jobs"] >= 1, onepart
    # The CSV copy's point lookup seeks through the file-level split index.
    split = raw["suites"]["split"]["queries"]
    assert {"csv_point", "csv_in10", "csv_join2"} <= set(split), set(split)
    assert "used by this query" in split["csv_point"]["whyNot"], split["csv_point"]["whyNot"]
    for section in ("## Small aggregates over an index", "## Split index", "## Data skipping", "## Never slower"):
        assert section in report, section


@pytest.mark.ivy
def test_quick_lakehouse_suite(tmp_path: Path) -> None:
    _, raw = quick_run(tmp_path, "lakehouse")
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


# Issue #55's TPC-DS suite at SF 0.01 (`make bench-tpcds` runs it at SF1): a few of Spark's own
# TPC-DS queries with and without indexes, rows compared. Both runs are `full` (make test-full):
# the smaller, four star joins on date_dim and item with the hand-picked indexes, took 83 s wall at
# load 34-39 on 2026-12-04 (126 s for three queries at load 33-36; the data cached, a Spark start,
# five index builds and eight cold queries), over the ~60 s a CI unit may add; the advisor's choice
# over seven (the CTE reused in q1, a customer join, a query adaptive execution empties) took 204 s
# at load 16-19, and the Scala suites check the advisor on every run.
TPCDS_CI_QUERIES = "q3,q19,q42,q55"
TPCDS_FULL_QUERIES = "q1,q3,q7,q19,q42,q55,q96"


def tpcds_run(tmp_path: Path, queries: str, index_sets: str) -> tuple[str, dict[str, Any]]:
    """The tpcds suite's quick run of ``queries`` with ``index_sets``; checks what every run must hold:
    rows equal in every variant, no index read without Hyperspace, bytes read in the plan facts."""
    has_jar = [sys.executable, "-c", "from benchmarks.suites.tpcds import query_jar; query_jar()"]
    if subprocess.run(has_jar, cwd=str(REPO), capture_output=True).returncode != 0:
        # Spark's test-sources jar not fetched yet on this machine: the build's sbt task fetches it.
        line = ".".join(versions()["spark"].split(".")[:2])
        subprocess.run(["make", "-s", "sql-corpus-jar", f"SPARK={line}"], cwd=str(REPO), check=True, timeout=900)
    report, raw = quick_run(tmp_path, "tpcds", "--queries", queries, "--index-sets", index_sets)
    tpcds = raw["suites"]["tpcds"]
    assert set(tpcds["queries"]) == set(queries.split(",")), set(tpcds["queries"])
    failures = {q: e["failures"] for q, e in tpcds["queries"].items() if e["failures"]}
    assert not failures, failures  # rows equal with and without indexes, no variant failed
    assert tpcds["indexSets"] == index_sets.split(",")
    for q, e in tpcds["queries"].items():
        assert e["variants"]["spark"]["facts"]["indexes"] == [], q  # without Hyperspace no index is read
    for variant in tpcds["indexSets"]:  # some plan reads one of each set's indexes
        assert any(e["variants"][variant]["facts"]["indexes"] for e in tpcds["queries"].values()), variant
    assert "Apache License 2.0" in report and "## TPC-DS (SF 0.01)" in report
    assert (tmp_path / "results" / "smoke-tpcds.png").stat().st_size > 0
    return report, tpcds


@pytest.mark.full
@pytest.mark.xdist_group("bench-smoke-tpcds")
def test_quick_tpcds_suite_with_handpicked_indexes(tmp_path: Path) -> None:
    _, tpcds = tpcds_run(tmp_path, TPCDS_CI_QUERIES, "handpicked")
    assert {h["index"] for h in tpcds["handpicked"]} >= {"dd_date_sk", "item_sk", "customer_sk"}
    # q3 and q42 join store_sales to date_dim and item: the plans read bytes and broadcast both.
    for q in ("q3", "q42"):
        facts = tpcds["queries"][q]["variants"]["spark"]["facts"]
        assert facts["bytesRead"] > 0 and facts["joins"].get("BroadcastHashJoin", 0) >= 2, (q, facts)


@pytest.mark.full
@pytest.mark.xdist_group("bench-smoke-tpcds-advisor")
def test_quick_tpcds_suite_with_the_advisors_indexes(tmp_path: Path) -> None:
    report, tpcds = tpcds_run(tmp_path, TPCDS_FULL_QUERIES, "advisor,handpicked")
    advisor = tpcds["advisor"]
    assert advisor["error"] is None and advisor["seconds"] > 0 and advisor["indexes"], advisor
    assert "- Advisor: " in report
    # q1's CTE is computed once and its exchange reused when no index is used.
    assert tpcds["queries"]["q1"]["variants"]["spark"]["facts"]["reusedExchanges"] >= 1
