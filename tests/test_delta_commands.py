"""Delta Lake commands on a table indexed as files, through Python: DELETE, UPDATE, MERGE and
OPTIMIZE work with Hyperspace on and leave the same rows as with it off, while queries reading
the table's files are still answered from the index.

Runs in a fresh interpreter (its own JVM): the Delta jars must be on the class path when the
JVM starts, which the shared session of the other tests was not started with.

The same commands on a table indexed as files are checked in every CI run by the Scala suite
io.hyperspace.rules.WriteCommandSuite; this module runs in `make test-full`."""

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
    pytest.mark.full,
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
    from pyspark.sql import SparkSession
    from hyperspace import Hyperspace, IndexConfig, configure_spark_with_hyperspace, enable_hyperspace, disable_hyperspace

    work = sys.argv[1] if len(sys.argv) > 1 else {work!r}
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.hyperspace.system.path", os.path.join(work, "indexes"))
        .config("spark.hyperspace.index.numBuckets", "4")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    spark = configure_spark_with_hyperspace(configure_spark_with_delta_pip(builder)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    hs = Hyperspace(spark)
    spark.range(0, 40).selectExpr("CAST(id AS INT) AS k", "CONCAT('new', id) AS v").createOrReplaceTempView("updates")

    def table(name):
        path = os.path.join(work, name)
        (spark.range(0, 400, 1, 4).selectExpr("id", "CAST(id * 7 % 23 AS INT) AS k", "CONCAT('v', id) AS v")
         .write.format("delta").save(path))
        return path

    def rows(path):
        disable_hyperspace(spark)
        return sorted(map(tuple, spark.read.format("delta").load(path).collect()))

    commands = {{
        "delete": "DELETE FROM delta.`{{t}}` WHERE k = 3",
        "update": "UPDATE delta.`{{t}}` SET v = CONCAT(v, '!') WHERE k = 4",
        "merge": "MERGE INTO delta.`{{t}}` t USING updates s ON t.k = s.k AND t.id < 100 "
                 "WHEN MATCHED AND s.k % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
                 "WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (1000 + s.k, s.k, s.v)",
        "optimize": "OPTIMIZE delta.`{{t}}`",
    }}
    for label, sql in commands.items():
        on, off = table(label + "_on"), table(label + "_off")
        hs.create_index(spark.read.parquet(on), IndexConfig("d_" + label, ["k"], ["v", "id"]))
        enable_hyperspace(spark)
        plan = spark.read.parquet(on).where("k = 3").select("v")._jdf.queryExecution().executedPlan().toString()
        assert "Name: d_" + label in plan, plan
        spark.sql(sql.format(t=on))
        disable_hyperspace(spark)
        spark.sql(sql.format(t=off))
        assert rows(on) == rows(off), label
        print("OK", label)
    spark.stop()
    """
)


def test_delta_dml_and_optimize_on_an_indexed_table(tmp_path: Path) -> None:
    result = run_python(SCRIPT.format(work=str(tmp_path)), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert [line for line in result.stdout.splitlines() if line.startswith("OK ")] == [
        "OK delete",
        "OK update",
        "OK merge",
        "OK optimize",
    ], result.stdout
