"""The Indexed DataFrame from Python: results compared with the same operations on plain
DataFrames (as multisets), plans checked for the index, errors translated."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hyperspace import HyperspaceConfig, HyperspaceException
from hyperspace.indexed import IndexedDataFrame, create_index, createIndex, join_decisions


def rows(df: DataFrame) -> list[str]:
    return sorted(repr(tuple(r)) for r in df.collect())


def executed_plan(df: DataFrame) -> str:
    df.collect()
    return str(df._jdf.queryExecution().executedPlan().toString())


@pytest.fixture(scope="module")
def source(spark: SparkSession) -> DataFrame:
    return (
        spark.range(2000)
        .selectExpr(
            "CASE WHEN id % 89 = 0 THEN NULL ELSE id % 300 END AS k",
            "concat('v', id) AS v",
            "date_add(DATE '2024-01-01', CAST(id % 30 AS INT)) AS day",
            "CAST(id % 11 AS DECIMAL(8, 2)) AS amount",
        )
        .cache()
    )


@pytest.fixture(scope="module")
def idf(source: DataFrame) -> IndexedDataFrame:
    return create_index(source, "k", num_partitions=4).cache()


@pytest.fixture(scope="module")
def probe(spark: SparkSession) -> DataFrame:
    return spark.range(0, 900, 2).selectExpr(
        "CASE WHEN id % 40 = 0 THEN NULL ELSE id % 350 END AS pk", "CAST(id AS INT) AS pv"
    )


def test_create_cache_and_describe(idf: IndexedDataFrame, source: DataFrame) -> None:
    assert idf.key_column == "k" and idf.num_partitions == 4 and idf.version == 0
    assert idf.is_cached
    assert [f.name for f in idf.schema.fields] == ["k", "v", "day", "amount"]
    assert rows(idf.to_df()) == rows(source)
    stats = idf.memory_stats()
    assert stats["rows"] == 2000 and stats["cachedPartitions"] == 4
    assert stats["blockManagerBytes"] >= stats["usedBatchBytes"] > 0
    assert "key=k" in repr(idf)
    assert set(idf.cached_partition_executors()) == {0, 1, 2, 3}


@pytest.mark.parametrize("key", [1, 299, 0, 5000, None])
def test_get_rows_matches_a_filter(idf: IndexedDataFrame, source: DataFrame, key: Any) -> None:
    found = idf.get_rows(key)
    expected = source.filter(F.col("k") == key) if key is not None else source.limit(0)
    assert rows(found) == rows(expected)
    if key is not None:
        assert "IndexedLookup" in executed_plan(found)


@pytest.mark.parametrize(
    "column,value",
    [
        ("v", "v17"),
        ("day", datetime.date(2024, 1, 7)),
        ("amount", Decimal("3.00")),
    ],
)
def test_get_rows_on_other_key_types(source: DataFrame, column: str, value: Any) -> None:
    by = create_index(source, column, num_partitions=3)
    found = by.get_rows(value)
    assert rows(found) == rows(source.filter(F.col(column) == F.lit(value)))
    assert found.count() > 0
    assert "IndexedLookup" in executed_plan(found)


@pytest.mark.parametrize("in_place", [True, False])
def test_lookup_returns_the_filters_rows(
    spark: SparkSession, idf: IndexedDataFrame, source: DataFrame, in_place: bool
) -> None:
    """The eager lookup: the same rows as a filter on the source, read in place (the driver's
    block manager, local mode) or by one job on the keys' partitions."""

    def same(found: list[Any], expected: DataFrame) -> None:
        assert sorted(repr(tuple(r)) for r in found) == rows(expected)

    with HyperspaceConfig(spark).override(indexed_lookup_read_in_place=in_place):
        for key in [1, 299, 0, 5000, -1]:
            found = idf.lookup(key)
            same(found, source.filter(F.col("k") == key))
            assert all(r["k"] == key for r in found) and all(isinstance(r["day"], datetime.date) for r in found)
            same(idf.get_rows(key).collect(), source.filter(F.col("k") == key))
        assert idf.lookup(None) == [] and idf.lookup([]) == [] and idf.lookup([None, None]) == []
        same(idf.lookup([3, 4, 4, None, 7777]), source.filter(F.col("k").isin(3, 4)))
        same(idf.lookup((5, 6)), source.filter(F.col("k").isin(5, 6)))
        # A float for a long key: compared by casting the column, as a filter does.
        same(idf.lookup([7.0, 7.5]), source.filter((F.col("k") == 7.0) | (F.col("k") == 7.5)))
        with pytest.raises(HyperspaceException, match="'k'"):
            idf.lookup("seven")


@pytest.mark.parametrize("in_place", [True, False])
def test_lookup_on_other_key_types_and_versions(spark: SparkSession, source: DataFrame, in_place: bool) -> None:
    with HyperspaceConfig(spark).override(indexed_lookup_read_in_place=in_place):
        for column, values in [
            ("v", ["v17", "v18", "nope"]),
            ("day", [datetime.date(2024, 1, 7), datetime.date(1999, 1, 1)]),
            ("amount", [Decimal("3.00"), Decimal("4.00")]),
        ]:
            by = create_index(source, column, num_partitions=3).cache()
            found = by.lookup(values)
            assert sorted(repr(tuple(r)) for r in found) == rows(source.filter(F.col(column).isin(values)))
            assert found
            by.unpersist()
        binary = spark.range(50).selectExpr("CAST(concat('b', id % 10) AS BINARY) AS b", "id")
        by_b = create_index(binary, "b", num_partitions=3).cache()
        got = by_b.lookup([b"b3", bytearray(b"b4")])
        assert sorted(r["id"] for r in got) == sorted(
            r["id"] for r in binary.filter("b IN (X'6233', X'6234')").collect()
        )
        by_b.unpersist()
        versions = [create_index(source, "k", num_partitions=4).cache()]
        expected = [source]
        for v in range(1, 6):
            more = spark.range(v * 3).selectExpr(
                "id * 5 AS k", f"'n{v}' AS v", "DATE '2020-01-01' AS day", "CAST(1 AS DECIMAL(8, 2)) AS amount"
            )
            versions.append(versions[-1].append_rows(more).cache())
            expected.append(expected[-1].union(more))
        for version, plain in zip(versions, expected):
            keys = [0, 5, 10, 299, 100000]
            assert sorted(repr(tuple(r)) for r in version.lookup(keys)) == rows(plain.filter(F.col("k").isin(keys)))
        for version in versions:
            version.unpersist()


@pytest.mark.parametrize("how", ["inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti"])
@pytest.mark.parametrize("aqe", ["true", "false"])
def test_joins_match_plain_joins(
    spark: SparkSession, idf: IndexedDataFrame, source: DataFrame, probe: DataFrame, how: str, aqe: str
) -> None:
    spark.conf.set("spark.sql.adaptive.enabled", aqe)
    try:
        indexed = idf.join(probe, idf["k"] == probe["pk"], how)
        assert rows(indexed) == rows(source.join(probe, source["k"] == probe["pk"], how))
        assert "IndexedJoin" in executed_plan(indexed)
        reverse = probe.join(idf.to_df(), probe["pk"] == idf["k"], how)
        assert rows(reverse) == rows(probe.join(source, probe["pk"] == source["k"], how))
        assert "IndexedJoin" in executed_plan(reverse)
        extra = idf.join(probe, (idf["k"] == probe["pk"]) & (F.length(idf["v"]) > 3), how)
        assert rows(extra) == rows(source.join(probe, (source["k"] == probe["pk"]) & (F.length(source["v"]) > 3), how))
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


@pytest.mark.parametrize("how", ["inner", "left_outer", "full_outer", "left_semi", "left_anti"])
def test_small_broadcast_probe_joins_in_one_task_without_an_exchange_above(
    spark: SparkSession, idf: IndexedDataFrame, source: DataFrame, probe: DataFrame, how: str
) -> None:
    # 450 probe rows, under indexed.join.oneTaskProbeRows: one task, one output partition, so the
    # grouped aggregate above needs no shuffle; with the setting at 0 it is a task per slot again.
    def grouped(left: DataFrame, key: str) -> DataFrame:
        joined = left.join(F.broadcast(probe), left[key] == probe["pk"], how)
        return joined.groupBy("k").agg(F.count("*").alias("n"), F.sum(F.length("v")).alias("lv"))

    # In local mode an inner join reads the probe side in place instead of broadcasting it (the
    # index on the left is kept unmatched by the other join types, which need the broadcast).
    conf = HyperspaceConfig(spark)
    plain = rows(grouped(source, "k"))
    for in_place in (True, False):
        with conf.override(indexed_join_probe_in_place=in_place):
            moved = "probe read in place, " if in_place and how == "inner" else "probe broadcast, "
            one_task = grouped(idf.to_df(), "k")
            assert rows(one_task) == plain
            plan = executed_plan(one_task)
            assert moved + "1 task" in plan and "Exchange hashpartitioning" not in plan, plan
            with conf.override(indexed_join_one_task_probe_rows=0):
                parallel = grouped(idf.to_df(), "k")
                assert rows(parallel) == plain
                plan = executed_plan(parallel)
                tasks = "a task per probe partition" if moved.endswith("place, ") else "2 tasks"
                assert moved + tasks in plan and "Exchange" in plan.replace("BroadcastExchange", ""), plan


def test_join_using_a_column_name(
    spark: SparkSession, idf: IndexedDataFrame, source: DataFrame, probe: DataFrame
) -> None:
    other = probe.withColumnRenamed("pk", "k")
    assert rows(idf.join(other, "k", "left_outer")) == rows(source.join(other, "k", "left_outer"))
    assert "IndexedJoin" in executed_plan(idf.join(other, ["k"]))


def test_sql_over_a_temp_view(spark: SparkSession, idf: IndexedDataFrame, source: DataFrame, probe: DataFrame) -> None:
    idf.create_or_replace_temp_view("py_idx")
    source.createOrReplaceTempView("py_plain")
    probe.createOrReplaceTempView("py_probe")
    for sql in (
        "SELECT * FROM {} WHERE k = 42",
        "SELECT v FROM {} WHERE k IN (1, 2, 3)",
        "SELECT t.v, p.pv FROM {} t JOIN py_probe p ON t.k = p.pk",
    ):
        indexed = spark.sql(sql.format("py_idx"))
        assert rows(indexed) == rows(spark.sql(sql.format("py_plain")))
        plan = executed_plan(indexed)
        assert "IndexedLookup" in plan or "IndexedJoin" in plan


def test_appends_and_divergent_appends(spark: SparkSession, source: DataFrame) -> None:
    base = create_index(source, "k", num_partitions=4).cache()
    more_a = source.limit(5).withColumn("v", F.lit("A"))
    more_b = source.limit(7).withColumn("v", F.lit("B"))
    a = base.append_rows(more_a)
    b = base.appendRows(more_b)  # the camelCase alias
    assert (a.version, b.version) == (1, 1)
    assert rows(b.to_df()) == rows(source.union(more_b))
    assert rows(a.to_df()) == rows(source.union(more_a))
    assert rows(base.to_df()) == rows(source)
    key = more_a.first()["k"]
    assert rows(a.get_rows(key)) == rows(source.union(more_a).filter(F.col("k") == key))
    assert rows(base.getRows(key)) == rows(source.filter(F.col("k") == key))
    assert a.count() == 2005 and b.count() == 2007 and base.count() == 2000


def test_unpersist_frees_the_cache_and_lineage_still_answers(source: DataFrame) -> None:
    temp = create_index(source, "k", num_partitions=2).cache()
    assert temp.memory_stats()["cachedPartitions"] == 2
    temp.unpersist(blocking=True)
    assert not temp.is_cached
    assert temp.memory_stats()["cachedPartitions"] == 0
    assert rows(temp.get_rows(7)) == rows(source.filter(F.col("k") == 7))


def test_persist_at_a_serialized_level(source: DataFrame) -> None:
    ser = createIndex(source, "k", 2).persist("memory_only_ser")
    assert rows(ser.get_rows(8)) == rows(source.filter(F.col("k") == 8))
    with pytest.raises(HyperspaceException, match="Unknown storage level"):
        createIndex(source, "k", 2).persist("IN_THE_CLOUD")


def test_errors_name_the_column(spark: SparkSession, source: DataFrame, idf: IndexedDataFrame) -> None:
    with pytest.raises(HyperspaceException, match="'nope'"):
        create_index(source, "nope")
    with pytest.raises(HyperspaceException, match="'m'"):
        create_index(spark.range(2).selectExpr("map(id, id) AS m"), "m")
    with pytest.raises(HyperspaceException, match="'v'"):
        idf.append_rows(source.drop("v"))
    with pytest.raises(HyperspaceException, match="'k'"):
        idf.get_rows("not a number")
    with pytest.raises(HyperspaceException, match="num_partitions"):
        create_index(source, "k", num_partitions="4")  # type: ignore[arg-type]


def test_settings_are_typed(spark: SparkSession) -> None:
    conf = HyperspaceConfig(spark)
    assert conf.indexed_batch_size == 4 * 1024 * 1024
    assert conf.indexed_num_partitions == 4  # spark.sql.shuffle.partitions of the test session
    assert conf.indexed_compression == "none"
    assert conf.indexed_compression_block_size == 4096
    assert conf.indexed_row_format == "compact"
    assert conf.indexed_lookup_read_in_place is True
    with conf.override(indexed_num_partitions=3):
        assert create_index(spark.range(10), "id").num_partitions == 3
    source = spark.range(20000).selectExpr("id % 500 AS k", "concat('v', id % 7) AS v")
    sizes: dict[str, int] = {}
    for codec in ("none", "lz4", "zstd"):
        with conf.override(indexed_compression=codec, indexed_compression_block_size=1024, indexed_row_format="unsafe"):
            idf = create_index(source, "k", num_partitions=2).cache()
        stats = idf.memory_stats()
        sizes[codec] = stats["totalBatchBytes"]
        assert rows(idf.get_rows(42)) == rows(source.filter("k = 42"))
        idf.unpersist()
    assert sizes["zstd"] < sizes["none"] / 2 and sizes["lz4"] < sizes["none"] / 2, sizes
    # Compact rows (the default row format): a 1-3 byte link, a null byte, a 2-byte key and a
    # 1-byte dictionary code instead of 8 + 32 bytes.
    idf = create_index(source, "k", num_partitions=2).cache()
    assert idf.memory_stats()["usedBatchBytes"] < 20000 * 10
    assert rows(idf.get_rows(42)) == rows(source.filter("k = 42"))
    idf.unpersist()


def test_join_selection_steps_aside_for_a_small_index_side(spark: SparkSession) -> None:
    """An index on a small dimension probed by a bigger table: Spark broadcasts the index side
    (its default plan) instead of the indexed join moving the big side; same rows either way."""
    dim_src = spark.range(100).selectExpr("id AS dk", "concat('d', id) AS dname").cache()
    dim = create_index(dim_src, "dk", num_partitions=4).cache()
    fact = spark.range(30000).selectExpr("id % 150 AS fk", "id AS fid").cache()
    joined = fact.join(dim.to_df(), fact["fk"] == dim["dk"])
    assert rows(joined) == rows(fact.join(dim_src, fact["fk"] == dim_src["dk"]))
    plan = executed_plan(joined)
    assert "IndexedJoin" not in plan and "BroadcastHashJoin" in plan and "IndexedScan" in plan
    (why,) = join_decisions(joined)
    assert why.startswith("spark: ") and "Spark broadcasts it" in why
    with HyperspaceConfig(spark).override(indexed_join_selection="index"):
        forced = fact.join(dim.to_df(), fact["fk"] == dim["dk"])
        assert rows(forced) == rows(joined)
        assert "IndexedJoin" in executed_plan(forced)
        assert join_decisions(forced)[0].startswith("index: ")
    # Spark's broadcast of the index side is kept with the version: a later join takes it (the
    # index scan under it is not run again) until unpersist() releases it.
    assert "KeptBroadcastExchange" in plan
    kept = dim.memory_stats()["keptBroadcastBytes"]
    assert kept > 0
    again = fact.join(dim.to_df(), fact["fk"] == dim["dk"])
    assert rows(again) == rows(joined) and dim.memory_stats()["keptBroadcastBytes"] == kept
    with HyperspaceConfig(spark).override(indexed_kept_broadcasts_max_bytes=0):
        assert "KeptBroadcastExchange" not in executed_plan(fact.join(dim.to_df(), fact["fk"] == dim["dk"]))
    assert HyperspaceConfig(spark).indexed_kept_broadcasts_max_bytes == 64 * 1024 * 1024
    dim.unpersist()
    assert dim.memory_stats()["keptBroadcastBytes"] == 0
    assert rows(fact.join(dim.to_df(), fact["fk"] == dim["dk"])) == rows(joined)
