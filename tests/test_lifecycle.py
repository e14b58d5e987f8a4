"""The covering-index lifecycle from Python: create, list, delete, restore, vacuum, cancel."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from conftest import REPO
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceConflictException,
    HyperspaceException,
    HyperspaceIndexNotFoundException,
    IndexConfig,
    index_kinds,
)
from hyperspace import log as hslog


@pytest.fixture(scope="module")
def hs(spark: SparkSession, work_dir: Path) -> Iterator[Hyperspace]:
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(work_dir / "indexes"), num_buckets=4):
        yield Hyperspace(spark)


@pytest.fixture(scope="module")
def source(spark: SparkSession, work_dir: Path) -> str:
    path = str(work_dir / "lifecycle-source")
    (
        spark.range(0, 300, 1, 3)
        .selectExpr("id", "CONCAT('n', id % 11) AS name", "id * 2.5 AS amount")
        .write.parquet(path)
    )
    return path


def _index_path(hs: Hyperspace, name: str) -> str:
    return hs.index(name).first()["indexRoot"]


def test_index_config_accepts_both_spellings() -> None:
    original = IndexConfig("idx", ["a"], ["b"])
    camel = IndexConfig(indexName="idx", indexedColumns=["a"], includedColumns=["b"])
    snake = IndexConfig(name="idx", indexed_columns=["a"], included_columns=["b"])
    assert original == camel == snake
    assert original.indexedColumns == ("a",) and original.includedColumns == ("b",)
    assert repr(IndexConfig("i", ["a"], num_buckets=8)) == "IndexConfig('i', ['a'], num_buckets=8)"
    assert json.loads(IndexConfig("i", ["a"], lineage=True).to_json()) == {
        "name": "i",
        "indexedColumns": ["a"],
        "includedColumns": [],
        "numBuckets": None,
        "lineage": True,
    }


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (("i", "a"), {}, "must be a list of column names"),
        (("i", [1]), {}, "must be column names"),
        (("i", ["a"]), {"num_buckets": "8"}, "num_buckets must be an int"),
        (("i", ["a"]), {"lineage": "yes"}, "lineage must be a bool"),
        ((None, ["a"]), {}, "name must be a string"),
    ],
)
def test_index_config_rejects_bad_arguments(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(HyperspaceException, match=message):
        IndexConfig(*args, **kwargs)


def test_create_list_delete_restore_vacuum(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    hs.create_index(spark.read.parquet(source), IndexConfig("py_idx", ["name"], ["amount"]))
    rows = {r["name"]: r for r in hs.indexes().collect()}
    row = rows["py_idx"]
    assert row["state"] == "ACTIVE" and row["kind"] == "CoveringIndex"
    assert row["indexedColumns"] == ["name"] and row["includedColumns"] == ["amount"]
    assert row["numBuckets"] == 4 and row["numSourceFiles"] == 3 and row["numIndexFiles"] == 4
    assert hs.indexes().columns == [
        "name",
        "kind",
        "indexedColumns",
        "includedColumns",
        "numBuckets",
        "state",
        "indexLocation",
        "sizeInBytes",
        "numIndexFiles",
        "numSourceFiles",
        "appendedFiles",
        "deletedFiles",
        "lastModified",
        "stateReason",
        "indexRoot",
        "additionalStats",
    ]
    extended = hs.index("py_idx").first()
    assert extended["dataVersion"] == 0 and extended["sourceFormat"] == "parquet"

    hs.delete_index("py_idx")
    assert hs.index("py_idx").first()["state"] == "DELETED"
    hs.restore_index("py_idx")
    assert hs.index("py_idx").first()["state"] == "ACTIVE"
    hs.delete_index("py_idx")
    kept = hs.vacuum_index("py_idx")
    assert not kept.changed and "until" in kept.message  # within the retention: still DELETED
    assert hs.index("py_idx").first()["state"] == "DELETED"
    with HyperspaceConfig(spark).override(vacuum_retention=0):
        freed = hs.vacuum_index("py_idx")
    assert freed.changed and freed.operation == "vacuum" and "name is free" in freed.message
    assert "py_idx" not in {r["name"] for r in hs.indexes().collect()}


def test_vacuum_retain_hours_below_the_retention_is_refused_unless_the_check_is_off(
    spark: SparkSession, hs: Hyperspace, source: str
) -> None:
    hs.create_index(spark.read.parquet(source), IndexConfig("py_retained", ["id"]))
    hs.delete_index("py_retained")
    with pytest.raises(HyperspaceException, match="retentionCheck.enabled=false"):
        hs.vacuum_index("py_retained", retain_hours=0)
    assert hs.index("py_retained").first()["state"] == "DELETED"
    with HyperspaceConfig(spark).override(vacuum_retention_check_enabled=False):
        assert hs.vacuum_index("py_retained", retain_hours=0).changed
    assert "py_retained" not in {r["name"] for r in hs.indexes().collect()}
    hs.create_index(spark.read.parquet(source), IndexConfig("py_retained", ["name"]))
    assert hs.index("py_retained").first()["indexedColumns"] == ["name"]


def test_camel_case_aliases(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    hs.createIndex(spark.read.parquet(source), IndexConfig("camel_idx", ["id"]))
    hs.deleteIndex("camel_idx")
    hs.restoreIndex("camel_idx")
    hs.deleteIndex("camel_idx")
    hs.vacuumIndex("camel_idx")
    assert Hyperspace.createIndex is Hyperspace.create_index
    assert Hyperspace.vacuumIndex is Hyperspace.vacuum_index


def test_errors_are_python_exceptions_with_the_jvm_message(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    with pytest.raises(HyperspaceIndexNotFoundException, match="Index 'nope' does not exist") as info:
        hs.delete_index("nope")
    assert not isinstance(info.value, Py4JJavaError)
    assert info.value.java_class == "io.hyperspace.HyperspaceIndexNotFoundException"

    with pytest.raises(HyperspaceException, match="Column 'missing' of index 'bad' is not in the source"):
        hs.create_index(spark.read.parquet(source), IndexConfig("bad", ["missing"]))
    with pytest.raises(HyperspaceException, match="not a plain scan of files"):
        hs.create_index(spark.read.parquet(source).where("id > 3"), IndexConfig("bad", ["id"]))
    with pytest.raises(HyperspaceException, match="Invalid index name 'a/b'"):
        hs.create_index(spark.read.parquet(source), IndexConfig("a/b", ["id"]))
    with pytest.raises(HyperspaceException, match="create_index expects an IndexConfig"):
        hs.create_index(spark.read.parquet(source), "not a config")  # type: ignore[arg-type]
    assert "bad" not in {r["name"] for r in hs.indexes().collect()}


def test_conflicts_and_cancel(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    hs.create_index(spark.read.parquet(source), IndexConfig("stuck_idx", ["id"]))
    index_path = _index_path(hs, "stuck_idx")
    # Simulate a crashed delete: a DELETING entry whose process (pid 2**31-1) is not alive.
    log_dir = Path(index_path.replace("file:", "")) / "_hyperspace_log"
    latest = hslog.read_log(index_path)[-1]
    raw = json.loads((log_dir / str(latest.id)).read_text())
    raw.update(id=latest.id + 1, state="DELETING", operation="DELETE")
    raw["owner"]["pid"] = 2**31 - 1
    (log_dir / str(latest.id + 1)).write_text(json.dumps(raw))

    with pytest.raises(HyperspaceConflictException, match=r"no longer running.*cancel\('stuck_idx'\)"):
        hs.restore_index("stuck_idx")
    assert hs.index("stuck_idx").first()["state"] == "DELETING"
    hs.cancel("stuck_idx")
    assert hs.index("stuck_idx").first()["state"] == "ACTIVE"
    with pytest.raises(HyperspaceException, match="no unfinished operation to cancel"):
        hs.cancel("stuck_idx")


def test_log_reader_round_trip_against_a_jvm_written_log(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    hs.create_index(spark.read.parquet(source), IndexConfig("logged", ["id"], ["name"], lineage=True))
    hs.delete_index("logged")
    hs.restore_index("logged")
    index_path = _index_path(hs, "logged")
    entries = hslog.read_log(index_path)
    assert [e.state for e in entries] == ["CREATING", "ACTIVE", "DELETING", "DELETED", "RESTORING", "ACTIVE"]
    assert [e.operation for e in entries] == ["CREATE", "CREATE", "DELETE", "DELETE", "RESTORE", "RESTORE"]
    stable = hslog.latest_stable(index_path)
    jvm = hs.index("logged").first()
    assert stable is not None and stable.id == jvm["logVersion"] == 5
    assert stable.index.indexed_columns == ("id",) and stable.index.included_columns == ("name",)
    assert stable.index.lineage is True and stable.index.num_buckets == 4
    assert stable.content.size_in_bytes == jvm["sizeInBytes"]
    assert len(stable.content.files) == jvm["numIndexFiles"]
    # Each file's row count and range of the indexed column are in the log.
    assert all(f.stats is not None and "id" in f.stats.columns for f in stable.content.files)
    assert sum(f.stats.row_count for f in stable.content.files if f.stats) == spark.read.parquet(source).count()
    assert len(stable.source.files) == jvm["numSourceFiles"] == 3
    assert stable.signature.value == jvm["signature"] == hslog.signature_of(stable.source.files)
    for f in stable.content.files:
        assert Path(stable.content.path_of(f).replace("file:", "")).stat().st_size == f.size
    history = hslog.history(index_path)
    assert list(history["state"]) == [e.state for e in entries]
    assert int(history["size"].iloc[-1]) == jvm["sizeInBytes"]


def _documented_fields(section: str) -> list[str]:
    """The field names in the table under the '## Entry' section's ``section`` heading."""
    text = (REPO / "docs" / "log-format.md").read_text()
    body = text.split(section, 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", body, flags=re.M)


def test_the_log_format_doc_matches_what_the_code_writes(spark: SparkSession, hs: Hyperspace, source: str) -> None:
    hs.create_index(spark.read.parquet(source), IndexConfig("documented", ["id"]))
    index_path = _index_path(hs, "documented")
    log_dir = Path(index_path.replace("file:", "")) / "_hyperspace_log"
    entry = json.loads((log_dir / "1").read_text())
    assert (log_dir / "latestStable").read_text().strip() == "1"
    sections = {
        "## Entry": entry,
        "### `index`": entry["index"],
        "### `content`": entry["content"],
        "### `source`": entry["source"],
    }
    for section, obj in sections.items():
        documented = _documented_fields(section)
        assert documented, f"no fields documented under {section}"
        assert set(documented) == set(obj), f"{section}: documented {sorted(documented)} vs written {sorted(obj)}"
    assert set(entry["owner"]) == {"host", "pid", "startedAt"}
    assert set(entry["content"]["files"][0]) == {"path", "size", "modificationTime", "stats"}
    assert set(entry["content"]["files"][0]["stats"]) == {"rowCount", "columns"}
    assert set(entry["source"]["files"][0]) == {"path", "size", "modificationTime", "id"}
    assert re.search(r"_\d{5}\.c\d+", entry["content"]["files"][0]["path"]), "bucket id in file names"
    assert list(log_dir.parent.glob("v__=0/*.parquet"))


def test_index_kinds_and_configs_of_any_kind(hs: Hyperspace, spark: SparkSession, source: str) -> None:
    assert hs.index_kinds()[:2] == ["CoveringIndex", "DataSkippingIndex"]
    assert IndexConfig("k", ["id"]).kind_name == index_kinds.COVERING

    class OtherKindConfig:
        """A config of a kind no jar on the classpath registers."""

        name = "other_kind_idx"
        kind_name = "NoSuchKind"

        def to_json(self) -> str:
            return json.dumps({"name": self.name})

    assert isinstance(OtherKindConfig(), index_kinds.KindConfig)
    with pytest.raises(
        HyperspaceException, match="kind 'NoSuchKind'.*registered kinds: CoveringIndex, DataSkippingIndex"
    ):
        hs.create_index(spark.read.parquet(source), OtherKindConfig())
    with pytest.raises(HyperspaceException, match="create_index expects an IndexConfig"):
        hs.create_index(spark.read.parquet(source), {"name": "x"})  # type: ignore[arg-type]
