"""Joins Spark broadcasts are left to Spark, seen from Python: the broadcast side reads no index,
the streamed side reads the index led by the join key (probes in key order), the same rows, and
why_not naming the broadcast side; over the threshold the index join is used."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace

THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(work_dir / "broadcast-indexes"), num_buckets=4):
        yield Hyperspace(spark)
    disable_hyperspace(spark)


@pytest.fixture(scope="module")
def tables(spark: SparkSession, hs: Hyperspace, work_dir: Path) -> dict[str, str]:
    fact, dim = str(work_dir / "bcast-fact"), str(work_dir / "bcast-dim")
    # Eight source files against the index's four buckets: read in place of the fact side, the index
    # opens fewer files in no more tasks, so the broadcast probe takes it (with more buckets than the
    # source has files it would not: BroadcastProbeIndexSuite).
    spark.range(0, 6000, 1, 8).selectExpr("id % 300 AS key", "id * 2 AS amount").write.parquet(fact)
    spark.range(0, 300, 1, 1).selectExpr("id AS dkey", "CONCAT('d', id % 7) AS label").write.parquet(dim)
    hs.create_index(spark.read.parquet(fact), IndexConfig("bcFact", ["key"], ["amount"]))
    hs.create_index(spark.read.parquet(dim), IndexConfig("bcDim", ["dkey"], ["label"]))
    return {"fact": fact, "dim": dim}


def _query(spark: SparkSession, tables: dict[str, str]) -> DataFrame:
    f, d = spark.read.parquet(tables["fact"]), spark.read.parquet(tables["dim"])
    return f.join(d, f["key"] == d["dkey"]).groupBy("label").agg(F.sum("amount").alias("total"))


def _run(spark: SparkSession, df: DataFrame, on: bool) -> tuple[list[tuple], str]:
    (enable_hyperspace if on else disable_hyperspace)(spark)
    try:
        rows = sorted(tuple(r) for r in df.collect())
        return rows, df._jdf.queryExecution().executedPlan().toString()
    finally:
        disable_hyperspace(spark)


def test_a_join_spark_broadcasts_is_left_to_spark(spark: SparkSession, hs: Hyperspace, tables: dict[str, str]) -> None:
    previous = spark.conf.get(THRESHOLD)
    try:
        spark.conf.set(THRESHOLD, "10485760")  # both tables are far below it: Spark broadcasts dim
        expected, _ = _run(spark, _query(spark, tables), on=False)
        rows, plan = _run(spark, _query(spark, tables), on=True)
        assert rows == expected
        assert "BroadcastHashJoin" in plan and "Name: bcFact" in plan and "Name: bcDim" not in plan, plan
        reason = hs.why_not(_query(spark, tables), "bcDim", display=False)
        assert "Spark broadcasts this side of the join" in reason, reason

        with HyperspaceConfig(spark).override(broadcast_probe_enabled=False):
            rows, plan = _run(spark, _query(spark, tables), on=True)
        assert rows == expected
        assert "Hyperspace(Type: CI" not in plan and "BroadcastHashJoin" in plan, plan

        spark.conf.set(THRESHOLD, "-1")  # nothing is broadcast: the index join is back
        rows, plan = _run(spark, _query(spark, tables), on=True)
        assert rows == expected
        assert "Name: bcFact" in plan and "Name: bcDim" in plan, plan
    finally:
        spark.conf.set(THRESHOLD, previous)


def test_a_covering_index_with_lineage_prunes_the_streamed_side_by_its_buckets(
    spark: SparkSession, hs: Hyperspace, work_dir: Path
) -> None:
    big, small = str(work_dir / "bcast-cover-big"), str(work_dir / "bcast-cover-small")
    spark.range(0, 400, 1, 8).selectExpr("id", "sha2(CAST(id AS STRING), 256) AS pad").write.parquet(big)
    spark.range(0, 400, 1, 1).selectExpr("id AS id2", "CONCAT('n', id) AS name").write.parquet(small)
    # The index does not cover `pad`: the source is read, only its files the buckets name for the keys.
    hs.create_index(spark.read.parquet(big), IndexConfig("bcCoverJoin", ["id"], lineage=True))

    def query() -> DataFrame:  # the small side filtered on its names: the key's filter is not inferred
        s = spark.read.parquet(small).where("name IN ('n5', 'n333')")
        return spark.read.parquet(big).join(s, F.col("id") == F.col("id2"))

    conf = HyperspaceConfig(spark)
    assert conf.covering_join_pruning_enabled is True and conf.covering_join_pruning_max_keys == 1000
    with conf.override(audit_sample_rate=1.0):  # every file left out re-read: none holds a key
        expected, _ = _run(spark, query(), on=False)
        enable_hyperspace(spark)
        try:
            got = sorted(tuple(r) for r in query().collect())
            [stats] = hs.last_query_skipping_stats()
            assert "buckets" in hs.why_not(query(), "bcCoverJoin", display=False)
            with conf.override(covering_join_pruning_enabled=False):
                query().collect()
                assert hs.last_query_skipping_stats() == []
        finally:
            disable_hyperspace(spark)
    assert got == expected and len(got) == 2
    assert (stats.files_total, stats.files_read) == (8, 2), stats
