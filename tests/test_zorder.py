"""The Z-order covering index from Python: create, a range query that reads only matching files, refresh, delete."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    ZOrderCoveringIndexConfig,
    disable_hyperspace,
    enable_hyperspace,
    index_kinds,
)
from hyperspace import log as hslog


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(work_dir / "zorder-indexes"), zorder_target_file_size=4096):
        yield Hyperspace(spark)


def _write(spark: SparkSession, path: str, start: int, end: int, mode: str = "error") -> None:
    (
        spark.range(start, end, 1, 3)
        .selectExpr(
            "id",
            "CAST(pmod(hash(id), 1000) AS DOUBLE) / 10 AS x",
            "DATE_ADD(DATE'2024-01-01', CAST(pmod(hash(id, 1), 365) AS INT)) AS day",
        )
        .write.mode(mode)
        .parquet(path)
    )


def _run(spark: SparkSession, query: Callable[[], DataFrame]) -> tuple[list[tuple[object, ...]], str]:
    """The rows of ``query`` with Hyperspace on (checked equal to the rows with it off) and its plan."""
    disable_hyperspace(spark)
    expected = sorted(map(tuple, query().collect()))
    enable_hyperspace(spark)
    try:
        df = query()
        actual = sorted(map(tuple, df.collect()))
        plan = df._jdf.queryExecution().executedPlan().toString()
    finally:
        disable_hyperspace(spark)
    assert actual == expected
    return actual, plan


def test_config_spellings_and_json() -> None:
    config = ZOrderCoveringIndexConfig("z", ["a", "b"], ["c"])
    assert config == ZOrderCoveringIndexConfig(indexName="z", indexedColumns=["a", "b"], includedColumns=["c"])
    assert config.kind_name == index_kinds.ZORDER_COVERING == "ZOrderCoveringIndex"
    assert json.loads(config.to_json()) == {
        "name": "z",
        "indexedColumns": ["a", "b"],
        "includedColumns": ["c"],
        "lineage": None,
    }
    assert repr(config) == "ZOrderCoveringIndexConfig('z', ['a', 'b'], ['c'])"
    with pytest.raises(HyperspaceException, match="needs indexed columns"):
        ZOrderCoveringIndexConfig("z")


def test_create_query_refresh_delete(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    path = str(work_dir / "zorder-source")
    _write(spark, path, 0, 3000)
    hs.create_index(spark.read.parquet(path), ZOrderCoveringIndexConfig("zxd", ["x", "day"], ["id"], lineage=True))
    row = hs.index("zxd").first()
    assert row["kind"] == "ZOrderCoveringIndex" and row["kindAbbr"] == "ZCI"
    files = row["numIndexFiles"]
    assert files > 4

    def query() -> DataFrame:
        return spark.read.parquet(path).where("x BETWEEN 10 AND 15 AND day < DATE'2024-03-01'").select("id", "x")

    rows, plan = _run(spark, query)
    assert rows and "Name: zxd" in plan, plan
    enable_hyperspace(spark)
    try:
        stats = [s for s in hs.skipping_stats(query()) if s.relation == "index zxd"]
    finally:
        disable_hyperspace(spark)
    assert stats and 0 < stats[0].files_read < files, stats

    # The log stays readable without a JVM (the per-file ranges are a field other readers skip).
    entry = hslog.latest_stable(row["indexRoot"])
    assert entry is not None and entry.index.kind == "ZOrderCoveringIndex" and len(entry.content.files) == files

    _write(spark, path, 3000, 3500, mode="append")
    hs.refresh_index("zxd", "incremental")
    rows_after, plan = _run(spark, query)
    assert "Name: zxd" in plan and len(rows_after) >= len(rows)

    hs.delete_index("zxd")
    _, plan = _run(spark, query)
    assert "Name: zxd" not in plan
    hs.vacuum_index("zxd")
