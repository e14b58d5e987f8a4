"""Sources and sketches as the original Hyperspace's users wrote them, through the Python API:
paths with characters URIs escape, sketches over expressions with literals, partition columns
compared with data columns, glob patterns, ``basePath`` reads and filtered hybrid-scan joins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from hyperspace import (
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    IndexConfig,
    MinMaxSketch,
)

GLOB_KEY = "spark.hyperspace.source.globbingPattern"


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    # Four buckets: the default 200 would write 200 files per small index (most of the time here).
    with conf.override(system_path=str(work_dir / "compat-sources-indexes"), num_buckets=4):
        h = Hyperspace(spark)
        h.enable()
        try:
            yield h
        finally:
            h.disable()


def rows(df: DataFrame) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def same_rows(hs: Hyperspace, query) -> list[tuple]:  # type: ignore[no-untyped-def]
    hs.disable()
    expected = rows(query())
    hs.enable()
    actual = rows(query())
    assert actual == expected
    return actual


def write(spark: SparkSession, path: Path | str, start: int, n: int, files: int, mode: str = "overwrite") -> None:
    (
        spark.range(start, start + n, 1, files)
        .selectExpr("id", "CAST(id AS INT) AS a", "CONCAT('n', id % 7) AS name", "CAST(id DIV 40 AS INT) AS part")
        .write.mode(mode)
        .parquet(str(path))
    )


@pytest.mark.parametrize("char", [" ", "%", "#", '"', "<", "|", "`"])
def test_data_skipping_over_a_path_with_escaped_characters(
    spark: SparkSession, hs: Hyperspace, tmp_path: Path, char: str
) -> None:
    src = tmp_path / f"da{char}ta"
    write(spark, src, 0, 120, 6)
    name = f"py_path_{ord(char)}"
    hs.create_index(spark.read.parquet(str(src)), DataSkippingIndexConfig(name, MinMaxSketch("id")))
    assert same_rows(hs, lambda: spark.read.parquet(str(src)).where("id = 45")) == [(45, 45, "n3", 1)]
    assert hs.last_query_skipping_stats()[0].files_read == 1
    write(spark, src, 1000, 20, 1, mode="append")
    assert hs.refresh_index(name, "incremental").appended_files == 1


def test_minmax_on_expressions_with_literals_skips(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    src = tmp_path / "exprs"
    write(spark, src, 0, 200, 10)
    hs.create_index(
        spark.read.parquet(str(src)),
        DataSkippingIndexConfig("py_exprs", MinMaxSketch("id + 1"), MinMaxSketch("abs(a - 50)"), MinMaxSketch("a % 7")),
    )
    for predicate, files in [("id + 1 = 46", 1), ("abs(a - 50) > 140", 1), ("a % 7 = 9", 0)]:
        same_rows(hs, lambda: spark.read.parquet(str(src)).where(predicate))
        [stats] = hs.skipping_stats(spark.read.parquet(str(src)).where(predicate))
        assert stats.files_read == files, (predicate, stats)


def test_partition_column_equal_to_data_column(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    src = tmp_path / "partitioned"
    (
        spark.range(0, 1000, 1, 20)
        .selectExpr("CAST(id / 200 AS INT) * 200 AS A", "id AS B")
        .write.partitionBy("A")
        .parquet(str(src))
    )
    hs.create_index(spark.read.parquet(str(src)), DataSkippingIndexConfig("py_a_eq_b", MinMaxSketch("B")))
    assert len(same_rows(hs, lambda: spark.read.parquet(str(src)).filter("A = B"))) == 5
    assert hs.last_query_skipping_stats()[0].files_read == 5


@pytest.mark.parametrize("expr", ["1 + 1", "current_date()"])
def test_sketch_on_a_constant_is_rejected(spark: SparkSession, hs: Hyperspace, tmp_path: Path, expr: str) -> None:
    src = tmp_path / "constant"
    write(spark, src, 0, 20, 1)
    with pytest.raises(HyperspaceException, match=r"MinMax\(.*\).*source column"):
        hs.create_index(spark.read.parquet(str(src)), DataSkippingIndexConfig("py_const", MinMaxSketch(expr)))


def test_glob_pattern_source(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    glob = f"{tmp_path}/*"
    write(spark, tmp_path / "1", 0, 40, 2)
    hs.createIndex(spark.read.option(GLOB_KEY, glob).parquet(glob), IndexConfig("py_glob", ["id"], ["name"]))
    write(spark, tmp_path / "2", 1000, 40, 2)
    hs.refreshIndex("py_glob", "incremental")
    query = lambda: spark.read.parquet(glob).where("id = 1007").select("id", "name")  # noqa: E731
    assert same_rows(hs, query) == [(1007, "n6")]
    assert "py_glob" in hs.explain(query(), display=False)


def test_base_path_partitions_serve_the_root(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    root = tmp_path / "data"
    # A column the index leaves out: an index holding every source column in another order hits
    # issue #12 item 0 (columns scrambled), fixed separately.
    (
        spark.range(0, 90, 1, 3)
        .selectExpr("id", "CONCAT('n', id) AS name", "CAST(id % 3 AS STRING) AS part")
        .write.partitionBy("part")
        .parquet(str(root))
    )
    indexed = spark.read.option("basePath", str(root)).parquet(*[f"{root}/part={p}" for p in range(3)])
    hs.create_index(indexed, IndexConfig("py_base", ["part"], ["id"]))
    query = lambda: spark.read.parquet(str(root)).where("part = '1'").select("id", "part")  # noqa: E731
    assert len(same_rows(hs, query)) == 30
    assert "py_base" in hs.explain(query(), display=False)


def test_filtered_join_side_over_hybrid_scan(spark: SparkSession, hs: Hyperspace, tmp_path: Path) -> None:
    src, other = tmp_path / "facts", tmp_path / "other"
    write(spark, src, 0, 400, 4)
    write(spark, other, 0, 2000, 2)
    hs.create_index(spark.read.parquet(str(src)), IndexConfig("py_hybrid_join", ["id"], ["name"], lineage=True))
    write(spark, src, 1000, 40, 1, mode="append")
    conf = HyperspaceConfig(spark)
    with (
        conf.override(hybrid_scan_enabled=True, hybrid_scan_max_appended_ratio=0.9),
        _sql_conf(spark, "spark.sql.autoBroadcastJoinThreshold", "-1"),
    ):

        def query() -> DataFrame:
            return (
                spark.read.parquet(str(src))
                .where("id IN (3, 1005)")
                .select("id", "name")
                .join(spark.read.parquet(str(other)).select("id", "a"), "id")
            )

        assert [r[0] for r in same_rows(hs, query)] == [3, 1005]
        assert "py_hybrid_join" in hs.explain(query(), display=False)


class _sql_conf:
    def __init__(self, spark: SparkSession, key: str, value: str) -> None:
        self.spark, self.key, self.value = spark, key, value

    def __enter__(self) -> None:
        self.old = self.spark.conf.get(self.key, None)
        self.spark.conf.set(self.key, self.value)

    def __exit__(self, *exc: object) -> None:
        if self.old is None:
            self.spark.conf.unset(self.key)
        else:
            self.spark.conf.set(self.key, self.old)
