"""Issue 12 from Python: no operation writes or deletes outside what an index owns, names are
validated and case-insensitive, damaged logs stay manageable, cancel respects live owners, and
every failure is a HyperspaceException (the pure-Python log reader: a ValueError subclass)."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceConflictException,
    HyperspaceException,
    IndexConfig,
)
from hyperspace import log as hslog
from hyperspace.exceptions import HyperspaceCorruptedLogException


@pytest.fixture(scope="module")
def system_path(work_dir: Path) -> Path:
    return work_dir / "safety-indexes"


@pytest.fixture(scope="module")
def hs(spark: SparkSession, system_path: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    # Vacuum frees a deleted index at once: these tests are about paths and names, not retention.
    with conf.override(system_path=str(system_path), num_buckets=4, vacuum_retention=0):
        yield Hyperspace(spark)


def _write_source(spark: SparkSession, path: Path, start: int = 0, rows: int = 200, files: int = 2) -> str:
    (
        spark.range(start, start + rows, 1, files)
        .selectExpr("id", "CONCAT('n', id % 11) AS name")
        .write.mode("append")
        .parquet(str(path))
    )
    return str(path)


@pytest.fixture(scope="module")
def source(spark: SparkSession, work_dir: Path) -> str:
    return _write_source(spark, work_dir / "safety-source")


def _create(spark: SparkSession, hs: Hyperspace, name: str, src: str) -> None:
    hs.create_index(spark.read.parquet(src), IndexConfig(name, ["id"], ["name"]))


def _rows(hs: Hyperspace, name: str) -> list[Any]:
    return [r for r in hs.indexes().collect() if r["name"].lower() == name.lower()]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): ("<dir>" if p.is_dir() else hashlib.md5(p.read_bytes()).hexdigest())
        for p in root.rglob("*")
    }


def _append_entry(index_dir: Path, **changes: Any) -> int:
    """Appends a copy of the newest entry with ``changes`` (nested dicts merged); returns its id."""
    log_dir = index_dir / "_hyperspace_log"
    newest = max(int(n.name) for n in log_dir.iterdir() if n.name.isdigit() and n.is_file())
    raw = json.loads((log_dir / str(newest)).read_text())
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key].update(value)
        else:
            raw[key] = value
    raw["id"] = newest + 1
    (log_dir / str(newest + 1)).write_text(json.dumps(raw))
    return newest + 1


def test_item5_other_spellings_do_not_rename(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    _create(spark, hs, "index2", source)
    hs.delete_index("INDEX2")
    assert [r["name"] for r in _rows(hs, "index2")] == ["index2"]
    hs.restore_index("Index2")
    assert [r["name"] for r in _rows(hs, "index2")] == ["index2"]


def test_item7_create_refuses_a_foreign_directory(
    spark: SparkSession, hs: Hyperspace, source: str, system_path: Path
) -> None:
    foreign = system_path / "raw_events"
    foreign.mkdir(parents=True)
    (foreign / "events.json").write_text('{"a": 1}')
    before = _snapshot(foreign)
    with pytest.raises(HyperspaceException, match="not a Hyperspace index") as info:
        _create(spark, hs, "raw_events", source)
    assert str(foreign) in str(info.value)
    assert _snapshot(foreign) == before


def test_item8_a_copied_index_never_touches_the_original(
    spark: SparkSession, hs: Hyperspace, work_dir: Path, system_path: Path
) -> None:
    src = _write_source(spark, work_dir / "copied-source")
    _create(spark, hs, "copied", src)
    other = work_dir / "other-system"
    shutil.copytree(system_path / "copied", other / "copied")
    before = _snapshot(system_path / "copied")
    _write_source(spark, Path(src), start=1000, rows=20, files=1)
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(other)):
        hs.refresh_index("copied", "full")
        hs.optimize_index("copied", "full")
        hs.vacuum_index("copied")
        hs.delete_index("copied")
        hs.vacuum_index("copied")
    assert _snapshot(system_path / "copied") == before


@pytest.mark.parametrize("bad", ["../elsewhere/x", "a/b", "", None, 42, "é" * 128])
def test_item9_every_operation_validates_the_name(hs: Hyperspace, bad: Any) -> None:
    operations = [
        hs.delete_index,
        hs.restore_index,
        hs.vacuum_index,
        lambda n: hs.refresh_index(n, "full"),
        lambda n: hs.optimize_index(n, "full"),
        hs.cancel,
        hs.index,
    ]
    for run in operations:
        with pytest.raises(HyperspaceException, match="Invalid index name"):
            run(bad)


def test_item10_refresh_refuses_a_jdbc_log_entry(
    spark: SparkSession, hs: Hyperspace, source: str, system_path: Path
) -> None:
    _create(spark, hs, "hijacked_py", source)
    entry_id = _append_entry(
        system_path / "hijacked_py",
        source={"format": "jdbc", "options": {"url": "jdbc:postgresql://203.0.113.1:1/db", "dbtable": "t"}},
    )
    (system_path / "hijacked_py" / "_hyperspace_log" / "latestStable").write_text(str(entry_id))
    with pytest.raises(HyperspaceException, match="format 'jdbc', which is not a file format"):
        hs.refresh_index("hijacked_py", "full")


def test_item11_threads_creating_two_spellings_one_wins(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    for round_ in range(3):
        outcomes: dict[str, BaseException | None] = {}
        barrier = threading.Barrier(2)

        def create(name: str) -> None:
            barrier.wait(timeout=60)
            try:
                _create(spark, hs, name, source)
                outcomes[name] = None
            except BaseException as e:  # noqa: BLE001 - recorded and asserted below
                outcomes[name] = e

        threads = [threading.Thread(target=create, args=(n,)) for n in (f"PyRace{round_}", f"pyrace{round_}")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert sum(1 for e in outcomes.values() if e is None) == 1, outcomes
        assert all(isinstance(e, HyperspaceException) for e in outcomes.values() if e is not None), outcomes
        assert len(_rows(hs, f"pyrace{round_}")) == 1


def test_item13_stray_files_and_a_corrupt_newest_entry(
    spark: SparkSession, hs: Hyperspace, source: str, system_path: Path
) -> None:
    _create(spark, hs, "stray_py", source)
    log_dir = system_path / "stray_py" / "_hyperspace_log"
    (log_dir / "0099").write_bytes((log_dir / "1").read_bytes())
    (log_dir / "\u0669\u0669").write_bytes((log_dir / "1").read_bytes())
    assert [r["state"] for r in _rows(hs, "stray_py")] == ["ACTIVE"]
    with pytest.raises(HyperspaceException, match="already exists"):
        _create(spark, hs, "stray_py", source)

    (log_dir / "2").write_text('{"specVersion": 1, "id": 2')
    row = _rows(hs, "stray_py")[0]
    assert row["state"] == "CORRUPT" and "_hyperspace_log/2" in row["stateReason"]
    with pytest.raises(HyperspaceException, match="CORRUPT"):
        hs.optimize_index("stray_py", "full")
    hs.delete_index("stray_py")
    hs.vacuum_index("stray_py")
    assert _rows(hs, "stray_py") == []


def test_a_corrupt_index_with_no_readable_stable_entry_is_deleted_and_vacuumed(
    spark: SparkSession, hs: Hyperspace, source: str, system_path: Path
) -> None:
    # Issue 54, item 5: the create's ACTIVE entry, the only stable one, cut short.
    _create(spark, hs, "cut_py", source)
    (system_path / "cut_py" / "_hyperspace_log" / "1").write_text('{"specVersion": 1')
    assert _rows(hs, "cut_py")[0]["state"] == "CORRUPT"
    hs.delete_index("cut_py")
    assert _rows(hs, "cut_py")[0]["state"] == "DELETED"
    with pytest.raises(HyperspaceException, match="CORRUPT"):
        hs.restore_index("cut_py")
    hs.vacuum_index("cut_py")
    assert _rows(hs, "cut_py") == []
    _create(spark, hs, "cut_py", source)
    assert _rows(hs, "cut_py")[0]["state"] == "ACTIVE"


def test_item14_cancel_refuses_a_live_owner_unless_forced(
    spark: SparkSession, hs: Hyperspace, source: str, system_path: Path
) -> None:
    _create(spark, hs, "busy_py", source)
    # The newest entry was written by this session's JVM, which is alive.
    _append_entry(system_path / "busy_py", state="REFRESHING", operation="REFRESH")
    with pytest.raises(HyperspaceConflictException, match="still running.*force=True"):
        hs.cancel("busy_py")
    assert hs.index("busy_py").first()["state"] == "REFRESHING"
    hs.cancel("busy_py", force=True)
    assert hs.index("busy_py").first()["state"] == "ACTIVE"
    with pytest.raises(HyperspaceException, match="force must be True or False"):
        hs.cancel("busy_py", force="yes")  # type: ignore[arg-type]


def test_item15_bad_names_and_paths_are_hyperspace_exceptions(
    spark: SparkSession, hs: Hyperspace, source: str, work_dir: Path
) -> None:
    with pytest.raises(HyperspaceException):
        IndexConfig(None, ["id"])  # type: ignore[arg-type]
    with pytest.raises(HyperspaceException, match="Invalid index name"):
        hs.create_index(spark.read.parquet(source), IndexConfig("", ["id"]))
    with pytest.raises(HyperspaceException, match="256 bytes"):
        hs.create_index(spark.read.parquet(source), IndexConfig("é" * 128, ["id"]))
    a_file = work_dir / "system-path-file"
    a_file.write_text("x")
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(a_file)):
        with pytest.raises(HyperspaceException, match=str(a_file)):
            _create(spark, hs, "on_a_file", source)
    with conf.override(system_path="nosuchscheme://host/indexes"):
        with pytest.raises(HyperspaceException, match="nosuchscheme"):
            _create(spark, hs, "bad_scheme", source)


def test_item15_a_failed_build_leaves_nothing_behind(
    spark: SparkSession, hs: Hyperspace, work_dir: Path, system_path: Path
) -> None:
    src = Path(_write_source(spark, work_dir / "broken-source"))
    (src / "part-99999-broken.parquet").write_text("not parquet")
    with pytest.raises(HyperspaceException, match="broken_py"):
        _create(spark, hs, "broken_py", str(src))
    states = [e.state for e in hslog.read_log(str(system_path / "broken_py"))]
    assert states == ["CREATING", "DOESNOTEXIST"]
    assert not any(p.name.startswith("v__=") for p in (system_path / "broken_py").iterdir())
    assert _rows(hs, "broken_py") == []


def _entry_text(**overrides: Any) -> str:
    entry = {
        "specVersion": 1,
        "id": 0,
        "name": "x",
        "state": "ACTIVE",
        "operation": "CREATE",
        "timestamp": 1,
        "enabled": True,
        "owner": {"host": "h", "pid": 1, "startedAt": 0},
        "index": {
            "kind": "CoveringIndex",
            "kindVersion": 1,
            "indexedColumns": ["a"],
            "includedColumns": [],
            "numBuckets": 4,
            "lineage": False,
            "schema": "{}",
        },
        "content": {"root": "file:/x", "dataVersion": 0, "files": []},
        "source": {
            "format": "parquet",
            "rootPaths": [],
            "options": {},
            "schema": "{}",
            "partitionSchema": "{}",
            "table": None,
            "files": [],
            "appendedFiles": [],
            "deletedFiles": [],
        },
        "signature": {"provider": "FileSetMD5", "value": "v"},
    }
    entry.update(overrides)
    return json.dumps(entry)


@pytest.mark.parametrize(
    "text",
    [
        _entry_text(timestamp=2**63),
        _entry_text(id=-1),
        _entry_text(content={"root": "file:/x", "dataVersion": 2**31, "files": []}),
        _entry_text(
            index={
                "kind": "CoveringIndex",
                "kindVersion": 1,
                "indexedColumns": ["a"],
                "includedColumns": [],
                "numBuckets": 10**30,
                "lineage": False,
                "schema": "{}",
            }
        ),
        _entry_text().replace('"timestamp": 1', '"timestamp": ' + "9" * 5000),
        _entry_text().replace('"timestamp": 1', '"timestamp": NaN'),
        _entry_text().replace('"timestamp": 1', '"timestamp": 1e999'),
        _entry_text(timestamp="1"),
        "[" * 200000 + "]" * 200000,
        '{"specVersion": 1, "extra": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}",
    ],
    ids=[
        "long-overflow",
        "negative-id",
        "int-overflow",
        "huge-buckets",
        "5000-digits",
        "nan",
        "inf",
        "string-for-int",
        "deep-array",
        "deep-object",
    ],
)
def test_item15_log_reader_rejects_hostile_json(text: str) -> None:
    with pytest.raises(ValueError, match="Corrupted index log entry where") as info:
        hslog.parse_entry(text, "where")
    assert isinstance(info.value, HyperspaceCorruptedLogException)
    assert isinstance(info.value, HyperspaceException)


def test_item15_history_of_an_out_of_range_log_is_a_value_error(tmp_path: Path) -> None:
    log_dir = tmp_path / "idx" / "_hyperspace_log"
    log_dir.mkdir(parents=True)
    (log_dir / "0").write_text(_entry_text(timestamp=2**64))
    with pytest.raises(ValueError, match="must be an integer from"):
        hslog.history(str(tmp_path / "idx"))
