"""Hyperspace's SQL statements (docs/sql.md) from Python's ``spark.sql`` on a classic session.

The SQL-only workflow a user without the Python API has: create, list, describe, refresh,
optimize, explain, drop, restore and vacuum indexes; errors arrive as the same Hyperspace
exceptions, with the same messages, as the Python API raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    HyperspaceIndexNotFoundException,
    IndexConfig,
    MinMaxSketch,
)
from hyperspace._backends import create_statement, quote_string

# Columns of index(name) that differ between two builds of the same index (times, paths, versions).
_VOLATILE = ("lastModified", "indexLocation", "indexRoot", "indexContentPaths", "logVersion", "dataVersion")


def _write(spark: SparkSession, path: Path, start: int = 0, rows: int = 300) -> str:
    spark.range(start, start + rows, 1, 3).selectExpr("id", "CAST(id % 13 AS STRING) AS tag", "id * 2 AS v").write.mode(
        "append"
    ).parquet(str(path))
    return str(path)


@pytest.fixture
def source(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    # Each test's own system path, and the shared session's setting back afterwards.
    with HyperspaceConfig(spark).override(system_path=str(tmp_path / "indexes")):
        yield _write(spark, tmp_path / "data")


def sql_only_script(spark: SparkSession, source: str) -> None:
    """Creates, lists, refreshes, explains and drops indexes with nothing but ``spark.sql``."""
    # With data cached, Spark canonicalizes every plan it runs (a command must survive that).
    cached = spark.range(3).cache()
    cached.count()
    spark.sql(
        f"CREATE HYPERSPACE INDEX by_tag ON parquet.`{source}` (tag) INCLUDE (v) WITH (numBuckets = 4, lineage = true)"
    )
    spark.sql(f"CREATE HYPERSPACE INDEX skip_id ON parquet.`{source}` USING DATASKIPPING (MinMax(id), ValueList(tag))")
    listed = {r["name"]: r for r in spark.sql("SHOW HYPERSPACE INDEXES").collect()}
    assert set(listed) == {"by_tag", "skip_id"}
    assert listed["by_tag"]["includedColumns"] == ["v"] and listed["by_tag"]["numBuckets"] == 4
    assert listed["skip_id"]["kind"] == "DataSkippingIndex"
    assert spark.sql("DESCRIBE HYPERSPACE INDEX by_tag").first()["lineage"] is True

    _write(spark, Path(source), start=1000, rows=30)
    assert spark.sql("SHOW HYPERSPACE INDEXES").where("name = 'by_tag'").first()["appendedFiles"] == 3
    summary = {r["name"]: r for r in spark.sql("SHOW HYPERSPACE INDEX SUMMARY").collect()}
    assert summary["by_tag"]["columns"] == "tag include v" and summary["by_tag"]["state"] == "ACTIVE"
    assert summary["by_tag"]["freshness"] == "3 appended, 0 deleted source files not in the index data"
    refreshed = spark.sql("REFRESH HYPERSPACE INDEX by_tag INCREMENTAL").first()
    assert refreshed["changed"] and refreshed["appendedFiles"] == 3, refreshed
    spark.sql("REFRESH HYPERSPACE INDEX skip_id QUICK")
    assert spark.sql("OPTIMIZE HYPERSPACE INDEX by_tag FULL").first()["operation"] == "optimize"

    spark.sql("SET spark.hyperspace.apply.enabled = true")
    try:
        query = f"SELECT v FROM parquet.`{source}` WHERE tag = '7'"
        plan = spark.sql(f"EXPLAIN HYPERSPACE {query}").first()["plan"]
        assert "by_tag" in plan, plan
        report = spark.sql(f"EXPLAIN HYPERSPACE WHY NOT INDEX skip_id {query}").first()["report"]
        assert "skip_id" in report, report
        expected = sorted(r["v"] for r in spark.sql(query).collect())
        assert len(expected) == 25
    finally:
        spark.sql("SET spark.hyperspace.apply.enabled = false")
    assert expected == sorted(r["v"] for r in spark.sql(query).collect())

    spark.sql("DROP HYPERSPACE INDEX by_tag")
    assert spark.sql("SHOW HYPERSPACE INDEXES").where("name = 'by_tag'").first()["state"] == "DELETED"
    spark.sql("RESTORE HYPERSPACE INDEX by_tag")
    for name in ("by_tag", "skip_id"):
        spark.sql(f"DROP HYPERSPACE INDEX {name}")
    spark.sql("SET spark.hyperspace.index.vacuum.retentionCheck.enabled = false")
    try:
        for name in ("by_tag", "skip_id"):
            spark.sql(f"VACUUM HYPERSPACE INDEX {name} RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.hyperspace.index.vacuum.retentionCheck.enabled")
    assert spark.sql("SHOW HYPERSPACE INDEXES").count() == 0
    cached.unpersist()


def test_sql_only_script(spark: SparkSession, source: str) -> None:
    sql_only_script(spark, source)


def test_sql_errors_are_the_api_errors(spark: SparkSession, source: str) -> None:
    hs = Hyperspace(spark)
    with pytest.raises(HyperspaceIndexNotFoundException) as via_sql:
        spark.sql("REFRESH HYPERSPACE INDEX missing")
    with pytest.raises(HyperspaceIndexNotFoundException) as via_api:
        hs.refresh_index("missing")
    assert str(via_sql.value) == str(via_api.value)

    with pytest.raises(HyperspaceException) as bad_mode:
        spark.sql(f"CREATE HYPERSPACE INDEX m ON parquet.`{source}` (id)")
        spark.sql("REFRESH HYPERSPACE INDEX m sideways")
    with pytest.raises(HyperspaceException) as bad_mode_api:
        hs.refresh_index("m", "sideways")  # type: ignore[arg-type]
    assert str(bad_mode.value) == str(bad_mode_api.value)
    assert "unknown mode 'sideways'" in str(bad_mode.value)

    with pytest.raises(HyperspaceException, match="expected the end of the statement but found 'extra'"):
        spark.sql("DROP HYPERSPACE INDEX m extra")
    hs.delete_index("m")


@pytest.mark.parametrize(
    "config",
    [
        IndexConfig("rendered", ["tag", "id"], ["v"], num_buckets=3, lineage=False),
        DataSkippingIndexConfig("rendered", MinMaxSketch("id * 2"), BloomFilterSketch("concat(tag, ',)')", fpp=0.05)),
    ],
    ids=["covering", "dataskipping"],
)
def test_the_statements_python_renders_build_the_same_index(spark: SparkSession, source: str, config: object) -> None:
    """The SQL the Spark Connect backend sends builds exactly what the py4j API builds."""
    hs = Hyperspace(spark)
    hs.create_index(spark.read.parquet(source), config)  # type: ignore[arg-type]
    via_api = hs.index("rendered").drop(*_VOLATILE).collect()
    hs.delete_index("rendered")
    spark.conf.set("spark.hyperspace.index.vacuum.retentionCheck.enabled", "false")
    try:
        hs.vacuum_index("rendered", retain_hours=0)
    finally:
        spark.conf.unset("spark.hyperspace.index.vacuum.retentionCheck.enabled")
    spark.sql(create_statement(config, f"parquet.`{source}`"))  # type: ignore[arg-type]
    via_sql = hs.index("rendered").drop(*_VOLATILE).collect()
    assert via_sql == via_api
    hs.delete_index("rendered")


def test_spark_sql_answers_as_without_the_extension(spark: SparkSession) -> None:
    # Parameterized SQL, as notebooks, dbt and BI tools send it, and Spark's own long-prefix case.
    assert spark.sql("SELECT :x AS v", args={"x": 70}).first()["v"] == 70
    assert spark.sql("SELECT ? AS v", args=[41]).first()["v"] == 41
    assert spark.sql("EXECUTE IMMEDIATE 'SELECT ? * 2' USING 21").first()[0] == 42
    assert spark.sql(" " * 2000 + "SELECT 1 AS v").first()["v"] == 1
    spark.sql("CREATE TABLE indexed (id INT) USING parquet")
    try:
        spark.sql("INSERT INTO indexed VALUES (5)")
        spark.sql("CREATE TEMPORARY VIEW more_ids AS SELECT 6 AS id")
        spark.sql("INSERT INTO indexed TABLE more_ids")
        assert sorted(r["id"] for r in spark.table("indexed").collect()) == [5, 6]
    finally:
        spark.sql("DROP TABLE indexed")
        spark.catalog.dropTempView("more_ids")


def test_workload_texts_never_run(spark: SparkSession, source: str) -> None:
    spark.sql(f"CREATE TEMPORARY VIEW victim AS SELECT * FROM parquet.`{source}`")
    spark.sql(f"CREATE TABLE victim_t USING parquet AS SELECT * FROM parquet.`{source}`")
    try:
        hs = Hyperspace(spark)
        for command in ("DROP TABLE victim_t", "INSERT INTO victim_t SELECT * FROM victim", "SET a.b = c"):
            with pytest.raises(HyperspaceException, match="is not a query"):
                hs.recommend([command])
            with pytest.raises(HyperspaceException, match="is not a query"):
                spark.sql(f"SHOW HYPERSPACE RECOMMENDATIONS FOR {quote_string(command)}")
        assert spark.table("victim_t").count() == 300
        assert spark.conf.get("a.b", None) is None
        # A query is still read (analysed, never run).
        hs.recommend(["SELECT v FROM victim WHERE tag = '3'"])
    finally:
        spark.sql("DROP TABLE IF EXISTS victim_t")
        spark.catalog.dropTempView("victim")
