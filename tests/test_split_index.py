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
    with conf.override(system_path=str(work_dir / "split-indexes"), audit_sample_rate=1.0):
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


def test_csv_is_refused(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> None:
    path = str(work_dir / "split-csv")
    spark.range(10).selectExpr("id", "id AS k").write.option("header", "true").csv(path)
    with pytest.raises(HyperspaceException, match="Parquet"):
        hs.create_index(spark.read.option("header", "true").csv(path), SplitIndexConfig("scsv", ["k"]))


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
