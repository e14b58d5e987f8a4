"""The index advisor from Python: hs.recommend over DataFrames and SQL, its result, create_all,
and the errors for bad input (docs/advisor.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    Recommendations,
    RecordedQuery,
    disable_hyperspace,
    enable_hyperspace,
)


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(work_dir / "advisor-indexes"), num_buckets=4):
        yield Hyperspace(spark)


def _wide(spark: SparkSession, path: Path, rows: int, files: int) -> str:
    (
        spark.range(0, rows, 1, files)
        .selectExpr(
            "id",
            "id % 97 AS k",
            "id * 3 AS a",
            "CAST(id % 13 AS STRING) AS b",
            "id % 7 AS c",
            "REPEAT(CAST(id AS STRING), 20) AS payload",
        )
        .write.parquet(str(path))
    )
    return str(path)


@pytest.fixture(scope="module")
def tables(spark: SparkSession, work_dir: Path) -> dict[str, str]:
    return {
        "left": _wide(spark, work_dir / "advisor-left", 2000, 4),
        "right": _wide(spark, work_dir / "advisor-right", 1500, 3),
    }


def _rows(df: DataFrame) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_lookup_and_join_from_dataframes_then_create_all(
    spark: SparkSession, hs: Hyperspace, tables: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        left, right = spark.read.parquet(tables["left"]), spark.read.parquet(tables["right"])
        lookup = left.where("k = 42").select("a", "b")
        join = left.select("k", "a").join(right.select("k", "c"), "k")
        recs = hs.recommend([lookup, (join, 2.0)])
        assert isinstance(recs, Recommendations)
        # One index on left.k serves both (included columns merged), one on right.k the join's other side.
        by_cols = {(r.config.indexed_columns, r.config.included_columns) for r in recs.indexes}
        assert by_cols == {(("k",), ("a", "b")), (("k",), ("c",))}, str(recs)
        served = {q.query for r in recs.indexes for q in r.queries}
        assert served == {"query 1", "query 2"}
        join_evidence = next(q for r in recs.indexes for q in r.queries if q.query == "query 2")
        assert (join_evidence.exchanges_before, join_evidence.exchanges_after) == (2, 0)
        assert join_evidence.weight == 2.0
        assert [r.rank for r in recs.indexes] == [1, 2]
        assert recs.workload_cost_after is not None and recs.workload_cost_before is not None
        assert recs.workload_cost_after < recs.workload_cost_before
        recs.show()
        out = capsys.readouterr().out
        assert "2 index(es) recommended" in out and "serves 'query 2' (weight 2)" in out, out

        expected = {"lookup": _rows(lookup), "join": _rows(join)}
        assert recs.create_all() == [r.config.name for r in recs.indexes]
        enable_hyperspace(spark)
        try:
            for name, query in (
                ("lookup", left.where("k = 42").select("a", "b")),
                ("join", left.select("k", "a").join(right.select("k", "c"), "k")),
            ):
                assert _rows(query) == expected[name]
                used = [
                    r.config.name
                    for r in recs.indexes
                    if any(r.config.name in line for line in hs.explain(query, display=False).splitlines())
                ]
                assert used, name
                for index in used:
                    assert hs.why_not(query, index, display=False) == f"{index}: used by this query"
        finally:
            disable_hyperspace(spark)
            for r in recs.indexes:
                hs.delete_index(r.config.name)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_sql_queries_budget_and_max_count(spark: SparkSession, hs: Hyperspace, tables: dict[str, str]) -> None:
    spark.read.parquet(tables["left"]).createOrReplaceTempView("py_advisor_left")
    spark.read.parquet(tables["right"]).createOrReplaceTempView("py_advisor_right")
    workload = ["SELECT a FROM py_advisor_left WHERE k = 5", "SELECT payload FROM py_advisor_right WHERE id = 9"]
    recs = hs.recommend(workload)
    assert len(recs) == 2, str(recs)
    assert {q.query for r in recs.indexes for q in r.queries} == set(workload)
    assert len(hs.recommend(workload, max_indexes=1)) == 1
    smallest = min(r.estimated_size_bytes for r in recs.indexes)
    within = hs.recommend(workload, budget_bytes=smallest)
    assert len(within) == 1 and within.total_size_bytes <= smallest
    assert len(hs.recommend(workload, budget_bytes=0)) == 0


def test_nothing_for_a_query_no_index_helps(spark: SparkSession, hs: Hyperspace, tables: dict[str, str]) -> None:
    recs = hs.recommend([spark.read.parquet(tables["left"]).groupBy().count()])
    assert len(recs) == 0 and recs.create_all() == []
    assert str(recs).startswith("0 index(es) recommended")


def test_bad_input_gets_clear_errors(spark: SparkSession, hs: Hyperspace, tables: dict[str, str]) -> None:
    with pytest.raises(HyperspaceException, match="the workload is empty"):
        hs.recommend([])
    with pytest.raises(HyperspaceException, match="expects a list of queries"):
        hs.recommend("SELECT 1")  # type: ignore[arg-type]
    with pytest.raises(HyperspaceException, match="Workload query 'SELECT a FROM no_such_table' cannot be analyzed"):
        hs.recommend(["SELECT a FROM no_such_table"])
    with pytest.raises(HyperspaceException, match="weight must be a positive number"):
        hs.recommend([("SELECT 1", 0)])
    with pytest.raises(HyperspaceException, match="weight must be a positive number; got inf"):
        hs.recommend([("SELECT 1", float("inf"))])
    with pytest.raises(HyperspaceException, match="budget_bytes must be a whole number"):
        hs.recommend(["SELECT 1"], budget_bytes=-5)
    with pytest.raises(HyperspaceException, match="Workload query 1 must be a DataFrame"):
        hs.recommend([42])  # type: ignore[list-item]


RECORD_KEY = "spark.hyperspace.advisor.recordQueries"


def test_recorded_queries_weight_the_recommendation(
    spark: SparkSession, hs: Hyperspace, tables: dict[str, str]
) -> None:
    spark.read.parquet(tables["left"]).createOrReplaceTempView("rec_left")
    lookup_k = "SELECT a FROM rec_left WHERE k = 5"
    lookup_a = "SELECT k FROM rec_left WHERE a = 30"
    spark.sql(lookup_k).collect()
    with pytest.raises(HyperspaceException, match=f"query recording is off in this session: set {RECORD_KEY}=true"):
        hs.recommend()
    with HyperspaceConfig(spark).override(advisor_record_queries=True):
        hs.clear_recorded_queries()
        try:
            for _ in range(3):
                spark.sql(lookup_k).collect()
            spark.sql(lookup_a).collect()
            spark.sql("SHOW HYPERSPACE INDEXES").collect()  # a command: not recorded
            assert hs.recorded_queries() == [RecordedQuery(lookup_k, 3), RecordedQuery(lookup_a, 1)]
            assert hs.recordedQueries() == hs.recorded_queries()

            recs = hs.recommend()
            explicit = hs.recommend([(lookup_k, 3.0), lookup_a])
            assert [(r.config, r.benefit, r.queries) for r in recs.indexes] == [
                (r.config, r.benefit, r.queries) for r in explicit.indexes
            ], f"{recs}\n---\n{explicit}"
            assert {r.config.indexed_columns for r in recs.indexes} == {("k",), ("a",)}, str(recs)
            # With room for one index, the query run three times wins.
            assert [r.config.indexed_columns for r in hs.recommend(max_indexes=1).indexes] == [("k",)]

            assert hs.clear_recorded_queries() == 2
            assert hs.recorded_queries() == []
            with pytest.raises(HyperspaceException, match="no query has been recorded in this session yet"):
                hs.recommend()
        finally:
            hs.clear_recorded_queries()


def test_recorded_queries_are_bounded(spark: SparkSession, hs: Hyperspace, tables: dict[str, str]) -> None:
    left = spark.read.parquet(tables["left"])
    with HyperspaceConfig(spark).override(advisor_record_queries=True, advisor_max_recorded_queries=2):
        hs.clear_recorded_queries()
        try:
            for k in (1, 2, 1, 3):
                left.where(f"k = {k}").select("a").collect()
            recorded = hs.recorded_queries()
            # Literals make distinct plans; k = 2 was the least recently run of the three.
            assert [q.frequency for q in recorded] == [2, 1], recorded
            assert all(q.query.startswith("recorded query ") and tables["left"] in q.query for q in recorded)
        finally:
            hs.clear_recorded_queries()


def _write_kinds_table(spark: SparkSession, where: Path) -> str:
    """Rows over 8 files: x and y independent and uniform, ts rising from file to file, r random."""
    path = str(where)
    spark.range(0, 40000, 1, 8).selectExpr(
        "id AS ts",
        "CAST(pmod(hash(id, 1), 1000) AS INT) AS x",
        "CAST(pmod(hash(id, 2), 1000) AS INT) AS y",
        "CAST(pmod(hash(id, 3), 100000) AS BIGINT) AS r",
        "id * 3 AS a",
        "REPEAT(CAST(id AS STRING), 8) AS payload",
    ).write.parquet(path)
    return path


@pytest.fixture(scope="module")
def kinds_table(spark: SparkSession, work_dir: Path) -> str:
    return _write_kinds_table(spark, work_dir / "advisor-kinds")


def _source_bytes(path: str) -> int:
    return sum(p.stat().st_size for p in Path(path).glob("*.parquet"))


def test_two_column_ranges_get_a_zorder_index_then_create_all(
    spark: SparkSession, hs: Hyperspace, kinds_table: str
) -> None:
    from hyperspace import ZOrderCoveringIndexConfig

    # About 60 files of Z-order layout: a box of each column's lowest 30% meets a fraction of them.
    with HyperspaceConfig(spark).override(zorder_target_file_size="16k"):
        box = spark.read.parquet(kinds_table).where("x BETWEEN 0 AND 300 AND y BETWEEN 0 AND 300").select("a")
        recs = hs.recommend([box], max_indexes=1)
        assert len(recs) == 1, str(recs)
        top = recs.indexes[0]
        assert isinstance(top.config, ZOrderCoveringIndexConfig), str(recs)
        assert (tuple(top.config.indexed_columns), tuple(top.config.included_columns)) == (("x", "y"), ("a",))
        assert top.kind == "ZOrderCoveringIndex" and top.indexed_columns == ("x", "y")
        assert top.queries[0].bytes_after * 2 < top.estimated_size_bytes, str(recs)
        assert "Z-order covering on (x, y) incl. (a)" in str(recs)
        expected = _rows(box)
        assert recs.create_all() == [top.config.name]
        enable_hyperspace(spark)
        try:
            query = spark.read.parquet(kinds_table).where("x BETWEEN 0 AND 300 AND y BETWEEN 0 AND 300").select("a")
            assert _rows(query) == expected
            assert hs.why_not(query, top.config.name, display=False) == f"{top.config.name}: used by this query"
        finally:
            disable_hyperspace(spark)
            hs.delete_index(top.config.name)


def test_a_column_clustered_by_file_gets_a_minmax_sketch_a_random_lookup_a_bloom_filter(
    spark: SparkSession, hs: Hyperspace, kinds_table: str
) -> None:
    from hyperspace import BloomFilterSketch, DataSkippingIndexConfig, MinMaxSketch

    clustered = spark.read.parquet(kinds_table).where("ts BETWEEN 12000 AND 12500")
    # r: 100,000 values at random, 5,000 rows per file: a value is in few files, anywhere.
    random = spark.read.parquet(kinds_table).where("r = 4242")
    with HyperspaceConfig(spark).override(advisor_bloom_filter_fpp=0.02):
        recs = hs.recommend([clustered, random], budget_bytes=_source_bytes(kinds_table) // 10)
    by_name = {r.config.name: r for r in recs.indexes}
    assert set(by_name) == {"advisor_kinds_minmax_ts", "advisor_kinds_bloom_r"}, str(recs)
    r = by_name["advisor_kinds_minmax_ts"]
    assert r.config.to_json() == DataSkippingIndexConfig("advisor_kinds_minmax_ts", MinMaxSketch("ts")).to_json()
    assert r.kind == "DataSkippingIndex" and r.indexed_columns == ("MinMax(ts)",) and r.included_columns == ()
    assert [q.query for q in r.queries] == ["query 1"]
    assert r.queries[0].bytes_after * 4 < r.queries[0].bytes_before
    assert "data skipping with MinMax(ts)" in str(recs)
    bloom = by_name["advisor_kinds_bloom_r"]
    (sketch,) = bloom.config.sketches
    assert isinstance(sketch, BloomFilterSketch) and sketch.expr == "r" and sketch.fpp == 0.02, str(recs)
    assert bloom.indexed_columns[0].startswith("BloomFilter(r, ") and [q.query for q in bloom.queries] == ["query 2"]
    expected = {"ts": _rows(clustered), "r": _rows(random)}
    recs.create_all()
    enable_hyperspace(spark)
    try:
        for name, where in (
            ("advisor_kinds_minmax_ts", "ts BETWEEN 12000 AND 12500"),
            ("advisor_kinds_bloom_r", "r = 4242"),
        ):
            query = spark.read.parquet(kinds_table).where(where)
            assert _rows(query) == expected[where.split()[0]]
            assert hs.why_not(query, name, display=False) == f"{name}: used by this query"
    finally:
        disable_hyperspace(spark)
        for name in by_name:
            hs.delete_index(name)


@pytest.fixture(scope="module")
def split_table(spark: SparkSession, work_dir: Path) -> str:
    # 20,000 wide rows over 4 files of small row groups: k about 3 rows a key, at random.
    path = str(work_dir / "advisor-split")
    (
        spark.range(0, 20000, 1, 4)
        .selectExpr(
            "id",
            "CAST(pmod(hash(id, 11), 6667) AS BIGINT) AS k",
            *[f"CONCAT('p{i}-', REPEAT(CAST(pmod(hash(id, {i}), 1000000) AS STRING), 3)) AS pad{i}" for i in range(10)],
        )
        .write.option("parquet.block.size", "16384")
        .option("parquet.page.size.row.check.min", "10")
        .option("parquet.page.size.row.check.max", "50")
        .option("parquet.page.size", "4096")
        .parquet(path)
    )
    return path


def test_select_star_lookups_under_a_small_budget_get_a_split_index_and_say_why_not_a_copy(
    spark: SparkSession, hs: Hyperspace, split_table: str
) -> None:
    from hyperspace import RejectedCandidate, SplitIndexConfig

    key = spark.read.parquet(split_table).where("id = 17").select("k").head()[0]
    lookup = spark.read.parquet(split_table).where(f"k = {key}")
    recs = hs.recommend([lookup], budget_bytes=_source_bytes(split_table) // 10)
    split = [r for r in recs.indexes if isinstance(r.config, SplitIndexConfig)]
    assert [r.config.name for r in split] == ["advisor_split_split_k"], str(recs)
    assert split[0].kind == "SplitIndex" and split[0].indexed_columns == ("k",), str(recs)
    assert "split on (k)" in str(recs)
    # The covering copy of every column was considered and did not fit.
    copies = [r for r in recs.rejected if r.kind == "CoveringIndex"]
    assert copies and all(isinstance(r, RejectedCandidate) and r.reason == "over_budget" for r in copies), str(recs)
    assert "not recommended" in str(recs)
    expected = _rows(lookup)
    recs.create_all()
    enable_hyperspace(spark)
    try:
        query = spark.read.parquet(split_table).where(f"k = {key}")
        assert _rows(query) == expected
        name = "advisor_split_split_k"
        assert hs.why_not(query, name, display=False) == f"{name}: used by this query"
    finally:
        disable_hyperspace(spark)
        for r in recs.indexes:
            hs.delete_index(r.config.name)
