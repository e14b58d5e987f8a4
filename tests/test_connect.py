"""The Python API over Spark Connect: the README's and the user guide's examples against a classic
session and a real Spark Connect server, the README's Scala block in spark-shell, and a SQL-only
script over Connect.

The server is pyspark's own (``SparkConnectServer`` from the installed pyspark's jars), started
with the Hyperspace jar and extension on 127.0.0.1 and a free port, and stopped at the end.
"""

from __future__ import annotations

import os
import re
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
from conftest import short_jvm_env
from hyperspace import (
    BloomFilterSketch,
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceException,
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

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
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
    env = short_jvm_env(SPARK_HOME=str(spark_home), PYSPARK_PYTHON=sys.executable)
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


# The README's and the user guide's examples over py4j are run in CI by the wheel's run on the oldest line (Makefile:
# WHEEL_PY_TESTS); here, on the default line, only `make test-full` runs them beside Connect's.
@pytest.fixture(params=[pytest.param("classic", marks=pytest.mark.full), "connect"])
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


def code_blocks(path: Path, language: str) -> list[str]:
    """The fenced code blocks of ``path`` in ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.M | re.S)


# The README's own session line: the test runs the blocks in its session (classic or Connect), so
# this one line is replaced; tests/test_session.py covers configure_spark_with_hyperspace itself.
README_SESSION = re.compile(
    r"^spark = configure_spark_with_hyperspace\(SparkSession\.builder[^\n]*\)\.getOrCreate\(\)$", re.M
)
README_LAKE = "/tmp/lake"


def _sql_statements(block: str) -> list[str]:
    lines = [line.split("--")[0].rstrip() for line in block.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def readme_examples(spark: SparkSession, lake: Path) -> None:
    """Runs README.md's code blocks as they are written: each ``python`` block (in one namespace
    holding ``spark``), then each ``sql`` block statement by statement, with ``/tmp/lake`` read as
    ``lake`` and each block's indexes under a system path of its own."""
    python, sql = code_blocks(README, "python"), code_blocks(README, "sql")
    assert python and sql, "README.md has no python or sql block"
    namespace: dict[str, object] = {"spark": spark, "__name__": "readme"}
    for i, block in enumerate(python, 1):
        source, replaced = README_SESSION.subn("pass  # the test's session", block.replace(README_LAKE, str(lake)))
        assert replaced <= 1, f"python block {i}: more than one session line"
        with _system_path(spark, lake / f"indexes-python-{i}"):
            exec(compile(source, f"README.md python block {i}", "exec"), namespace)  # noqa: S102
            # The quick start's claims: the index is used and the rows are Spark's own.
            hs, query = namespace.get("hs"), namespace.get("query")
            if isinstance(hs, Hyperspace) and isinstance(query, DataFrame):
                assert hs.indexes().count() >= 1
                used = hs.explain(query, display=False)
                assert "Indexes used" in used and any(r["name"] in used for r in hs.indexes().collect()), used
                disable_hyperspace(spark)
                without = _rows(query)
                enable_hyperspace(spark)
                assert _rows(query) == without and without
    for i, block in enumerate(sql, 1):
        with _system_path(spark, lake / f"indexes-sql-{i}"):
            outputs = []
            for statement in _sql_statements(block.replace(README_LAKE, str(lake))):
                outputs.append((statement, spark.sql(statement).collect()))
            for statement, rows in outputs:
                if statement.upper().startswith("EXPLAIN HYPERSPACE"):
                    created = re.findall(r"CREATE HYPERSPACE INDEX (\w+)", block)
                    text = "\n".join(str(v) for r in rows for v in r)
                    assert any(name in text for name in created), text
    disable_hyperspace(spark)


def guide_examples(spark: SparkSession, lake: Path) -> None:
    """docs/guide.md's Python sections, in order, on data written here (paths under ``lake``)."""
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
    """The README's blocks as written, then the user guide's sections (transcribed onto data
    written here)."""
    readme_examples(session, tmp_path / "readme")
    guide_examples(session, tmp_path / "lake")


@pytest.mark.full
def test_readme_scala_block_runs_in_spark_shell(spark: SparkSession, tmp_path: Path) -> None:
    """The README's Scala block as written, in pyspark's own spark-shell with the jar and the
    extension (as the README says to start it), on the quick start's data written here.

    `make test-full` only: the REPL compiling the block costs about a CPU-minute (75 s wall in a
    clean-clone CI run), and the Scala API it calls is what the Scala suites test in CI; the
    README's Python and SQL blocks run in CI (test_readme_examples)."""
    # The other Scala block is the sbt build's (tests/test_maven_artifacts.py runs it).
    (block,) = [b for b in code_blocks(README, "scala") if "libraryDependencies" not in b]
    lake = tmp_path / "lake"
    spark.range(0, 20000, 1, 4).selectExpr(
        "id AS order_id", "id % 5000 AS customer_id", "id * 0.5 AS amount"
    ).write.parquet(str(lake / "orders"))
    script = tmp_path / "readme.scala"
    script.write_text(
        block.replace(README_LAKE, str(lake))
        + '\nval used = orders.where("customer_id = 42").select("amount").queryExecution.executedPlan.toString'
        + '\nprintln(s"README-SCALA ${used.contains("orders_by_customer")} ${hs.indexes.count()}")'
        + "\nSystem.exit(0)\n",
        encoding="utf-8",
    )
    spark_home = Path(pyspark.__file__).resolve().parent
    command = [
        str(spark_home / "bin" / "spark-shell"),
        "--master", "local[1]",
        "--jars", str(hyperspace.jar_path()),
        "--conf", f"spark.sql.extensions={EXTENSION_CLASS}",
        "--conf", f"{SYSTEM_PATH_KEY}={tmp_path / 'indexes'}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2",
        "-i", str(script),
    ]  # fmt: skip
    result = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(tmp_path),
        env=short_jvm_env(SPARK_HOME=str(spark_home)),
    )
    assert "README-SCALA true 1" in result.stdout, result.stdout[-4000:] + result.stderr[-4000:]


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
        connect_spark.read.parquet(str(tmp_path / "o")), IndexConfig("v", ["order_id"], num_buckets=4)
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
        # The eager lookup as a statement: its rows come back as a command's local result.
        looked = sorted(
            tuple(r) for r in spark.sql("LOOKUP INDEXED TABLE connect_idx KEYS (42, 43, NULL, 9999)").collect()
        )
        assert looked == sorted(
            tuple(r) for r in spark.sql("SELECT * FROM connect_plain WHERE k IN (42, 43)").collect()
        )
        assert len(looked) > 0
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


# ---- The index advisor over Connect (docs/advisor.md) ------------------------------------------

NUM_BUCKETS_KEY = "spark.hyperspace.index.numBuckets"
BROADCAST_KEY = "spark.sql.autoBroadcastJoinThreshold"


@contextmanager
def _advisor_session(spark: SparkSession, system_path: Path) -> Iterator[Hyperspace]:
    """``spark`` with its own system path, 4 buckets and no broadcast joins (so a join's shuffles
    are what an index can remove), all put back afterwards: both sessions outlive the test."""
    settings = {SYSTEM_PATH_KEY: str(system_path), NUM_BUCKETS_KEY: "4", BROADCAST_KEY: "-1"}
    previous = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield Hyperspace(spark)
    finally:
        disable_hyperspace(spark)
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _recommendation(recs: hyperspace.Recommendations) -> list[tuple[object, ...]]:
    """What both transports must agree on: every field but the per-call timing totals."""
    return [
        (
            r.rank,
            r.config.name,
            r.kind,
            r.indexed_columns,
            r.included_columns,
            r.config.to_json(),
            r.source,
            r.source_sql,
            r.estimated_size_bytes,
            r.estimated_build_bytes,
            r.benefit,
            tuple(r.queries),
        )
        for r in recs.indexes
    ]


def _uses(hs: Hyperspace, query: DataFrame, names: list[str]) -> list[str]:
    """The recommended indexes ``query``'s plan reads, by explain; each confirmed by why_not."""
    text = hs.explain(query, display=False)
    used = [n for n in names if n in text]
    for name in used:
        assert hs.why_not(query, name, display=False) == f"{name}: used by this query"
    return used


def test_recommend_dataframes_over_connect_as_over_py4j_then_create_all(
    connect_spark: SparkSession, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_advisor import _wide

    tables = {
        side: _wide(spark, tmp_path / side, rows, files) for side, rows, files in (("l", 2000, 4), ("r", 1500, 3))
    }

    def workload(s: SparkSession) -> tuple[DataFrame, DataFrame]:
        left, right = s.read.parquet(tables["l"]), s.read.parquet(tables["r"])
        return left.where("k = 42").select("a", "b"), left.select("k", "a").join(right.select("k", "c"), "k")

    with _advisor_session(spark, tmp_path / "local") as local_hs:
        local = local_hs.recommend([workload(spark)[0], (workload(spark)[1], 2.0)])
    with _advisor_session(connect_spark, tmp_path / "local") as hs:
        lookup, join = workload(connect_spark)
        recs = hs.recommend([lookup, (join, 2.0)])
        # The same indexes, sources, estimates and evidence, each query named as over py4j.
        assert _recommendation(recs) == _recommendation(local), f"{recs}\n---\n{local}"
        assert {(r.config.indexed_columns, r.config.included_columns) for r in recs.indexes} == {
            (("k",), ("a", "b")),
            (("k",), ("c",)),
        }, str(recs)
        assert {q.query for r in recs.indexes for q in r.queries} == {"query 1", "query 2"}
        recs.show()
        out = capsys.readouterr().out
        assert out.startswith("2 index(es) recommended (budget none, at most any number;"), out
        assert "serves 'query 2' (weight 2)" in out and "TABLE `hyperspace_df_" not in out, out
        # The temporary views that carried the DataFrames are gone.
        assert not [t.name for t in connect_spark.catalog.listTables() if t.name.startswith("hyperspace_df_")]

        expected = {"lookup": _rows(lookup), "join": _rows(join)}
        names = recs.create_all()
        assert names == [r.config.name for r in recs.indexes]
        assert sorted(r["name"] for r in hs.indexes().collect() if r["state"] == "ACTIVE") == sorted(names)
        enable_hyperspace(connect_spark)
        served: set[str] = set()
        for name, query in zip(("lookup", "join"), workload(connect_spark), strict=True):
            assert _rows(query) == expected[name], name
            used = _uses(hs, query, names)
            assert used, f"{name} uses no recommended index:\n{hs.explain(query, display=False)}"
            served.update(used)
        assert served == set(names)
        for name in names:
            hs.delete_index(name)


def test_recommend_sql_over_connect_as_over_py4j_budget_and_count(
    connect_spark: SparkSession, spark: SparkSession, tmp_path: Path
) -> None:
    from test_advisor import _wide

    left, right = _wide(spark, tmp_path / "l", 2000, 4), _wide(spark, tmp_path / "r", 1500, 3)
    # A string literal, a backslash and a backquoted name: the texts travel inside a SQL string.
    sql = [
        "SELECT a, c FROM cx_left WHERE b = '5'",
        "SELECT `payload` FROM cx_right WHERE id = 9 AND b <> 'x\\\\y'",
    ]
    for s in (spark, connect_spark):
        s.read.parquet(left).createOrReplaceTempView("cx_left")
        s.read.parquet(right).createOrReplaceTempView("cx_right")
    workload = [sql[0], (sql[1], 0.5)]
    with _advisor_session(spark, tmp_path / "indexes") as local_hs:
        local = local_hs.recommend(workload)
    with _advisor_session(connect_spark, tmp_path / "indexes") as hs:
        recs = hs.recommend(workload)
        assert _recommendation(recs) == _recommendation(local), f"{recs}\n---\n{local}"
        assert len(recs) == 2 and {q.query for r in recs.indexes for q in r.queries} == set(sql), str(recs)
        assert f"serves {sql[1]!r} (weight 0.5)" in str(recs), str(recs)
        # The candidates left out, and why, come over Connect as over py4j.
        assert recs.rejected, str(local)
        assert [(r.name, r.kind, r.reason) for r in recs.rejected] == [
            (r.name, r.kind, r.reason) for r in local.rejected
        ]

        assert _recommendation(hs.recommend(workload, max_indexes=1)) == _recommendation(recs)[:1]
        smallest = min(r.estimated_size_bytes for r in recs.indexes)
        within = hs.recommend(workload, budget_bytes=smallest)
        assert len(within) == 1 and within.total_size_bytes <= smallest and within.budget_bytes == smallest
        assert str(within).startswith(f"1 index(es) recommended (budget {smallest} bytes, at most any number;")
        nothing = hs.recommend(workload, budget_bytes=0, max_indexes=3)
        assert len(nothing) == 0 and nothing.create_all() == []
        assert str(nothing).startswith("0 index(es) recommended (budget 0 bytes, at most 3;")
        assert nothing.rejected and {r.reason for r in nothing.rejected} == {"over_budget"}, str(nothing)

        expected = [_rows(connect_spark.sql(q)) for q in sql]
        names = recs.create_all()
        enable_hyperspace(connect_spark)
        served: set[str] = set()
        for q, rows in zip(sql, expected, strict=True):
            query = connect_spark.sql(q)
            assert _rows(query) == rows, q
            used = _uses(hs, query, names)
            assert used, f"{q} uses no recommended index:\n{hs.explain(query, display=False)}"
            served.update(used)
        assert served == set(names)
        # Building them again fails on the first, by name, like CREATE of an existing index.
        with pytest.raises(HyperspaceException, match=names[0]):
            recs.create_all()
        for name in names:
            hs.delete_index(name)


def test_recommend_bad_input_over_connect(connect_spark: SparkSession, spark: SparkSession, tmp_path: Path) -> None:
    with _advisor_session(connect_spark, tmp_path / "indexes") as hs:
        with pytest.raises(HyperspaceException, match="the workload is empty"):
            hs.recommend([])
        with pytest.raises(HyperspaceException, match="budget_bytes must be a whole number"):
            hs.recommend(["SELECT 1"], budget_bytes=-5)
        with pytest.raises(HyperspaceException, match="weight must be a positive number"):
            hs.recommend([("SELECT 1", 0)])
        # Analyzed on the server: its exception, with its message, arrives as the package's.
        with pytest.raises(
            HyperspaceException, match="Workload query 'SELECT a FROM no_such_table' cannot be analyzed"
        ) as unknown:
            hs.recommend(["SELECT a FROM no_such_table"])
        assert unknown.value.java_class == "io.hyperspace.HyperspaceException"
        # A syntax error in a query is the query's, not a sign the server lacks Hyperspace.
        with pytest.raises(HyperspaceException, match="Workload query 'SELEC 1' cannot be parsed") as syntax:
            hs.recommend(["SELEC 1"])
        assert type(syntax.value) is HyperspaceException
        # A command is no workload query: refused on the server, never run there.
        with pytest.raises(HyperspaceException, match="Workload query 'SET a.b = c' is not a query"):
            hs.recommend(["SET a.b = c"])
        assert spark.conf.get("a.b", None) is None
        with pytest.raises(HyperspaceException, match="weight must be a positive number; got inf"):
            hs.recommend([("SELECT 1", float("inf"))])
        # A DataFrame of another session cannot reach this server's session: refused by name.
        spark.range(10).write.parquet(str(tmp_path / "t"))
        classic = spark.read.parquet(str(tmp_path / "t")).where("id = 3")
        with pytest.raises(HyperspaceException, match="Workload query 2 is a DataFrame of another Spark session"):
            hs.recommend(["SELECT 1", classic])
        assert not [t.name for t in connect_spark.catalog.listTables() if t.name.startswith("hyperspace_df_")]


def test_recommend_over_connect_a_source_sql_cannot_name(
    connect_spark: SparkSession, spark: SparkSession, tmp_path: Path
) -> None:
    """Two directories read as one relation: CREATE HYPERSPACE INDEX ... ON cannot name them, so
    create_all over Connect refuses before building anything; create_index with a DataFrame can."""
    from test_advisor import _wide

    dirs = [_wide(spark, tmp_path / d, 1000, 2) for d in ("p1", "p2")]
    with _advisor_session(connect_spark, tmp_path / "indexes") as hs:
        source = connect_spark.read.parquet(*dirs)
        recs = hs.recommend([source.where("k = 42").select("a"), source.where("k = 7").select("b")])
        assert len(recs) == 1 and recs.indexes[0].source_sql is None, str(recs)
        name = recs.configs[0].name
        with pytest.raises(HyperspaceException, match=f"Cannot create recommended index '{name}' over Spark Connect"):
            recs.create_all()
        assert hs.indexes().collect() == []
        query = source.where("k = 42").select("a")
        expected = _rows(query)
        hs.create_index(source, recs.configs[0])
        enable_hyperspace(connect_spark)
        assert _rows(query) == expected
        assert _uses(hs, query, [name]) == [name]
        hs.delete_index(name)


def test_recorded_queries_over_connect_as_over_py4j(
    connect_spark: SparkSession, spark: SparkSession, tmp_path: Path
) -> None:
    from test_advisor import _wide

    path = _wide(spark, tmp_path / "rec", 2000, 4)
    sql = ["SELECT a FROM cx_rec WHERE k = 5", "SELECT k FROM cx_rec WHERE a = 30"]
    record_key = "spark.hyperspace.advisor.recordQueries"
    seen: dict[str, tuple[object, ...]] = {}
    for name, s in (("classic", spark), ("connect", connect_spark)):
        s.read.parquet(path).createOrReplaceTempView("cx_rec")
        with _advisor_session(s, tmp_path / "indexes") as hs:
            s.conf.set(record_key, "true")
            hs.clear_recorded_queries()
            try:
                for _ in range(3):
                    s.sql(sql[0]).collect()
                s.sql(sql[1]).collect()
                s.read.parquet(path).where("a = 60").select("k").collect()
                recorded = hs.recorded_queries()
                assert [q.frequency for q in recorded] == [3, 1, 1], (name, recorded)
                assert [q.query for q in recorded][:2] == sql, (name, recorded)
                recs = hs.recommend()
                assert {r.config.indexed_columns for r in recs.indexes} == {("k",), ("a",)}, (name, str(recs))
                seen[name] = (tuple(recorded), tuple(_recommendation(recs)))
                assert hs.clear_recorded_queries() == 3
                with pytest.raises(HyperspaceException, match="no query has been recorded in this session yet"):
                    hs.recommend()
                s.conf.unset(record_key)
                with pytest.raises(HyperspaceException, match="query recording is off in this session"):
                    hs.recommend()
            finally:
                s.conf.unset(record_key)
                hs.clear_recorded_queries()
    # The same recorded queries, labels and weights, and the same recommendation over both transports.
    assert seen["connect"] == seen["classic"], f"{seen['connect']}\n---\n{seen['classic']}"


def test_recommend_zorder_and_minmax_over_connect_as_over_py4j_then_create_all(
    connect_spark: SparkSession, spark: SparkSession, tmp_path: Path
) -> None:
    from test_advisor import _source_bytes, _write_kinds_table

    table = _write_kinds_table(spark, tmp_path / "kinds")
    sql = [
        "SELECT a FROM cx_kinds WHERE x BETWEEN 0 AND 300 AND y BETWEEN 0 AND 300",
        "SELECT * FROM cx_kinds WHERE ts BETWEEN 12000 AND 12500",
    ]
    for s in (spark, connect_spark):
        s.read.parquet(table).createOrReplaceTempView("cx_kinds")
        s.conf.set("spark.hyperspace.index.zorder.targetFileSize", "16k")
    try:
        with _advisor_session(spark, tmp_path / "indexes") as local_hs:
            # Half the source: no index of SELECT * fits, the sketch table and the narrow Z-order index do.
            budget = _source_bytes(table) // 2
            local = local_hs.recommend(sql, budget_bytes=budget)
        with _advisor_session(connect_spark, tmp_path / "indexes") as hs:
            recs = hs.recommend(sql, budget_bytes=budget)
            assert _recommendation(recs) == _recommendation(local), f"{recs}\n---\n{local}"
            by_query = {q.query: r.kind for r in recs.indexes for q in r.queries}
            assert by_query == {sql[0]: "ZOrderCoveringIndex", sql[1]: "DataSkippingIndex"}, str(recs)

            expected = [_rows(connect_spark.sql(q)) for q in sql]
            names = recs.create_all()
            enable_hyperspace(connect_spark)
            for q, rows in zip(sql, expected, strict=True):
                query = connect_spark.sql(q)
                assert _rows(query) == rows, q
                assert _uses(hs, query, names), f"{q} uses no recommended index:\n{hs.explain(query, display=False)}"
    finally:
        for s in (spark, connect_spark):
            s.conf.unset("spark.hyperspace.index.zorder.targetFileSize")
