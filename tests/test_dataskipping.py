"""Data skipping indexes from Python: create, query with skipping statistics, maintain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    MinMaxSketch,
    PrefixSketch,
    RelationSkippingStats,
    ValueListSketch,
)


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(work_dir / "dataskipping-indexes")):
        h = Hyperspace(spark)
        h.enable()
        try:
            yield h
        finally:
            h.disable()


def make_events(
    spark: SparkSession, path: Path, start: int = 0, files: int = 20, per_file: int = 30, mode: str = "overwrite"
) -> None:
    """Events ordered by time: ``id``/``ts``/the ``user`` prefix are clustered by file."""
    (
        spark.range(start, start + files * per_file, 1, files)
        .selectExpr(
            "id",
            "TIMESTAMP'2025-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, id, 0) AS ts",
            f"CONCAT('user', LPAD(CAST(id DIV {per_file} AS STRING), 3, '0')) AS user",
            "CASE WHEN id % 2 = 0 THEN 'click' ELSE 'view' END AS kind",
        )
        .write.mode(mode)
        .parquet(str(path))
    )


def rows(df: DataFrame) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_create_query_and_stats(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    src = tmp_path / "events"
    make_events(spark, src)
    hs.create_index(
        spark.read.parquet(str(src)),
        DataSkippingIndexConfig(
            "py_events", MinMaxSketch("ts"), BloomFilterSketch("id"), PrefixSketch("user", 7), ValueListSketch("kind")
        ),
    )
    row = hs.indexes().where("name = 'py_events'").collect()[0]
    assert row["kind"] == "DataSkippingIndex" and row["numBuckets"] == 0
    assert "MinMax(ts)" in row["indexedColumns"]

    query = spark.read.parquet(str(src)).where("id = 123")
    assert [r["id"] for r in query.collect()] == [123]
    [stats] = hs.last_query_skipping_stats()
    assert isinstance(stats, RelationSkippingStats)
    assert (stats.files_total, stats.files_skipped, stats.files_read) == (20, 19, 1)
    assert stats.bytes_read + stats.bytes_skipped == stats.bytes_total
    assert stats.indexes[0].index == "py_events"
    assert {s.sketch: s.files_skipped for s in stats.indexes[0].sketches}["BloomFilter(id, fpp=0.01)"] >= 19
    assert "skipped 19 of 20 files" in str(stats)
    assert hs.lastQuerySkippingStats() == hs.last_query_skipping_stats()

    def like() -> DataFrame:  # a fresh DataFrame each time: a DataFrame keeps the plan it first got
        return spark.read.parquet(str(src)).where("user LIKE 'user01%'")

    hs.disable()
    expected = rows(like())
    hs.enable()
    assert rows(like()) == expected
    assert hs.last_query_skipping_stats()[0].files_read == 10  # user010 .. user019

    assert [
        s.files_skipped
        for s in hs.skipping_stats(spark.read.parquet(str(src)).where("ts < TIMESTAMP'2025-01-01 00:45:00'"))
    ] == [18]
    assert "Data skipping: " in hs.explain(spark.read.parquet(str(src)).where("id = 5"), display=False)
    spark.range(2).collect()
    assert hs.last_query_skipping_stats() == []


def test_a_join_reads_only_the_files_whose_sketches_can_hold_the_broadcast_keys(
    spark: SparkSession, hs: Hyperspace, tmp_path: Path
) -> None:
    src, dim = tmp_path / "events", tmp_path / "dim"
    make_events(spark, src)  # 20 files of 30 contiguous ids
    spark.range(0, 700, 1, 1).selectExpr("id AS id2", "CONCAT('n', id) AS name").write.parquet(str(dim))
    hs.create_index(spark.read.parquet(str(src)), DataSkippingIndexConfig("py_join", MinMaxSketch("id")))

    def query() -> DataFrame:  # the small side filtered on its names: the key's filter is not inferred
        small = spark.read.parquet(str(dim)).where("name IN ('n5', 'n400', 'n650')")
        return spark.read.parquet(str(src)).join(small, F.col("id") == F.col("id2"))

    conf = HyperspaceConfig(spark)
    assert conf.dataskipping_join_pruning_enabled is True and conf.dataskipping_join_pruning_max_keys == 1000
    with conf.override(audit_sample_rate=1.0):  # every skipped file re-read: none holds a key
        got = rows(query())
    [stats] = hs.last_query_skipping_stats()
    assert (stats.files_total, stats.files_read) == (20, 2), stats
    assert stats.filter.startswith("id IN (the 3 join key(s) of the other side)"), stats.filter
    hs.disable()
    expected = rows(query())
    hs.enable()
    assert got == expected and len(got) == 2
    assert "decides at run time" in hs.why_not(query(), "py_join", display=False)
    for settings in ({"dataskipping_join_pruning_enabled": False}, {"dataskipping_join_pruning_max_keys": 1}):
        with conf.override(**settings):
            query().collect()
            assert [s.files_read for s in hs.last_query_skipping_stats()] == [20], settings


def test_maintenance_and_errors(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    src = tmp_path / "events"
    make_events(spark, src, files=6, per_file=10)
    hs.create_index(spark.read.parquet(str(src)), DataSkippingIndexConfig("py_maint", MinMaxSketch("id")))
    make_events(spark, src, start=1000, files=1, per_file=10, mode="append")
    # The appended file is not summarized yet: it is read; the others are skipped.
    spark.read.parquet(str(src)).where("id = 1005").collect()
    assert hs.last_query_skipping_stats()[0].files_read == 1
    result = hs.refresh_index("py_maint", "incremental")
    assert result.changed and result.appended_files == 1
    spark.read.parquet(str(src)).where("id = 3").collect()
    assert (hs.last_query_skipping_stats()[0].files_total, hs.last_query_skipping_stats()[0].files_read) == (7, 1)
    assert hs.optimize_index("py_maint", "full").merged_files == 2
    hs.delete_index("py_maint")
    spark.read.parquet(str(src)).where("id = 3").collect()
    assert hs.last_query_skipping_stats() == []
    hs.restore_index("py_maint")
    with pytest.raises(HyperspaceException, match="nope"):
        hs.create_index(spark.read.parquet(str(src)), DataSkippingIndexConfig("py_bad", MinMaxSketch("nope")))
    with pytest.raises(HyperspaceException, match="IndexConfig or a DataSkippingIndexConfig"):
        hs.create_index(spark.read.parquet(str(src)), "not a config")  # type: ignore[arg-type]
