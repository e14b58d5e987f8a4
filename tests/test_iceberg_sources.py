"""Iceberg tables as index sources through the unchanged Python API: a table of a Hadoop catalog,
indexed by name, served fresh, through hybrid scan after an append, again after an incremental
refresh, and at an older snapshot; after a merge-on-read DELETE (delete files on one data file),
not without hybrid scan, with it the files without deletes from the index and the deleted rows
never back, and again after an incremental refresh.

Runs in a fresh interpreter (its own JVM) with the line's iceberg-spark-runtime from Maven Central
(``spark.jars.packages``, the version versions.properties pins for the line). Spark lines without an
Iceberg runtime (``iceberg.<line>=none``) skip it, saying so."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pyspark
import pytest

from conftest import run_python, versions

LINE = ".".join(pyspark.__version__.split(".")[:2])
ICEBERG = versions()["iceberg"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ivy,
    pytest.mark.skipif(
        ICEBERG == "none", reason=f"no Iceberg runtime for Spark {LINE} (versions.properties: iceberg.{LINE}=none)"
    ),
]

SCRIPT = textwrap.dedent(
    """
    import os
    from pyspark.sql import SparkSession
    from hyperspace import (Hyperspace, IndexConfig, DataSkippingIndexConfig, BloomFilterSketch,
                            configure_spark_with_hyperspace, enable_hyperspace, disable_hyperspace)

    work = {work!r}
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
        .config("spark.hyperspace.system.path", os.path.join(work, "indexes"))
        .config("spark.hyperspace.index.numBuckets", "4")
        .config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-{line}_2.13:{iceberg}")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.ice.type", "hadoop")
        .config("spark.sql.catalog.ice.warehouse", os.path.join(work, "iceberg"))
    )
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    hs = Hyperspace(spark)
    spark.sql("CREATE TABLE ice.db.orders (id BIGINT, k INT, v STRING) USING iceberg TBLPROPERTIES ("
              "'format-version'='2', 'write.delete.mode'='merge-on-read')")

    def append(start, n):
        (spark.range(start, start + n, 1, 4)
         .selectExpr("id", "CAST(pmod(hash(id, 7), 23) AS INT) AS k", "CONCAT('v', id) AS v")
         .writeTo("ice.db.orders").append())

    def check(label, query, used):
        # Same rows with Hyperspace off and on (a fresh DataFrame each); on, the index serves the
        # scan exactly when `used`.
        disable_hyperspace(spark)
        expected = sorted(map(tuple, query().collect()))
        enable_hyperspace(spark)
        df = query()
        actual = sorted(map(tuple, df.collect()))
        plan = df._jdf.queryExecution().executedPlan().toString()
        disable_hyperspace(spark)
        assert actual == expected, label
        assert ("Name: by_name" in plan) == used, (label, plan)
        print("OK", label)

    append(0, 400)
    first = spark.sql("SELECT snapshot_id FROM ice.db.orders.snapshots ORDER BY committed_at").head()[0]
    hs.create_index(spark.table("ice.db.orders"), IndexConfig("by_name", ["k"], ["v", "id"], lineage=True))
    lookup = lambda df: df.where("k = 3").select("id", "v")
    check("fresh", lambda: lookup(spark.table("ice.db.orders")), True)
    append(1000, 40)
    # Small files: the appended ones are about as big as the indexed ones, above the default ratio.
    spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
    spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", "1.0")
    check("hybrid scan", lambda: lookup(spark.table("ice.db.orders")), True)
    spark.conf.unset("spark.hyperspace.index.hybridscan.enabled")
    hs.refresh_index("by_name", "incremental")
    check("refreshed", lambda: lookup(spark.table("ice.db.orders")), True)
    check("time travel", lambda: lookup(spark.read.option("versionAsOf", first).table("ice.db.orders")), True)
    # A data skipping index: a bloom filter on v, whose string bounds in Iceberg's manifests keep two
    # files for v = 'v123' ('v0'-'v99' and 'v100'-'v199'); the statistics report both prunings.
    hs.create_index(spark.table("ice.db.orders"), DataSkippingIndexConfig("skip_v", BloomFilterSketch("v")))
    enable_hyperspace(spark)
    assert spark.table("ice.db.orders").where("v = 'v123'").count() == 1
    [stats] = hs.last_query_skipping_stats()
    disable_hyperspace(spark)
    assert stats.format_pruning is not None and stats.format_pruning.format == "iceberg", stats
    assert stats.files_skipped > 0 and stats.files_read < stats.files_total, stats
    print("OK data skipping")
    files = spark.sql("SELECT count(*) FROM ice.db.orders.data_files").head()[0]
    spark.sql("DELETE FROM ice.db.orders WHERE id < 20")
    # The DELETE wrote delete files, on some data files only.
    summary = spark.sql("SELECT summary FROM ice.db.orders.snapshots ORDER BY committed_at DESC").head()[0]
    assert int(summary["added-delete-files"]) > 0, summary
    masked = spark.sql("SELECT count(DISTINCT file_path) FROM ice.db.orders.position_deletes").head()[0]
    assert 0 < masked < files, (masked, files)
    check("merge-on-read delete", lambda: lookup(spark.table("ice.db.orders")), False)
    why = hs.why_not(lookup(spark.table("ice.db.orders")), "by_name", display=False)
    assert "hybrid scan" in why, why
    print("OK why_not")
    spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
    spark.conf.set("spark.hyperspace.index.hybridscan.maxDeletedRatio", "1.0")
    check("merge-on-read delete, hybrid scan", lambda: lookup(spark.table("ice.db.orders")), True)
    enable_hyperspace(spark)
    assert spark.table("ice.db.orders").where("id < 20 AND k = 3").count() == 0
    disable_hyperspace(spark)
    spark.conf.unset("spark.hyperspace.index.hybridscan.enabled")
    hs.refresh_index("by_name", "incremental")
    check("merge-on-read delete, refreshed", lambda: lookup(spark.table("ice.db.orders")), True)
    spark.stop()
    """
)


def test_iceberg_tables_through_the_python_api(tmp_path: Path) -> None:
    result = run_python(SCRIPT.format(work=str(tmp_path), line=LINE, iceberg=ICEBERG), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert [line for line in result.stdout.splitlines() if line.startswith("OK ")] == [
        "OK fresh",
        "OK hybrid scan",
        "OK refreshed",
        "OK time travel",
        "OK data skipping",
        "OK merge-on-read delete",
        "OK why_not",
        "OK merge-on-read delete, hybrid scan",
        "OK merge-on-read delete, refreshed",
    ], result.stdout
