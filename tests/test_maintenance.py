"""Index maintenance from Python: refresh (full / incremental / quick), optimize, hybrid scan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    IndexConfig,
    MaintenanceResult,
)
from hyperspace import log as hslog


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(work_dir / "maintenance-indexes"), num_buckets=4):
        yield Hyperspace(spark)


def make_lake(
    spark: SparkSession, path: Path, start: int = 0, rows: int = 300, files: int = 3, mode: str = "overwrite"
) -> None:
    (
        spark.range(start, start + rows, 1, files)
        .selectExpr("id", "CONCAT('n', id % 11) AS name", "DATE_ADD(DATE'2025-01-01', CAST(id % 3 AS INT)) AS day")
        .write.mode(mode)
        .partitionBy("day")
        .parquet(str(path))
    )


def rows(df: DataFrame) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def uses_index(df: DataFrame, name: str) -> bool:
    return f"Name: {name}," in df._jdf.queryExecution().optimizedPlan().toString()


def same_with_and_without(spark: SparkSession, hs: Hyperspace, query) -> bool:
    hs.disable()
    expected = rows(query())
    hs.enable()
    try:
        return rows(query()) == expected
    finally:
        hs.disable()


def test_refresh_modes_follow_appends_and_deletes(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    lake = work_dir / "maint-lake"
    make_lake(spark, lake)
    hs.create_index(spark.read.parquet(str(lake)), IndexConfig("py_maint", ["id"], ["name", "day"], lineage=True))
    query = lambda: spark.read.parquet(str(lake)).where("id IN (5, 1005, 299)").select("id", "name", "day")
    indexed_files = sorted(lake.rglob("*.parquet"))

    assert hs.refresh_index("py_maint", "incremental").changed is False

    make_lake(spark, lake, start=1000, rows=30, files=1, mode="append")
    row = hs.indexes().where("name = 'py_maint'").first()
    assert (row["appendedFiles"], row["deletedFiles"]) == (3, 0)  # one file per day partition

    result = hs.refresh_index("py_maint", "quick")
    assert isinstance(result, MaintenanceResult) and result.changed and result.appended_files == 3
    assert "quick" in str(result)
    stable = hslog.latest_stable(hs.index("py_maint").first()["indexRoot"])
    assert stable is not None and len(stable.source.appended_files) == 3
    hs.enable()
    try:
        assert uses_index(query(), "py_maint"), "a quick-refreshed index is used with its recorded lists"
    finally:
        hs.disable()
    assert same_with_and_without(spark, hs, query)

    indexed_files[0].unlink()  # a file the index covers, not one of the appended ones
    result = hs.refreshIndex("py_maint", "incremental")  # the original camelCase name
    assert result.changed and result.deleted_files == 1 and result.appended_files == 3
    hs.enable()
    try:
        assert uses_index(query(), "py_maint")
    finally:
        hs.disable()
    assert same_with_and_without(spark, hs, query)

    assert hs.refresh_index("py_maint", "full").changed is False
    row = hs.indexes().where("name = 'py_maint'").first()
    assert (row["appendedFiles"], row["deletedFiles"]) == (0, 0)


def test_hybrid_scan_uses_a_stale_index_through_the_typed_config(
    spark: SparkSession, hs: Hyperspace, work_dir: Path
) -> None:
    lake = work_dir / "hybrid-lake"
    make_lake(spark, lake)
    hs.create_index(spark.read.parquet(str(lake)), IndexConfig("py_hybrid", ["id"], ["name"], lineage=True))
    make_lake(spark, lake, start=5000, rows=9, files=1, mode="append")
    query = lambda: spark.read.parquet(str(lake)).where("id = 5004").select("id", "name")
    conf = HyperspaceConfig(spark)
    hs.enable()
    try:
        assert not uses_index(query(), "py_hybrid")
        assert "enable hybrid scan" in hs.why_not(query(), "py_hybrid", display=False)
        with conf.override(hybrid_scan_enabled=True, hybrid_scan_max_appended_ratio=0.9):
            assert uses_index(query(), "py_hybrid")
            assert rows(query()) == [(5004, "n10")]  # 5004 % 11 == 10
    finally:
        hs.disable()


def test_optimize_compacts_without_changing_results(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    lake = work_dir / "optimize-lake"
    make_lake(spark, lake)
    hs.create_index(spark.read.parquet(str(lake)), IndexConfig("py_opt", ["id"], ["name"]))
    make_lake(spark, lake, start=2000, rows=40, files=1, mode="append")
    hs.refresh_index("py_opt", "incremental")
    files_before = hs.indexes().where("name = 'py_opt'").first()["numIndexFiles"]
    result = hs.optimize_index("py_opt", "full")
    assert result.changed and result.merged_files > 0
    assert hs.indexes().where("name = 'py_opt'").first()["numIndexFiles"] < files_before
    assert hs.optimizeIndex("py_opt", "full").changed is False
    query = lambda: spark.read.parquet(str(lake)).where("id IN (3, 2003)").select("id", "name")
    assert same_with_and_without(spark, hs, query)


def test_bad_modes_and_deletes_without_lineage_raise_clear_errors(
    spark: SparkSession, hs: Hyperspace, work_dir: Path
) -> None:
    lake = work_dir / "errors-lake"
    make_lake(spark, lake)
    hs.create_index(spark.read.parquet(str(lake)), IndexConfig("py_nolineage", ["id"], ["name"], lineage=False))
    with pytest.raises(HyperspaceException, match="unknown mode 'sometimes'"):
        hs.refresh_index("py_nolineage", "sometimes")  # type: ignore[arg-type]
    with pytest.raises(HyperspaceException, match="quick, full"):
        hs.optimize_index("py_nolineage", "incremental")  # type: ignore[arg-type]
    sorted(lake.rglob("*.parquet"))[0].unlink()
    with pytest.raises(HyperspaceException, match="lineage"):
        hs.refresh_index("py_nolineage", "incremental")
    assert hs.refresh_index("py_nolineage").changed  # full is the default mode
