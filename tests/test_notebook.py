"""What a notebook user meets: attaching to a running session, progress of long operations and
the Spark job names behind it, typo-proof settings, errors that speak Python."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conftest import run_python
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    IndexConfig,
    Progress,
)
from hyperspace._jvm import job_ids_with_tag, python_names


@pytest.fixture(scope="module")
def system_path(spark: SparkSession, work_dir: Path) -> Iterator[Path]:
    path = work_dir / "notebook-indexes"
    with HyperspaceConfig(spark).override(system_path=str(path), num_buckets=4, lineage_enabled=True):
        yield path


@pytest.fixture(scope="module")
def source(spark: SparkSession, work_dir: Path) -> str:
    path = str(work_dir / "notebook-source")
    spark.range(0, 2000, 1, 4).selectExpr("id", "id % 13 AS k", "CAST(id AS STRING) AS s").write.parquet(path)
    return path


# ---- progress and job names -------------------------------------------------------------------


def test_progress_reports_the_steps_of_create_refresh_and_optimize(
    spark: SparkSession, system_path: Path, source: str, work_dir: Path
) -> None:
    seen: list[Progress] = []
    hs = Hyperspace(spark, progress=seen.append)
    hs.create_index(spark.read.parquet(source), IndexConfig("nb_progress", ["k"], ["s"]))

    assert seen[-1].finished and all(not p.finished for p in seen[:-1])
    assert {p.operation for p in seen} == {"create"} and {p.index_name for p in seen} == {"nb_progress"}
    # The last report counts every task of the build, all done.
    assert seen[-1].total_tasks > 0 and seen[-1].completed_tasks == seen[-1].total_tasks
    assert all(p.completed_tasks <= p.total_tasks for p in seen)

    spark.range(2000, 2400, 1, 40).selectExpr("id", "id % 13 AS k", "CAST(id AS STRING) AS s").write.mode(
        "append"
    ).parquet(source)
    seen.clear()
    hs.refresh_index("nb_progress", "incremental")
    assert seen[-1].finished and seen[-1].operation == "refresh"
    assert seen[-1].completed_tasks == seen[-1].total_tasks > 0
    # A step is reported when a poll finds a stage running (a short refresh may finish between polls).
    assert {p.step for p in seen} <= {None, "indexing appended source files", "dropping rows of deleted source files"}

    seen.clear()
    hs.optimize_index("nb_progress", "full")
    assert seen[-1].finished and seen[-1].operation == "optimize" and seen[-1].total_tasks > 0


def test_index_jobs_are_named_after_the_operation_and_step(spark: SparkSession, system_path: Path, source: str) -> None:
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    sc.setJobDescription("the notebook's own description")
    tag = "test-notebook-job-names"
    sc.addJobTag(tag)
    try:
        Hyperspace(spark, progress=None).create_index(spark.read.parquet(source), IndexConfig("nb_names", ["k"]))
    finally:
        sc.removeJobTag(tag)
    # The user's description is back once the operation returns.
    assert sc.getLocalProperty("spark.job.description") == "the notebook's own description"
    sc.setJobDescription(None)  # type: ignore[arg-type]

    names = set()
    for job_id in job_ids_with_tag(spark, tag):
        job = tracker.getJobInfo(job_id)
        assert job is not None
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                names.add(stage.name)
    assert "Hyperspace: create index 'nb_names' — writing index data" in names, names


def test_the_text_bar_draws_one_line(
    spark: SparkSession,
    system_path: Path,
    source: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without tqdm, "bar" draws its own line on stderr.
    import builtins

    real_import = builtins.__import__

    def no_tqdm(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    Hyperspace(spark, progress="bar").create_index(spark.read.parquet(source), IndexConfig("nb_bar", ["k"]))
    err = capsys.readouterr().err
    assert "create index 'nb_bar' [" in err and "tasks" in err
    assert err.endswith("\n") and "#" * 24 in err.splitlines()[-1]


def test_the_tqdm_bar_is_used_when_installed(
    spark: SparkSession, system_path: Path, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tqdm")
    Hyperspace(spark, progress="bar").create_index(spark.read.parquet(source), IndexConfig("nb_tqdm", ["k"]))
    err = capsys.readouterr().err
    # tqdm's own layout: "<label>: 100%|...| n/n [elapsed...]".
    assert "create index 'nb_tqdm': 100%" in err, err


def test_a_bad_progress_setting_fails_at_construction(spark: SparkSession) -> None:
    with pytest.raises(HyperspaceException, match="progress must be 'auto', 'bar', None or a callable"):
        Hyperspace(spark, progress="loud")  # type: ignore[arg-type]


def test_auto_progress_is_off_in_ci(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperspace.progress import reporter_for

    monkeypatch.setenv("CI", "true")
    assert reporter_for("auto") is None
    assert reporter_for("bar") is not None


# ---- settings and messages --------------------------------------------------------------------


def test_a_misspelt_setting_raises_and_suggests_the_name(spark: SparkSession) -> None:
    conf = HyperspaceConfig(spark)
    with pytest.raises(AttributeError, match="no setting 'num_bucket'. Did you mean num_buckets"):
        conf.num_bucket = 8  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no setting 'hybridscan_enabled'. Did you mean hybrid_scan_enabled"):
        conf.hybridscan_enabled  # type: ignore[attr-defined]  # noqa: B018
    conf.num_buckets = 8  # a real setting still works
    assert conf.num_buckets == 8
    conf.unset("num_buckets")


def test_python_users_are_told_python_calls() -> None:
    assert (
        python_names("Run a full refresh (refreshIndex('x', 'full')).")
        == "Run a full refresh (refresh_index('x', 'full'))."
    )
    # Names not followed by a call's parenthesis are left alone (a column, a setting key).
    assert python_names("column refreshIndex, key numBuckets") == "column refreshIndex, key numBuckets"


def test_a_jvm_error_names_the_python_call(spark: SparkSession, system_path: Path, source: str) -> None:
    hs = Hyperspace(spark, progress=None)
    hs.create_index(spark.read.parquet(source), IndexConfig("nb_deleted", ["k"]))
    hs.delete_index("nb_deleted")
    with pytest.raises(HyperspaceException, match=r"restore_index\('nb_deleted'\)"):
        hs.refresh_index("nb_deleted")


# ---- attach -------------------------------------------------------------------------------------

_ATTACH_SCRIPT = """
import tempfile
from pyspark.sql import SparkSession
import hyperspace
from hyperspace import Hyperspace, IndexConfig

builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
           .config("spark.sql.shuffle.partitions", "4")
           .config("spark.sql.autoBroadcastJoinThreshold", "-1"))
spark = builder.getOrCreate()
d = tempfile.mkdtemp()
spark.conf.set("spark.hyperspace.system.path", d + "/indexes")
spark.range(0, 3000, 1, 3).selectExpr("id", "id % 17 AS k", "CAST(id AS STRING) AS s").write.parquet(d + "/a")
spark.range(0, 500, 1, 2).selectExpr("id % 17 AS k", "id AS v").write.parquet(d + "/b")
print("INSTALLED BEFORE:", hyperspace.is_hyperspace_enabled(spark))

assert hyperspace.attach(spark) is spark
# A reporter: the operations run in a thread of their own, as in a notebook with the bar on.
reports = []
hs = Hyperspace(spark, progress=reports.append)
hs.create_index(spark.read.parquet(d + "/a"), IndexConfig("ia", ["k"], ["s"], num_buckets=4))
hs.create_index(spark.read.parquet(d + "/b"), IndexConfig("ib", ["k"], ["v"], num_buckets=4))

def queries():
    a, b = spark.read.parquet(d + "/a"), spark.read.parquet(d + "/b")
    return [
        a.filter("k = 3").select("k", "s"),
        a.filter("k > 14").select("s"),
        a.join(b, "k").select("k", "s", "v"),
    ]

with_index = [(q._jdf.queryExecution().optimizedPlan().toString(), sorted(q.collect())) for q in queries()]
hyperspace.disable_hyperspace(spark)
without = [sorted(q.collect()) for q in queries()]
print("SAME RESULTS:", [w[1] for w in with_index] == without)
print("USES INDEXES:", [("Name: ia" in p or "Name: ib" in p) for p, _ in with_index])
hyperspace.attach(spark)  # again: nothing to install, rewriting back on
explained = hs.explain(queries()[0], display=False)
print("EXPLAIN DIFFERS:", "Name: ia" in explained.split("Plan without indexes")[0]
      and "Name: ia" not in explained.split("Plan without indexes")[1].split("Indexes used")[0])
print("REPORTED:", bool(reports) and reports[-1].finished)
print("NEW SESSION ENABLED:", hyperspace.is_hyperspace_enabled(spark.newSession()))
spark.stop()
"""


@pytest.mark.slow
def test_attach_makes_a_running_session_use_indexes() -> None:
    # The notebook case: pip-installed package, a session started without the jar. (A session
    # with the jar but without the extension: tests/test_session.py.)
    result = run_python(textwrap.dedent(_ATTACH_SCRIPT), timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    out = result.stdout
    assert "INSTALLED BEFORE: False" in out
    assert "SAME RESULTS: True" in out
    assert "USES INDEXES: [True, True, True]" in out
    assert "EXPLAIN DIFFERS: True" in out
    # Only the attached session: sessions made later need the cluster setting.
    assert "NEW SESSION ENABLED: False" in out
    assert "REPORTED: True" in out


def test_list_indexes_reads_in_words(spark: SparkSession, system_path: Path, source: str) -> None:
    hs = Hyperspace(spark, progress=None)
    hs.create_index(spark.read.parquet(source), IndexConfig("nb_listed", ["k"], ["s"]))
    rows = {r["name"]: r for r in hs.list_indexes().collect()}
    listed = rows["nb_listed"]
    assert hs.list_indexes().columns == ["name", "kind", "source", "columns", "state", "size", "freshness"]
    assert listed["kind"] == "CoveringIndex" and listed["state"] == "ACTIVE"
    assert listed["columns"] == "k include s"
    assert listed["source"].startswith("parquet ") and "notebook-source" in listed["source"]
    assert listed["size"].endswith("KiB") or listed["size"].endswith(" B")
    assert listed["freshness"] == "up to date"

    spark.range(9000, 9010, 1, 1).selectExpr("id", "id % 13 AS k", "CAST(id AS STRING) AS s").write.mode(
        "append"
    ).parquet(source)
    stale = {r["name"]: r for r in hs.list_indexes().collect()}["nb_listed"]
    assert stale["freshness"] == "1 appended, 0 deleted source files not in the index data"
