"""The pure-Python index log reader (hyperspace.log) on hand-written logs: no Spark, no JVM.

The entries follow the example of docs/log-format.md. This module never requests the ``spark``
fixture, so no JVM is started.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.fs as pafs
import pytest

from hyperspace.exceptions import HyperspaceException
from hyperspace.log import (
    HISTORY_COLUMNS,
    STABLE_STATES,
    TRANSIENT_STATES,
    ColumnStats,
    Content,
    ContentFile,
    IndexDefinition,
    LocationStats,
    LogEntry,
    Owner,
    Signature,
    Source,
    SourceFile,
    history,
    latest_stable,
    parse_entry,
    read_log,
    signature_of,
)

LOG_PY = Path(__file__).resolve().parent.parent / "python" / "hyperspace" / "log.py"

T0 = 1763719200000  # the example's timestamp


# --- helpers -----------------------------------------------------------------------------------


def md5_signature(files: list[dict[str, Any]]) -> str:
    """FileSetMD5 computed straight from the spec's words (ASCII paths: plain sort is enough)."""
    ordered = sorted(files, key=lambda f: f["path"])
    lines = [f"{f['path']}\t{f['size']}\t{f['modificationTime']}" for f in ordered]
    return hashlib.md5("\n".join(lines).encode("utf-8")).hexdigest()


def entry_json(
    entry_id: int,
    state: str = "ACTIVE",
    operation: str = "CREATE",
    *,
    data_version: int = 0,
    content_files: int = 1,
    source_files: int = 1,
    root: str = "file:/lake/indexes/orders_by_customer",
) -> dict[str, Any]:
    """An entry as the spec's example writes it."""
    sources = [
        {
            "path": f"file:/lake/orders/part-{i:05d}.parquet",
            "size": 52311 + i,
            "modificationTime": 1763719000000 + i,
            "id": i,
        }
        for i in range(source_files)
    ]
    return {
        "specVersion": 1,
        "id": entry_id,
        "name": "orders_by_customer",
        "state": state,
        "operation": operation,
        "timestamp": T0 + 1000 * entry_id,
        "enabled": state == "ACTIVE",
        "owner": {"host": "worker-1", "pid": 4711, "startedAt": 1763719190000},
        "index": {
            "kind": "CoveringIndex",
            "kindVersion": 1,
            "indexedColumns": ["customer_id"],
            "includedColumns": ["amount"],
            "numBuckets": 4,
            "lineage": False,
            "schema": '{"type":"struct","fields":[]}',
            "properties": {},
        },
        "content": {
            "root": root,
            "dataVersion": data_version,
            "files": [
                {
                    "path": f"v__={data_version}/part-{b:05d}-abc-c000_{b:05d}.c000.snappy.parquet",
                    "size": 10240 + b,
                    "modificationTime": 1763719199000,
                }
                for b in range(content_files)
            ],
        },
        "source": {
            "format": "parquet",
            "rootPaths": ["file:/lake/orders"],
            "options": {},
            "schema": "{...}",
            "partitionSchema": '{"type":"struct","fields":[]}',
            "table": None,
            "files": sources,
            "appendedFiles": [],
            "deletedFiles": [],
        },
        "signature": {"provider": "FileSetMD5", "value": md5_signature(sources)},
        "extra": {},
    }


def log_dir(index: Path) -> Path:
    d = index / "_hyperspace_log"
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_entry(index: Path, entry: dict[str, Any] | str, name: str | int | None = None) -> Path:
    """Writes an entry (a dict as indented JSON like Jackson, or raw text) under its id."""
    if name is None:
        assert isinstance(entry, dict)
        name = entry["id"]
    text = entry if isinstance(entry, str) else json.dumps(entry, indent=2)
    path = log_dir(index) / str(name)
    path.write_text(text, encoding="utf-8")
    return path


def write_pointer(index: Path, text: str) -> None:
    (log_dir(index) / "latestStable").write_text(text, encoding="utf-8")


def write_log(index: Path, steps: list[tuple[str, str]], pointer: bool = True) -> None:
    """Writes entries 0.. in the given (state, operation) order, plus latestStable."""
    last_stable = None
    for i, (state, op) in enumerate(steps):
        write_entry(index, entry_json(i, state, op, data_version=i // 4))
        if state in STABLE_STATES:
            last_stable = i
    if pointer and last_stable is not None:
        write_pointer(index, str(last_stable))


# create, delete, restore, then a crashed refresh
LIFECYCLE = [
    ("CREATING", "CREATE"),
    ("ACTIVE", "CREATE"),
    ("DELETING", "DELETE"),
    ("DELETED", "DELETE"),
    ("RESTORING", "RESTORE"),
    ("ACTIVE", "RESTORE"),
    ("REFRESHING", "REFRESH"),
]


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "indexes" / "orders_by_customer"
    write_log(path, LIFECYCLE)
    return path


def error_of(fn: Any, *args: Any) -> str:
    with pytest.raises(HyperspaceException) as info:
        fn(*args)
    return str(info.value)


# --- parsing -----------------------------------------------------------------------------------


def test_parse_the_spec_example() -> None:
    doc = entry_json(1)
    e = parse_entry(json.dumps(doc), "1")
    assert isinstance(e, LogEntry)
    assert (e.spec_version, e.id, e.name) == (1, 1, "orders_by_customer")
    assert (e.state, e.operation) == ("ACTIVE", "CREATE")
    assert e.timestamp == T0 + 1000 and e.enabled is True
    assert e.owner == Owner(host="worker-1", pid=4711, started_at=1763719190000)
    assert e.index == IndexDefinition(
        kind="CoveringIndex",
        kind_version=1,
        indexed_columns=("customer_id",),
        included_columns=("amount",),
        num_buckets=4,
        lineage=False,
        schema='{"type":"struct","fields":[]}',
        properties={},
    )
    assert e.content == Content(
        root="file:/lake/indexes/orders_by_customer",
        data_version=0,
        files=(ContentFile("v__=0/part-00000-abc-c000_00000.c000.snappy.parquet", 10240, 1763719199000),),
    )
    assert e.source == Source(
        format="parquet",
        root_paths=("file:/lake/orders",),
        options={},
        schema="{...}",
        partition_schema='{"type":"struct","fields":[]}',
        table=None,
        files=(SourceFile("file:/lake/orders/part-00000.parquet", 52311, 1763719000000, 0),),
    )
    assert e.signature == Signature("FileSetMD5", md5_signature(doc["source"]["files"]))
    assert e.extra == {}
    assert e.is_stable
    assert e.data_path == "file:/lake/indexes/orders_by_customer/v__=0"
    assert e.content.size_in_bytes == 10240


def test_entries_are_frozen_and_hashable() -> None:
    e = parse_entry(json.dumps(entry_json(0)), "0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.state = "DELETED"  # type: ignore[misc]
    assert hash(e) == hash(parse_entry(json.dumps(entry_json(0)), "0"))
    assert all(dataclasses.is_dataclass(c) for c in (LogEntry, Owner, IndexDefinition, Content, Source))


def test_unknown_fields_are_ignored() -> None:
    doc = entry_json(3, "ACTIVE", "REFRESH", data_version=2, content_files=3)
    doc["futureField"] = {"anything": [1, 2]}
    doc["owner"]["container"] = "c-1"
    doc["index"]["bloom"] = True
    doc["content"]["files"][0]["checksum"] = "abc"
    doc["source"]["files"][0]["etag"] = "x"
    doc["signature"]["algorithm"] = "md5"
    doc["extra"] = {"k": "v"}
    doc["source"]["table"] = "sales.orders"
    doc["source"]["options"] = {"header": "true"}
    doc["index"]["properties"] = {"p": "q"}
    e = parse_entry(json.dumps(doc), "3")
    assert e.extra == {"k": "v"}
    assert e.source.table == "sales.orders"
    assert e.source.options == {"header": "true"}
    assert e.index.properties == {"p": "q"}
    assert e.data_path == "file:/lake/indexes/orders_by_customer/v__=2"
    assert e.content.size_in_bytes == 10240 + 10241 + 10242


def test_a_kind_the_package_does_not_know_is_read_as_recorded(tmp_path: Path) -> None:
    # Kinds added by a jar (or newer Hyperspace versions) write their own kind strings and
    # properties; the reader keeps them as they are rather than failing.
    doc = entry_json(1)
    doc["index"]["kind"] = "ZOrderCoveringIndex"
    doc["index"]["kindVersion"] = 3
    doc["index"]["properties"] = {"zorder": '["a","b"]'}
    index = tmp_path / "zidx"
    write_entry(index, doc)
    e = latest_stable(str(index))
    assert e is not None
    assert (e.index.kind, e.index.kind_version) == ("ZOrderCoveringIndex", 3)
    assert e.index.properties == {"zorder": '["a","b"]'}
    assert len(history(str(index))) == 1


def test_states_constants() -> None:
    assert STABLE_STATES == {"ACTIVE", "DELETED", "DOESNOTEXIST"}
    assert TRANSIENT_STATES == {"CREATING", "REFRESHING", "OPTIMIZING", "DELETING", "RESTORING", "VACUUMING"}
    for state in TRANSIENT_STATES:
        assert not parse_entry(json.dumps(entry_json(0, state)), "0").is_stable
    for state in STABLE_STATES:
        assert parse_entry(json.dumps(entry_json(0, state)), "0").is_stable


# --- read_log ----------------------------------------------------------------------------------


def test_read_log_sorts_by_numeric_id(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    ids = list(range(12))  # "10" and "11" sort before "2" as text
    random.Random(7).shuffle(ids)
    for i in ids:
        write_entry(index, entry_json(i, "ACTIVE" if i % 2 else "REFRESHING", "REFRESH"))
    entries = read_log(str(index))
    assert [e.id for e in entries] == list(range(12))
    assert [e.state for e in entries[:3]] == ["REFRESHING", "ACTIVE", "REFRESHING"]


def test_read_log_ignores_non_entry_files(index: Path) -> None:
    d = log_dir(index)
    (d / ".7.tmp").write_text("{ half")  # a temporary file being written
    (d / ".latestStable.tmp").write_text("9")
    (d / "7.crc").write_text("junk")
    (d / "07").write_text("junk")  # padded: not an entry name
    (d / "notes.txt").write_text("junk")
    (d / "8").mkdir()  # a directory, not a file
    entries = read_log(str(index))
    assert [e.id for e in entries] == list(range(len(LIFECYCLE)))
    assert [(e.state, e.operation) for e in entries] == LIFECYCLE


def test_read_log_accepts_trailing_slash_and_explicit_filesystem(index: Path) -> None:
    assert len(read_log(str(index) + "/")) == len(LIFECYCLE)
    assert len(read_log(str(index), pafs.LocalFileSystem())) == len(LIFECYCLE)
    # A filesystem other than the local one: the path is a path on it.
    sub = pafs.SubTreeFileSystem(str(index.parent), pafs.LocalFileSystem())
    assert [e.id for e in read_log(index.name, sub)] == list(range(len(LIFECYCLE)))


def test_read_log_relative_path(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(index.parent)
    assert len(read_log(index.name)) == len(LIFECYCLE)


# --- file: URIs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [
        lambda p: f"file:{p}",  # Spark / Hadoop: file:/tmp/x
        lambda p: f"file://{p}",  # file:///tmp/x
        lambda p: f"file://localhost{p}",
        lambda p: Path(p).as_uri(),  # Python: percent-encoded
    ],
    ids=["file:/", "file:///", "file://localhost/", "as_uri"],
)
def test_file_uris(tmp_path: Path, form: Any) -> None:
    index = tmp_path / "dir with space" / "idx"
    write_log(index, LIFECYCLE[:2])
    uri = form(str(index))
    assert [e.id for e in read_log(uri)] == [0, 1]
    assert [e.id for e in read_log(uri, pafs.LocalFileSystem())] == [0, 1]
    assert latest_stable(uri).id == 1  # type: ignore[union-attr]
    assert list(history(uri)["id"]) == [0, 1]


def test_file_uri_of_missing_index_names_it(tmp_path: Path) -> None:
    uri = f"file:{tmp_path}/nothing"
    assert uri in error_of(read_log, uri)


def test_remote_file_uri_is_refused(tmp_path: Path) -> None:
    msg = error_of(read_log, f"file://otherhost{tmp_path}")
    assert "otherhost" in msg


# --- latest_stable -----------------------------------------------------------------------------


def test_latest_stable_follows_pointer(index: Path) -> None:
    e = latest_stable(str(index))
    assert e is not None and (e.id, e.state, e.operation) == (5, "ACTIVE", "RESTORE")


def test_a_pointer_left_behind_by_a_crash_loses_to_a_newer_stable_entry(index: Path) -> None:
    # The pointer is replaced just after the final entry is written; a crash in between leaves
    # it naming an older stable entry. Readers (like the JVM) then use the newest stable one.
    write_pointer(index, "3\n")  # whitespace around the id is fine
    e = latest_stable(str(index))
    assert e is not None and (e.id, e.state) == (5, "ACTIVE")


def test_latest_stable_without_pointer(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    write_log(index, LIFECYCLE, pointer=False)
    e = latest_stable(str(index))
    assert e is not None and e.id == 5  # 6 is the crashed REFRESHING


@pytest.mark.parametrize(
    "pointer",
    ["42", "6", "garbage", "", "5.0", "-5", "+5", "0x5", "5 6"],
    ids=["missing-entry", "transient-entry", "garbage", "empty", "float", "negative", "plus", "hex", "two"],
)
def test_latest_stable_with_stale_or_corrupted_pointer(index: Path, pointer: str) -> None:
    write_pointer(index, pointer)
    e = latest_stable(str(index))
    assert e is not None and (e.id, e.state) == (5, "ACTIVE")


def test_latest_stable_pointer_not_utf8(index: Path) -> None:
    (log_dir(index) / "latestStable").write_bytes(b"\xff\xfe\x00")
    assert latest_stable(str(index)).id == 5  # type: ignore[union-attr]


def test_latest_stable_none_when_only_transient(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    write_log(index, [("CREATING", "CREATE")])
    assert latest_stable(str(index)) is None
    write_pointer(index, "0")  # even if a pointer names the transient entry
    assert latest_stable(str(index)) is None


def test_latest_stable_doesnotexist_and_cancel(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    write_log(index, [("CREATING", "CREATE"), ("DOESNOTEXIST", "CANCEL")], pointer=False)
    e = latest_stable(str(index))
    assert e is not None and (e.id, e.state, e.operation, e.enabled) == (1, "DOESNOTEXIST", "CANCEL", False)


def test_latest_stable_reports_corrupt_entry(index: Path) -> None:
    path = write_entry(index, "{ not json", 5)
    assert str(path) in error_of(latest_stable, str(index))


def test_latest_stable_no_log(tmp_path: Path) -> None:
    assert str(tmp_path) in error_of(latest_stable, str(tmp_path))


# --- history -----------------------------------------------------------------------------------


def test_history(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    steps = [("CREATING", "CREATE"), ("ACTIVE", "CREATE"), ("OPTIMIZING", "OPTIMIZE"), ("ACTIVE", "OPTIMIZE")]
    shapes = [(0, 0, 3), (0, 4, 3), (0, 4, 3), (1, 2, 5)]  # (dataVersion, content files, source files)
    for i, ((state, op), (dv, nf, ns)) in enumerate(zip(steps, shapes)):
        write_entry(index, entry_json(i, state, op, data_version=dv, content_files=nf, source_files=ns))
    write_pointer(index, "3")

    h = history(str(index))
    assert isinstance(h, pd.DataFrame)
    expected = ["id", "state", "operation", "timestamp", "files", "size", "sourceFiles", "dataVersion"]
    assert list(h.columns) == expected
    assert list(h.columns) == list(HISTORY_COLUMNS)
    assert len(h) == 4
    assert str(h["id"].dtype) == "int64"
    for col in ("files", "size", "sourceFiles", "dataVersion"):
        assert pd.api.types.is_integer_dtype(h[col]), col
    assert isinstance(h["timestamp"].dtype, pd.DatetimeTZDtype) and str(h["timestamp"].dt.tz) == "UTC"

    assert list(h["id"]) == [0, 1, 2, 3]
    assert list(h["state"]) == ["CREATING", "ACTIVE", "OPTIMIZING", "ACTIVE"]
    assert list(h["operation"]) == ["CREATE", "CREATE", "OPTIMIZE", "OPTIMIZE"]
    assert list(h["files"]) == [0, 4, 4, 2]
    four = sum(10240 + b for b in range(4))
    assert list(h["size"]) == [0, four, four, 10240 + 10241]
    assert list(h["sourceFiles"]) == [3, 3, 3, 5]
    assert list(h["dataVersion"]) == [0, 0, 0, 1]
    assert h["timestamp"].iloc[0] == pd.Timestamp("2025-11-21 10:00:00", tz="UTC")
    assert h["timestamp"].iloc[3] == pd.Timestamp(T0 + 3000, unit="ms", tz="UTC")
    assert all(isinstance(s, str) for s in h["state"]) and all(isinstance(s, str) for s in h["operation"])


# --- errors ------------------------------------------------------------------------------------


def test_no_log_dir(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_index"
    msg = error_of(read_log, str(missing))
    assert str(missing) in msg and "No index log" in msg
    assert str(missing) in error_of(history, str(missing))


def test_log_dir_without_entries(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    write_pointer(index, "0")  # a pointer and a temporary file, but no entry
    (log_dir(index) / ".0.tmp").write_text("{}")
    assert str(index) in error_of(read_log, str(index))


def test_log_path_is_a_file(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    index.mkdir()
    (index / "_hyperspace_log").write_text("not a directory")
    assert str(index) in error_of(read_log, str(index))


@pytest.mark.parametrize(
    "text",
    ["{ not json", "", "[1, 2]", '"just a string"', '{"specVersion": 1, "id": NaN}'],
    ids=["broken", "empty", "array", "string", "nan"],
)
def test_corrupt_json_names_file(index: Path, text: str) -> None:
    path = write_entry(index, text, 2)
    msg = error_of(read_log, str(index))
    assert str(path) in msg and "Corrupted" in msg
    assert str(index / "_hyperspace_log" / "20") not in msg


def test_not_utf8_names_file(index: Path) -> None:
    path = log_dir(index) / "3"
    path.write_bytes(b'{"specVersion": 1, "name": "\xff"}')
    assert str(path) in error_of(read_log, str(index))


def _delete(doc: dict[str, Any], dotted: str) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        doc = doc[p][0] if p == "files" else doc[p]
    del doc[last]


@pytest.mark.parametrize(
    "field_path",
    [
        "specVersion",
        "id",
        "name",
        "state",
        "operation",
        "timestamp",
        "enabled",
        "owner",
        "owner.pid",
        "index.indexedColumns",
        "index.numBuckets",
        "content",
        "content.root",
        "content.files",
        "content.files.size",
        "source.rootPaths",
        "source.files.id",
        "source.partitionSchema",
        "signature.value",
    ],
)
def test_missing_field_names_file_and_field(index: Path, field_path: str) -> None:
    doc = entry_json(1)
    _delete(doc, field_path)
    path = write_entry(index, doc, 1)
    msg = error_of(read_log, str(index))
    assert str(path) in msg
    leaf = field_path.split(".")[-1]
    assert leaf in msg and "missing" in msg


def test_missing_field_via_parse_entry() -> None:
    doc = entry_json(0)
    del doc["content"]["files"][0]["modificationTime"]
    msg = error_of(parse_entry, json.dumps(doc), "some/where/0")
    assert "some/where/0" in msg and "content.files[0].modificationTime" in msg


def test_optional_fields_may_be_absent() -> None:
    doc = entry_json(0)
    del doc["extra"], doc["source"]["table"], doc["index"]["properties"]
    e = parse_entry(json.dumps(doc), "0")
    assert e.extra == {} and e.source.table is None and e.index.properties == {}
    assert e.incarnation is None  # logs written before incarnations existed


def test_incarnation_is_read() -> None:
    doc = entry_json(0)
    doc["incarnation"] = "3f0c8a52-8d0e-4c1b-9a59-7d2f2b0d6e11"
    assert parse_entry(json.dumps(doc), "0").incarnation == "3f0c8a52-8d0e-4c1b-9a59-7d2f2b0d6e11"
    doc["incarnation"] = 7
    assert "incarnation" in error_of(parse_entry, json.dumps(doc), "0")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(id="1"),
        lambda d: d.update(enabled="true"),
        lambda d: d.update(timestamp=1.5),
        lambda d: d.update(timestamp=True),
        lambda d: d["index"].update(indexedColumns="customer_id"),
        lambda d: d["index"].update(indexedColumns=[1]),
        lambda d: d["source"].update(options={"header": True}),
        lambda d: d["source"].update(table=3),
        lambda d: d["content"].update(files={}),
        lambda d: d.update(owner=None),
        lambda d: d.update(state="SLEEPING"),
    ],
    ids=[
        "id-str",
        "enabled-str",
        "ts-float",
        "ts-bool",
        "cols-str",
        "cols-int",
        "options",
        "table",
        "files-obj",
        "owner-null",
        "state",
    ],
)
def test_wrong_types_and_unknown_state_name_file(index: Path, mutate: Any) -> None:
    doc = entry_json(1)
    mutate(doc)
    path = write_entry(index, doc, 1)
    msg = error_of(read_log, str(index))
    assert str(path) in msg and "Corrupted" in msg


@pytest.mark.parametrize("version", [2, 0])
def test_unknown_spec_version_names_file(index: Path, version: int) -> None:
    doc = entry_json(4, "RESTORING", "RESTORE")
    doc["specVersion"] = version
    del doc["content"]  # a future version may have other fields: the version is reported first
    path = write_entry(index, doc, 4)
    msg = error_of(read_log, str(index))
    assert str(path) in msg and f"specVersion {version}" in msg
    assert error_of(parse_entry, json.dumps(doc), "x/4").startswith("Index log entry x/4 has specVersion")


def test_id_name_mismatch_names_file(index: Path) -> None:
    path = write_entry(index, entry_json(9, "ACTIVE"), 3)
    msg = error_of(read_log, str(index))
    assert str(path) in msg and "9" in msg
    # latest_stable reading that entry also checks it
    write_pointer(index, "3")
    assert str(path) in error_of(latest_stable, str(index))


def test_error_in_file_uri_form_names_file(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    write_log(index, LIFECYCLE[:2])
    write_entry(index, "{", 1)
    msg = error_of(read_log, f"file:{index}")
    assert f"file:{index}/_hyperspace_log/1" in msg


# --- signature ---------------------------------------------------------------------------------


def test_signature_of_known_example() -> None:
    files = [
        SourceFile("file:/lake/orders/part-00001.parquet", 200, 1763719000001, 1),
        SourceFile("file:/lake/orders/part-00000.parquet", 52311, 1763719000000, 0),
    ]
    text = (
        "file:/lake/orders/part-00000.parquet\t52311\t1763719000000\n"
        "file:/lake/orders/part-00001.parquet\t200\t1763719000001"
    )
    assert signature_of(files) == hashlib.md5(text.encode("utf-8")).hexdigest()
    assert signature_of(reversed(files)) == signature_of(files)  # any iterable, any order
    assert signature_of([]) == hashlib.md5(b"").hexdigest()


def test_signature_of_single_file_and_ids_do_not_matter() -> None:
    f = SourceFile("file:/lake/orders/part-00000.parquet", 52311, 1763719000000, 0)
    expected = hashlib.md5(b"file:/lake/orders/part-00000.parquet\t52311\t1763719000000").hexdigest()
    assert signature_of([f]) == expected
    assert signature_of([dataclasses.replace(f, id=99)]) == expected
    assert signature_of([dataclasses.replace(f, size=52312)]) != expected


def test_signature_of_non_ascii_uses_utf8_and_jvm_order() -> None:
    # U+FF21 (one UTF-16 unit 0xFF21) sorts after U+1F600 (surrogates 0xD83D 0xDE00) in Java's
    # String order, though before it by code point.
    a = SourceFile("file:/d/\uff21.csv", 1, 2, 0)
    b = SourceFile("file:/d/\U0001f600.csv", 3, 4, 1)
    text = "file:/d/\U0001f600.csv\t3\t4\nfile:/d/\uff21.csv\t1\t2"
    assert signature_of([a, b]) == hashlib.md5(text.encode("utf-8")).hexdigest()


def test_parse_a_delta_source_file_with_a_deletion_vector() -> None:
    doc = entry_json(1, source_files=2)
    doc["source"]["format"] = "delta"
    doc["source"]["files"][1]["deletionVector"] = "uabc123@0"
    doc["signature"] = {"provider": "DeltaVersion", "value": "12"}
    e = parse_entry(json.dumps(doc), "1")
    assert [f.deletion_vector for f in e.source.files] == [None, "uabc123@0"]
    assert (e.signature.provider, e.signature.value) == ("DeltaVersion", "12")
    doc["source"]["files"][1]["deletionVector"] = 7
    with pytest.raises(ValueError, match=r"source\.files\[1\]\.deletionVector"):
        parse_entry(json.dumps(doc), "1")


def test_signature_of_read_entry_matches_its_value(index: Path) -> None:
    for e in read_log(str(index)):
        assert e.signature.provider == "FileSetMD5"
        assert signature_of(e.source.files) == e.signature.value


# --- no JVM ------------------------------------------------------------------------------------


def test_log_module_does_not_import_pyspark() -> None:
    tree = ast.parse(LOG_PY.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not {m for m in imported if m.split(".")[0] in ("pyspark", "py4j")}
    assert {m for m in imported if m.startswith("hyperspace")} == {"hyperspace.exceptions"}


def test_public_api_documented() -> None:
    import hyperspace.log as log

    for name in log.__all__:
        obj = getattr(log, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), name
    assert copy.deepcopy(log.STABLE_STATES) == STABLE_STATES


def test_per_file_stats_are_read() -> None:
    doc = entry_json(0)
    files = doc["content"]["files"]
    files[0]["stats"] = {
        "rowCount": 12,
        "columns": {
            "customer_id": {"min": "3", "max": "97", "nullCount": 1},
            "note": {"min": None, "max": None, "nullCount": 12},
        },
    }
    e = parse_entry(json.dumps(doc), "0")
    first = e.content.files[0].stats
    assert first is not None and first.row_count == 12
    assert first.columns["customer_id"] == ColumnStats("3", "97", 1)
    assert first.columns["note"] == ColumnStats(None, None, 12)
    assert first.locations is None
    # Files without stats (older logs, kinds that record none) may hold any value.
    assert all(f.stats is None for f in e.content.files[1:])
    hash(e)  # still hashable: the stats do not take part


def test_split_index_location_stats_are_read() -> None:
    doc = entry_json(0)
    doc["content"]["files"][0]["stats"] = {
        "rowCount": 12,
        "columns": {},
        "locations": {"keys": 4, "keyRowGroups": 9, "rowGroupBytes": 12000},
    }
    stats = parse_entry(json.dumps(doc), "0").content.files[0].stats
    assert stats is not None and stats.locations == LocationStats(4, 9, 12000)
    doc["content"]["files"][0]["stats"]["locations"] = {"keys": 4, "keyRowGroups": -1, "rowGroupBytes": 1}
    msg = error_of(parse_entry, json.dumps(doc), "x/0")
    assert "content.files[0].stats.locations" in msg and "keyRowGroups" in msg


@pytest.mark.parametrize(
    "stats",
    [{"columns": {}}, {"rowCount": -1, "columns": {}}, {"rowCount": 1, "columns": {"c": {"min": "1"}}}, []],
    ids=["no-row-count", "negative", "no-null-count", "not-an-object"],
)
def test_bad_per_file_stats_name_the_field(stats: Any) -> None:
    doc = entry_json(0)
    doc["content"]["files"][0]["stats"] = stats
    msg = error_of(parse_entry, json.dumps(doc), "x/0")
    assert "content.files[0].stats" in msg
