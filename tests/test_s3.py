"""The index log on S3 through the Python API: a real S3 server on 127.0.0.1 (tests/s3_server.py: moto
in `make test`, SeaweedFS in `make test-s3` and `make test-full`), the sources and ``spark.hyperspace.system.path`` on ``s3a://``, hadoop-aws and
the AWS SDK modules it calls brought by ``spark.jars.packages`` as docs/object-stores.md tells users
(the SDK bundle excluded). Create, query (same rows with Hyperspace off, the index in the plan),
append + refresh, delete + vacuum, and the refusal of ``s3://``; on SeaweedFS also two writers racing
for one name (moto does not serialise conditional writes: tests/s3_server.py).

Runs in a fresh interpreter (its own JVM): hadoop-aws must be on the class path when the JVM starts.
Spark 4.0 (Hadoop 3.4.1) has no conditional create: there the create is refused naming Spark 4.1+.
Io.hyperspace.log.S3LogStoreSuite checks the store itself (races of threads and JVMs, the probe)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_python, versions
from s3_server import RACES_NEED, S3Server, server_kind

pytestmark = [pytest.mark.slow, pytest.mark.ivy]

SCRIPT = textwrap.dedent(
    """
    import os, threading
    from pyspark.sql import SparkSession
    from hyperspace import (Hyperspace, HyperspaceException, IndexConfig, configure_spark_with_hyperspace,
                            disable_hyperspace, enable_hyperspace)

    hadoop, sdk, settings, lake = {hadoop!r}, {sdk!r}, {settings!r}, "s3a://lake"
    root = lake + "/" + {tag!r}  # each run its own prefix of the module's bucket
    packages = [f"org.apache.hadoop:hadoop-aws:{{hadoop}}"] + [
        f"software.amazon.awssdk:{{m}}:{{sdk}}" for m in ("s3", "s3-transfer-manager", "sts")]
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.warehouse.dir", os.path.join({work!r}, "warehouse"))
        .config("spark.jars.packages", ",".join(packages))
        .config("spark.jars.excludes", "software.amazon.awssdk:bundle")
        .config("spark.hyperspace.system.path", root + "/indexes")
        .config("spark.hyperspace.index.numBuckets", "4")
    )
    for k, v in settings.items():
        builder = builder.config("spark.hadoop." + k, v)
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    hs = Hyperspace(spark)
    source = root + "/sources/orders"
    spark.range(0, 300, 1, 3).selectExpr("id", "CAST(id % 11 AS INT) AS k", "CONCAT('v', id) AS v").write.parquet(source)

    if tuple(int(p) for p in hadoop.split(".")[:3]) < (3, 4, 2):
        try:
            hs.create_index(spark.read.parquet(source), IndexConfig("by_k", ["k"], ["v"]))
            raise AssertionError("a create on s3a:// must be refused on Hadoop " + hadoop)
        except HyperspaceException as e:
            assert "Run Spark 4.1 or later" in str(e), str(e)
        print("REFUSED")
        raise SystemExit(0)

    def check(label):
        query = lambda: spark.read.parquet(source).where("k = 3").select("id", "v")
        disable_hyperspace(spark)
        expected = sorted(map(tuple, query().collect()))
        enable_hyperspace(spark)
        df = query()
        actual = sorted(map(tuple, df.collect()))
        plan = df._jdf.queryExecution().executedPlan().toString()
        disable_hyperspace(spark)
        assert actual == expected and actual, label
        assert "Name: by_k" in plan, (label, plan)
        print("OK", label, len(actual))

    # {racers} writer(s) (threads of this session) creating one index: exactly one creates it.
    results = []
    def create():
        try:
            hs.create_index(spark.read.parquet(source), IndexConfig("by_k", ["k"], ["id", "v"]))
            results.append("created")
        except HyperspaceException as e:
            results.append("refused: " + str(e).splitlines()[0])
    threads = [threading.Thread(target=create) for _ in range({racers})]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(r.split(":")[0] for r in results) == ["created"] + ["refused"] * ({racers} - 1), results
    row = hs.indexes().where("name = 'by_k'").collect()[0]
    assert row["state"] == "ACTIVE" and row["indexLocation"].startswith(root + "/indexes/by_k/v__="), row
    check("created")
    if {race_only}:
        print("DONE")
        raise SystemExit(0)

    spark.range(300, 360, 1, 1).selectExpr("id", "CAST(id % 11 AS INT) AS k", "CONCAT('v', id) AS v") \\
        .write.mode("append").parquet(source)
    hs.refresh_index("by_k", "incremental")
    assert hs.indexes().where("name = 'by_k'").collect()[0]["numSourceFiles"] == 4
    check("refreshed")

    hs.delete_index("by_k")
    spark.conf.set("spark.hyperspace.index.vacuum.retentionCheck.enabled", "false")
    hs.vacuum_index("by_k", retain_hours=0)
    assert hs.indexes().where("name = 'by_k'").count() == 0

    spark.conf.set("spark.hyperspace.system.path", "s3://lake/indexes")
    try:
        hs.create_index(spark.read.parquet(source), IndexConfig("s3", ["k"]))
        raise AssertionError("s3:// must be refused")
    except HyperspaceException as e:
        assert "s3a://lake/indexes" in str(e), str(e)
    print("DONE")
    """
)


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    s = S3Server()
    try:
        s.create_bucket("lake")
        yield s
    finally:
        s.stop()


def test_the_server_honours_if_none_match(server: S3Server) -> None:
    """What the put-if-absent stands on, checked with a PutObject of its own: a second conditional PUT
    of a key is refused with 412 and leaves the first object; an unconditional one replaces it."""
    assert server.put("lake", "raw/key", b"first", if_none_match=True) == 200
    assert server.put("lake", "raw/key", b"second", if_none_match=True) == 412
    assert server.get("lake", "raw/key") == b"first"
    assert server.put("lake", "raw/key", b"third", if_none_match=False) == 200
    assert server.get("lake", "raw/key") == b"third"


def run_script(server: S3Server, tmp_path: Path, racers: int, race_only: bool) -> str:
    pins = versions()
    script = SCRIPT.format(
        hadoop=pins["hadoop"], sdk=pins["awssdk"], settings=server.hadoop_settings(), work=str(tmp_path),
        racers=racers, race_only=race_only, tag=f"racers-{racers}",
    )  # fmt: skip
    result = run_python(script, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "DONE" in result.stdout or "REFUSED" in result.stdout, result.stdout
    return result.stdout


def test_index_lifecycle_with_the_system_path_on_s3(server: S3Server, tmp_path: Path) -> None:
    out = run_script(server, tmp_path, racers=1, race_only=False)
    assert "REFUSED" in out or ("OK created" in out and "OK refreshed" in out), out


@pytest.mark.skipif(server_kind() == "moto", reason=RACES_NEED)
def test_two_writers_creating_one_index_on_s3(server: S3Server, tmp_path: Path) -> None:
    out = run_script(server, tmp_path, racers=2, race_only=True)
    assert "REFUSED" in out or "OK created" in out, out


def test_the_hadoop_pin_is_the_one_pyspark_ships() -> None:
    """hadoop-aws must be of the Hadoop the line's Spark bundles (versions.properties ``hadoop.<line>``)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    assert (jars / f"hadoop-client-api-{versions()['hadoop']}.jar").is_file(), sorted(
        p.name for p in jars.glob("hadoop-client-*.jar")
    )
