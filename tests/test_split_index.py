"""The split index from Python: create, seeks for =, IN and a range with results checked, fallback, refresh, delete."""

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
    SplitIndexConfig,
    disable_hyperspace,
    enable_hyperspace,
    index_kinds,
)
from hyperspace import log as hslog


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    # Four buckets: the default 200 would write 200 files per small index (most of the time here).
    with conf.override(system_path=str(work_dir / "split-indexes"), audit_sample_rate=1.0, num_buckets=4):
        yield Hyperspace(spark)


def _write(spark: SparkSession, path: str, start: int, end: int, mode: str = "error") -> None:
    (
        spark.range(start, end, 1, 3)
        .selectExpr(
            "id",
            "CASE WHEN id % 10 = 0 THEN NULL ELSE CAST(pmod(hash(id), 1500) AS INT) END AS k",
            "REPEAT(CAST(id AS STRING), 6) AS pad",
        )
        .write.mode(mode)
        # Small row groups: every file has many, so a seek has something to leave out.
        .option("parquet.block.size", "4096")
        .option("parquet.page.size.row.check.min", "10")
        .option("parquet.page.size.row.check.max", "50")
        .parquet(path)
    )


def _run(spark: SparkSession, query: Callable[[], DataFrame]) -> tuple[list[tuple[object, ...]], str]:
    """The rows of ``query`` with Hyperspace on (checked equal to the rows with it off) and its plan."""
    disable_hyperspace(spark)
    expected = sorted(map(tuple, query().collect()), key=repr)
    enable_hyperspace(spark)
    try:
        df = query()
        actual = sorted(map(tuple, df.collect()), key=repr)
        plan = df._jdf.queryExecution().executedPlan().toString()
    finally:
        disable_hyperspace(spark)
    assert actual == expected
    return actual, plan


def test_config_and_json() -> None:
    config = SplitIndexConfig("s", ["k"])
    assert config == SplitIndexConfig("s", ("k",))
    assert config.kind_name == index_kinds.SPLIT == "SplitIndex"
    assert json.loads(config.to_json()) == {"name": "s", "indexedColumns": ["k"]}
    assert repr(config) == "SplitIndexConfig('s', ['k'])"
    with pytest.raises(HyperspaceException, match="list of column names"):
        SplitIndexConfig("s", "k")


def test_create_seek_fallback_refresh_delete(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    path = str(work_dir / "split-source")
    _write(spark, path, 0, 4000)
    hs.create_index(spark.read.parquet(path), SplitIndexConfig("sk", ["k"]))
    row = hs.index("sk").first()
    assert row["kind"] == "SplitIndex" and row["kindAbbr"] == "SI"

    for condition in ["k = 17", "k IN (3, 77, 1400)", "k BETWEEN 100 AND 101"]:
        rows, plan = _run(spark, lambda c=condition: spark.read.parquet(path).where(c))
        assert rows and "SplitSeekFileIndex" in plan, (condition, plan)
        # Collected to the driver, a seek of a few row groups is read there, without a job.
        assert plan.startswith("DriverIndexRead"), plan

    # split_driver_read_max_bytes=0: the seek runs as a job, with the same rows.
    with HyperspaceConfig(spark).override(split_driver_read_max_bytes=0):
        rows, plan = _run(spark, lambda: spark.read.parquet(path).where("k = 17"))
        assert rows and "SplitSeekFileIndex" in plan and "DriverIndexRead" not in plan, plan

    # Not selective: the plain scan, and whyNot says why.
    _, plan = _run(spark, lambda: spark.read.parquet(path).where("k > 5"))
    assert "SplitSeekFileIndex" not in plan
    assert "maxReadFraction" in hs.why_not(spark.read.parquet(path).where("k > 5"), "sk")

    # The log stays readable without a JVM, with each file's location counts.
    entry = hslog.latest_stable(row["indexRoot"])
    assert entry is not None and entry.index.kind == "SplitIndex"
    located = [f.stats.locations for f in entry.content.files if f.stats is not None]
    assert len(located) == len(entry.content.files) and all(loc is not None for loc in located)
    assert 1300 < sum(loc.keys for loc in located if loc is not None) < 1700

    # An IN-list estimated to reach most row groups is refused before the index is read.
    wide = f"k IN ({', '.join(str(v) for v in range(0, 1500, 5))})"
    _, plan = _run(spark, lambda: spark.read.parquet(path).where(wide))
    assert "SplitSeekFileIndex" not in plan
    assert "the index was not read" in hs.why_not(spark.read.parquet(path).where(wide), "sk")

    _write(spark, path, 4000, 4300, mode="append")
    hs.refresh_index("sk", "incremental")
    rows, plan = _run(spark, lambda: spark.read.parquet(path).where("k IN (3, 77, 1400)"))
    assert "SplitSeekFileIndex" in plan

    hs.delete_index("sk")
    _, plan = _run(spark, lambda: spark.read.parquet(path).where("k = 17"))
    assert "SplitSeekFileIndex" not in plan
    hs.vacuum_index("sk")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_sources_are_indexed_file_by_file(
    spark: SparkSession, hs: Hyperspace, work_dir: Path, fmt: str
) -> None:
    path = str(work_dir / f"split-{fmt}")
    # Twelve files, each holding its own range of keys (ten rows per key).
    frame = spark.range(0, 3000, 1, 12).selectExpr("id", "CAST(id DIV 10 AS INT) AS k", "REPEAT('x', 20) AS pad")
    schema = "id BIGINT, k INT, pad STRING"
    if fmt == "csv":
        frame.write.option("header", "true").csv(path)

        def read() -> DataFrame:
            return spark.read.schema(schema).option("header", "true").csv(path)
    else:
        frame.write.json(path)

        def read() -> DataFrame:
            return spark.read.schema(schema).json(path)

    name = f"s{fmt}"
    hs.create_index(read(), SplitIndexConfig(name, ["k"]))
    assert "whole CSV or JSON files" in hs.index(name).first()["additionalStats"]["locations"]
    for condition in ["k = 17", "k IN (3, 77, 280)", "k BETWEEN 100 AND 101"]:
        rows, plan = _run(spark, lambda c=condition: read().where(c))
        assert rows and "SplitSeekFileIndex" in plan, (condition, plan)
    # The skipping statistics: a seek for two keys reads the two files holding them.
    enable_hyperspace(spark)
    try:
        [stats] = hs.skipping_stats(read().where("k IN (3, 280)"))
    finally:
        disable_hyperspace(spark)
    assert (stats.files_total, stats.files_read) == (12, 2), stats
    assert stats.indexes[0].index == name
    hs.delete_index(name)
    hs.vacuum_index(name)


def test_other_formats_are_refused(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    path = str(work_dir / "split-orc")
    spark.range(10).selectExpr("id", "id AS k").write.orc(path)
    with pytest.raises(HyperspaceException, match="Parquet"):
        hs.create_index(spark.read.orc(path), SplitIndexConfig("sorc", ["k"]))


def test_join_prunes_the_big_side(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    path = str(work_dir / "split-join-big")
    _write(spark, path, 0, 4000)
    dim = str(work_dir / "split-join-dim")
    spark.range(0, 1500).selectExpr("CAST(id AS INT) AS k2", "CONCAT('n', id) AS name").write.parquet(dim)
    hs.create_index(spark.read.parquet(path), SplitIndexConfig("sjoin", ["k"]))

    def query(how: str = "inner") -> DataFrame:
        big, small = spark.read.parquet(path), spark.read.parquet(dim).where("name IN ('n3', 'n77')")
        return big.join(small, big["k"] == small["k2"], how)

    conf = HyperspaceConfig(spark)
    # On by default: the filter is on the small side's `name`, so only the join's keys, read from
    # the broadcast at run time, can narrow the big side.
    assert conf.split_join_pruning_enabled is True
    rows, plan = _run(spark, query)
    assert rows and "SplitSeekFileIndex" in plan, plan
    # The big side is preserved by a left outer join: nothing may be pruned.
    _, plan = _run(spark, lambda: query("left_outer"))
    assert "SplitSeekFileIndex" not in plan
    with conf.override(split_join_pruning_enabled=False):
        _, plan = _run(spark, query)
        assert "SplitSeekFileIndex" not in plan
    hs.delete_index("sjoin")
    hs.vacuum_index("sjoin")


def _page_read_counts(df: DataFrame) -> tuple[int, int]:
    """(row groups read by pages, row groups read whole) by the driver-side read of ``df``, collected."""
    df.collect()
    found = []
    nodes = [df._jdf.queryExecution().executedPlan()]
    while nodes:
        node = nodes.pop()
        if node.nodeName() == "DriverIndexRead":
            metrics = node.metrics()
            found.append((metrics.get("rowGroupsByPages").get().value(), metrics.get("rowGroupsWhole").get().value()))
        children = node.children()
        nodes.extend(children.apply(i) for i in range(children.size()))
    assert len(found) == 1, df._jdf.queryExecution().executedPlan().toString()
    return found[0]


@pytest.mark.parametrize("page_index", [False, True])
def test_files_without_page_indexes_are_read_by_whole_row_groups(
    spark: SparkSession, hs: Hyperspace, work_dir: Path, page_index: bool
) -> None:
    """Files another writer made without page indexes (pyarrow's default) cannot be read by
    pages: their located row groups are read whole, with the same rows. With page indexes, the
    same files are read by pages: the control that shows the fallback is what differs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = work_dir / f"split-pyarrow-{page_index}"
    path.mkdir()
    for part in range(2):
        ids = list(range(part * 60000, (part + 1) * 60000))
        table = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "k": pa.array([None if i % 10 == 0 else (i * 7919) % 50000 for i in ids], pa.int32()),
                "pad": pa.array([str(i) * 3 for i in ids], pa.string()),
            }
        )
        # Row groups of 8,192 rows (a key's few rows are in a few of the 15), pages of a few hundred rows.
        pq.write_table(
            table,
            path / f"part-{part}.parquet",
            row_group_size=8192,
            data_page_size=4096,
            write_page_index=page_index,
        )
    name = f"s_pyarrow_{page_index}".lower()
    source = str(path)
    hs.create_index(spark.read.parquet(source), SplitIndexConfig(name, ["k"]))
    by_pages = whole = 0
    with HyperspaceConfig(spark).override(split_max_read_fraction=0.5):
        for key in [(i * 7919) % 50000 for i in (1, 31, 59999, 77777)]:
            rows, plan = _run(spark, lambda k=key: spark.read.parquet(source).where(f"k = {k}"))
            assert "SplitSeekFileIndex" in plan, hs.why_not(spark.read.parquet(source).where(f"k = {key}"), name)
            enable_hyperspace(spark)
            try:
                pages, wholes = _page_read_counts(spark.read.parquet(source).where(f"k = {key}"))
            finally:
                disable_hyperspace(spark)
            by_pages += pages
            whole += wholes
    if page_index:
        assert by_pages > 0 and whole == 0, (by_pages, whole)
    else:
        assert by_pages == 0 and whole > 0, (by_pages, whole)
    hs.delete_index(name)
    hs.vacuum_index(name)
