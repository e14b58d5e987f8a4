"""The Python API over Spark Connect: the README's examples against a classic session and a real
Spark Connect server, and a SQL-only script over Connect.

The server is pyspark's own (``SparkConnectServer`` from the installed pyspark's jars), started
with the Hyperspace jar and extension on 127.0.0.1 and a free port, and stopped at the end.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import DataFrame, SparkSession

import hyperspace
from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceIndexNotFoundException,
    IndexConfig,
    MaintenanceResult,
    MinMaxSketch,
    NullCountSketch,
    PrefixSketch,
    SuffixSketch,
    ValueListSketch,
    disable_hyperspace,
    enable_hyperspace,
    is_hyperspace_enabled,
)
from hyperspace._backends import SqlBackend, is_connect_session
from hyperspace._jvm import EXTENSION_CLASS
from hyperspace.log import history

pytestmark = pytest.mark.slow

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
SYSTEM_PATH_KEY = "spark.hyperspace.system.path"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, server: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"The Spark Connect server exited ({server.returncode}):\n{log.read_text()[-4000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(1)
    pytest.fail(f"The Spark Connect server did not listen on {port} within {timeout}s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="module")
def connect_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A Spark Connect session to a server started for this module with the Hyperspace jar."""
    work = tmp_path_factory.mktemp("connect-server")
    spark_home = Path(pyspark.__file__).resolve().parent
    port = _free_port()
    log = work / "server.log"
    command = [
        str(spark_home / "bin" / "spark-submit"),
        "--class", SERVER_CLASS,
        "--name", "hyperspace-connect-test",
        "--master", "local[2]",
        "--jars", str(hyperspace.jar_path()),
        "--conf", f"spark.sql.extensions={EXTENSION_CLASS}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=4",
        "--conf", f"spark.sql.warehouse.dir={work / 'warehouse'}",
    ]  # fmt: skip
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable}
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_for_port(port, server, log)
        # Connect's own builder: pyspark's generic one refuses a remote session in a process that
        # also runs a classic one (the session fixture of the other tests).
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        session = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        try:
            yield session
        finally:
            session.stop()
    finally:
        # The server and the JVM it forked share the new process group started above.
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@contextmanager
def _system_path(spark: SparkSession, path: Path) -> Iterator[None]:
    """Sets the session's system path and puts the previous setting back: the classic session is
    shared with the modules that run after this one."""
    previous = spark.conf.get(SYSTEM_PATH_KEY, None)
    spark.conf.set(SYSTEM_PATH_KEY, str(path))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(SYSTEM_PATH_KEY)
        else:
            spark.conf.set(SYSTEM_PATH_KEY, previous)


@pytest.fixture(params=["classic", "connect"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SparkSession]:
    spark: SparkSession = request.getfixturevalue("spark" if request.param == "classic" else "connect_spark")
    assert is_connect_session(spark) == (request.param == "connect")
    with _system_path(spark, tmp_path / "indexes"):
        yield spark


def _write_orders(spark: SparkSession, path: Path, start: int, rows: int, files: int) -> None:
    spark.range(start, start + rows, 1, files).selectExpr(
        "id AS order_id",
        "id % 50 AS customer_id",
        "CAST(id AS DOUBLE) * 1.5 AS amount",
        "IF(id % 2 = 0, 'open', 'done') AS status",
    ).write.mode("append").parquet(str(path))


def _rows(df: DataFrame) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in df.collect())


def readme_examples(spark: SparkSession, lake: Path) -> None:
    """README.md's Python sections, in order, on data written here (paths under ``lake``)."""
    # ## Python
    enable_hyperspace(spark)
    hs = Hyperspace(spark)
    print(hs.version, hs.system_path, is_hyperspace_enabled(spark))
    assert hs.version and hs.spark_version.split(".")[:2] == spark.version.split(".")[:2]
    assert is_hyperspace_enabled(spark) and hs.is_enabled()
    assert hs.system_path.endswith("indexes")

    # ### Index lifecycle
    _write_orders(spark, lake / "orders", 0, 2000, 4)
    orders = spark.read.parquet(str(lake / "orders"))
    hs.create_index(
        orders, IndexConfig("orders_by_customer", ["customer_id"], ["amount", "status"], num_buckets=8, lineage=True)
    )
    listed = hs.indexes()
    assert isinstance(listed, DataFrame)
    listed.show()
    row = listed.collect()[0]
    assert (row["name"], row["numBuckets"], row["state"]) == ("orders_by_customer", 8, "ACTIVE")
    assert list(row["includedColumns"]) == ["amount", "status"]
    hs.index("orders_by_customer").show()
    assert hs.index("orders_by_customer").first()["lineage"] is True
    readable = hs.list_indexes().first()
    assert (readable["name"], readable["columns"]) == ("orders_by_customer", "customer_id include amount, status")
    hs.delete_index("orders_by_customer")
    assert hs.index("orders_by_customer").first()["state"] == "DELETED"
    hs.restore_index("orders_by_customer")
    assert hs.index("orders_by_customer").first()["state"] == "ACTIVE"
    vacuumed = hs.vacuum_index("orders_by_customer")
    assert isinstance(vacuumed, MaintenanceResult) and vacuumed.operation == "vacuum"
    entries = history(str(Path(hs.system_path) / "orders_by_customer"))
    assert list(entries["state"])[-1] == "ACTIVE"

    # ## Queries use indexes automatically
    query = orders.where("customer_id = 42").select("amount")
    expected = [(float(i) * 1.5,) for i in range(42, 2000, 50)]
    assert _rows(query) == expected
    text = hs.explain(query, display=False)
    assert isinstance(text, str) and "orders_by_customer" in text
    captured: list[str] = []
    hs.explain(query, True, captured.append)
    assert captured and "orders_by_customer" in captured[0]
    assert "orders_by_customer" in hs.why_not(orders.where("amount > 3").select("amount"), display=False)
    assert "by_status" in hs.what_if(
        orders.where("status = 'open'").select("amount"),
        IndexConfig("by_status", ["status"], ["amount"]),
        display=False,
    )

    # ### Keeping indexes up to date
    _write_orders(spark, lake / "orders", 5000, 300, 3)
    pending = hs.indexes().select("name", "appendedFiles", "deletedFiles").first()
    assert (pending["appendedFiles"], pending["deletedFiles"]) == (3, 0)
    quick = hs.refresh_index("orders_by_customer", "quick")
    assert quick.changed and quick.mode == "quick" and quick.appended_files == 3
    incremental = hs.refresh_index("orders_by_customer", "incremental")
    assert incremental.changed and incremental.mode == "incremental"
    full = hs.refresh_index("orders_by_customer", "full")
    assert full.mode == "full"
    again = hs.refresh_index("orders_by_customer", "incremental")
    print(again)
    assert not again.changed and "up to date" in str(again)
    assert hs.optimize_index("orders_by_customer", "quick").operation == "optimize"
    assert hs.optimize_index("orders_by_customer", "full").mode == "full"
    hs.vacuum_index("orders_by_customer")
    fresh = spark.read.parquet(str(lake / "orders"))
    assert _rows(fresh.where("customer_id = 42").select("amount")) == sorted(
        expected + [(float(i) * 1.5,) for i in range(5000, 5300) if i % 50 == 42]
    )

    # ### Data skipping indexes
    spark.range(0, 4000, 1, 1).selectExpr(
        "id AS ts",
        "CONCAT('req-', id) AS request_id",
        "IF(id < 2000, 'NL', 'DE') AS country",
        "CONCAT('https://site/', id) AS url",
        "CONCAT('user', id % 7, '@acme.io') AS email",
        "IF(id % 1000 = 0, NULL, id) AS error_code",
    ).repartitionByRange(8, "ts").write.parquet(str(lake / "events"))
    events = spark.read.parquet(str(lake / "events"))
    hs.create_index(
        events,
        DataSkippingIndexConfig(
            "events_skip",
            MinMaxSketch("ts"),
            BloomFilterSketch("request_id"),
            ValueListSketch("lower(country)"),
            PrefixSketch("url", 12),
            SuffixSketch("email", 8),
            NullCountSketch("error_code"),
        ),
    )
    assert events.where("request_id = 'req-17'").count() == 1
    stats = hs.last_query_skipping_stats()
    print(stats)
    assert len(stats) == 1 and stats[0].files_skipped > 0 and stats[0].indexes[0].index == "events_skip"
    planned = hs.skipping_stats(events.where("ts < 100"))
    assert planned[0].files_read == 1, planned

    disable_hyperspace(spark)
    assert not is_hyperspace_enabled(spark)
    for name in ("orders_by_customer", "events_skip"):
        hs.delete_index(name)
    assert {r["state"] for r in hs.indexes().collect()} == {"DELETED"}


def test_readme_examples(session: SparkSession, tmp_path: Path) -> None:
    readme_examples(session, tmp_path / "lake")


def test_sql_only_script_over_connect(connect_spark: SparkSession, tmp_path: Path) -> None:
    from test_sql import _write, sql_only_script

    connect_spark.conf.set(SYSTEM_PATH_KEY, str(tmp_path / "indexes"))
    sql_only_script(connect_spark, _write(connect_spark, tmp_path / "data"))


def test_errors_over_connect_are_hyperspace_exceptions(
    connect_spark: SparkSession, spark: SparkSession, tmp_path: Path
) -> None:
    connect_spark.conf.set(SYSTEM_PATH_KEY, str(tmp_path / "remote"))
    with _system_path(spark, tmp_path / "local"):
        remote_hs, local_hs = Hyperspace(connect_spark), Hyperspace(spark)
        with pytest.raises(HyperspaceIndexNotFoundException) as remote:
            remote_hs.refresh_index("nope")
        with pytest.raises(HyperspaceIndexNotFoundException) as local:
            local_hs.refresh_index("nope")
        local_path = local_hs.system_path
    # The same message but for the system path, which is each session's own.
    assert str(remote.value).replace(remote_hs.system_path, "<path>") == str(local.value).replace(local_path, "<path>")
    assert remote.value.java_class == "io.hyperspace.HyperspaceIndexNotFoundException"


def test_a_connect_dataframe_reaches_the_server_as_a_view_that_is_dropped(
    connect_spark: SparkSession, tmp_path: Path
) -> None:
    connect_spark.conf.set(SYSTEM_PATH_KEY, str(tmp_path / "indexes"))
    _write_orders(connect_spark, tmp_path / "o", 0, 100, 2)
    before = {t.name for t in connect_spark.catalog.listTables()}
    Hyperspace(connect_spark).create_index(
        connect_spark.read.parquet(str(tmp_path / "o")), IndexConfig("v", ["order_id"])
    )
    assert {t.name for t in connect_spark.catalog.listTables()} == before
    assert isinstance(Hyperspace(connect_spark)._backend, SqlBackend)


def test_an_indexed_table_from_sql_over_connect(connect_spark: SparkSession) -> None:
    """CACHE / INSERT INTO / UNCACHE INDEXED TABLE from a Connect client: the table is queried by
    name through spark.table and spark.sql, and lookups and joins use the index."""
    spark = connect_spark
    source = "SELECT id % 300 AS k, concat('v', id) AS v FROM range(2000)"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW connect_plain AS {source}")
    created = spark.sql(f"CACHE INDEXED TABLE connect_idx ON (k) PARTITIONS 4 AS {source}").collect()
    assert [tuple(r) for r in created] == [("connect_idx", "k", 0, 4, 2000, 4)]
    try:

        def same(query: str) -> None:
            got = sorted(tuple(r) for r in spark.sql(query.format("connect_idx")).collect())
            assert got == sorted(tuple(r) for r in spark.sql(query.format("connect_plain")).collect())

        same("SELECT * FROM {} WHERE k = 42")
        table = spark.table("connect_idx").filter("k IN (1, 2)")
        assert sorted(tuple(r) for r in table.collect()) == sorted(
            tuple(r) for r in spark.table("connect_plain").filter("k IN (1, 2)").collect()
        )
        plan = spark.sql("EXPLAIN SELECT * FROM connect_idx WHERE k = 42").collect()[0][0]
        assert "IndexedLookup" in plan
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW connect_probe AS SELECT id * 7 AS pk FROM range(50)")
        same("SELECT t.v, p.pk FROM connect_probe p JOIN {} t ON t.k = p.pk")
        plan = spark.sql("EXPLAIN SELECT t.v FROM connect_probe p JOIN connect_idx t ON t.k = p.pk").collect()[0][0]
        assert "IndexedJoin" in plan
        appended = spark.sql("INSERT INTO INDEXED TABLE connect_idx SELECT 42 AS k, 'new' AS v").collect()
        assert [tuple(r) for r in appended] == [("connect_idx", "k", 1, 4, 2001, 4)]
        assert ("42", "new") in {(str(r[0]), r[1]) for r in spark.table("connect_idx").filter("k = 42").collect()}
        assert [r[0] for r in spark.sql("SHOW INDEXED TABLES").collect()] == ["connect_idx"]
    finally:
        spark.sql("UNCACHE INDEXED TABLE IF EXISTS connect_idx")
    assert spark.sql("SHOW INDEXED TABLES").collect() == []
