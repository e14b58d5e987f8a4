"""Delta tables as index sources through the unchanged Python API: by path and by catalog name,
after a DELETE with deletion vectors, and with time travel, queries return the same rows with
Hyperspace on and off, and the index serves them where it can.

Runs in a fresh interpreter (its own JVM): the Delta jars must be on the class path when the
JVM starts, which the shared session of the other tests was not started with."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pyspark
import pytest

from conftest import run_python, versions

# A line with no Delta release (versions.properties `delta.<line>=none`, Spark 4.3) has no Delta
# support in its jar and no delta-spark in its venv: skipped, saying so.
_LINE = ".".join(pyspark.__version__.split(".")[:2])
pytestmark = [
    pytest.mark.slow,
    pytest.mark.ivy,
    pytest.mark.skipif(
        versions()["delta"] == "none",
        reason=f"no Delta release for Spark {_LINE} (versions.properties: delta.{_LINE}=none)",
    ),
]

SCRIPT = textwrap.dedent(
    """
    import os, sys
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession, functions as F
    from hyperspace import Hyperspace, IndexConfig, configure_spark_with_hyperspace, enable_hyperspace, disable_hyperspace
    from hyperspace import BloomFilterSketch, DataSkippingIndexConfig, FormatPruning, HyperspaceConfig

    work = {work!r}
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
        .config("spark.hyperspace.system.path", os.path.join(work, "indexes"))
        .config("spark.hyperspace.index.numBuckets", "4")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Delta rebuilds a snapshot in 50 tasks by default (sized for big logs): most of each
        # read's time on a test table of a few commits.
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    spark = configure_spark_with_hyperspace(configure_spark_with_delta_pip(builder)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    hs = Hyperspace(spark)
    path = os.path.join(work, "orders")
    (spark.range(0, 400, 1, 4).selectExpr("id", "CAST(pmod(hash(id, 7), 23) AS INT) AS k", "CONCAT('v', id) AS v")
     .write.format("delta").option("delta.enableDeletionVectors", "true").save(path))
    spark.sql(f"CREATE TABLE orders USING delta LOCATION '{{path}}'")

    def check(label, query, *indexes):
        # Same rows with Hyperspace off and on (a fresh DataFrame each: a DataFrame keeps the plan
        # it was first optimized with); on, one of `indexes` serves the scan (none if empty).
        disable_hyperspace(spark)
        expected = sorted(map(tuple, query().collect()))
        enable_hyperspace(spark)
        df = query()
        actual = sorted(map(tuple, df.collect()))
        plan = df._jdf.queryExecution().executedPlan().toString()
        disable_hyperspace(spark)
        assert actual == expected, label
        used = [name for name in ("by_path", "by_name") if "Name: " + name in plan]
        assert (len(used) == 1 and used[0] in indexes) if indexes else not used, (label, plan)
        print("OK", label)

    hs.create_index(spark.read.format("delta").load(path), IndexConfig("by_path", ["k"], ["v"], lineage=True))
    hs.create_index(spark.table("orders"), IndexConfig("by_name", ["k"], ["id"]))
    check("path", lambda: spark.read.format("delta").load(path).where("k = 3").select("v"), "by_path")
    check("name", lambda: spark.table("orders").where("k = 3").select("id"), "by_name")
    spark.sql(f"DELETE FROM delta.`{{path}}` WHERE k = 3 AND id < 100")
    check("stale", lambda: spark.read.format("delta").load(path).where("k = 3").select("v"))
    hs.refresh_index("by_path", "incremental")
    check("refreshed", lambda: spark.read.format("delta").load(path).where("k = 3").select("v"), "by_path")
    check("time travel", lambda: spark.read.format("delta").option("versionAsOf", 0).load(path).where("k = 3").select("id"),
          "by_name")
    refreshed = hs.refresh_index("by_path", "incremental")
    assert "of the delta log" in refreshed.message or not refreshed.changed, refreshed.message

    # Data skipping over the table: a bloom filter on v (Delta keeps min/max of v, which cannot
    # rule out a value inside a file's range); both prunings in the statistics.
    hs.create_index(spark.read.format("delta").load(path), DataSkippingIndexConfig("v_bloom", BloomFilterSketch("v")))
    def lookup():
        return spark.read.format("delta").load(path).where("v = 'v250'").select("id")
    disable_hyperspace(spark)
    expected = sorted(lookup().collect())
    enable_hyperspace(spark)
    assert sorted(lookup().collect()) == expected
    [stats] = hs.last_query_skipping_stats()
    disable_hyperspace(spark)
    assert isinstance(stats.format_pruning, FormatPruning) and stats.format_pruning.format == "delta", stats
    assert stats.files_read == 1 and stats.format_pruning.files_skipped_after >= 1, stats
    print("OK skipping")

    # Join pruning at run time: the broadcast side's two keys leave out the Delta files whose
    # bloom filters hold neither (the small side is filtered on d, so nothing is inferred onto v).
    dim = os.path.join(work, "dim")
    spark.range(0, 400, 1, 1).selectExpr("CONCAT('v', id) AS v2", "id AS d").write.parquet(dim)
    def joined():
        small = spark.read.parquet(dim).where("d IN (7, 250)")
        return spark.read.format("delta").load(path).join(small, F.col("v") == F.col("v2")).select("id", "d")
    disable_hyperspace(spark)
    expected = sorted(joined().collect())
    enable_hyperspace(spark)
    HyperspaceConfig(spark).dataskipping_join_pruning_table_formats_enabled = True  # off by default
    assert sorted(joined().collect()) == expected and len(expected) == 2, expected
    [stats] = hs.last_query_skipping_stats()
    disable_hyperspace(spark)
    assert "join key" in stats.filter and stats.format_pruning.format == "delta", stats
    assert stats.files_skipped >= 1 and stats.files_read < stats.files_total, stats
    print("OK join pruning")
    spark.stop()
    """
)


def test_delta_tables_through_the_python_api(tmp_path: Path) -> None:
    result = run_python(SCRIPT.format(work=str(tmp_path)), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert [line for line in result.stdout.splitlines() if line.startswith("OK ")] == [
        "OK path",
        "OK name",
        "OK stale",
        "OK refreshed",
        "OK time travel",
        "OK skipping",
        "OK join pruning",
    ], result.stdout
