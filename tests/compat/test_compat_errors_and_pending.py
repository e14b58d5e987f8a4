"""Errors reach Python translated (the README's claim), and the original's glob-pattern
sources."""

from __future__ import annotations

from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException

from hyperspace import *  # noqa: F403
from tests.compat.conftest import HyperspaceCompatTestCase


class TestErrorsAreTranslated(HyperspaceCompatTestCase):
    def writeSource(self) -> str:
        path = self.dataPath("source")
        self.writeParquet([(i, f"n{i}") for i in range(30)], ["id", "name"], path, numFiles=3)
        return path

    def test_a_bad_column_is_a_hyperspace_exception_naming_it(self) -> None:
        df = self.spark.read.parquet(self.writeSource())
        with pytest.raises(HyperspaceException, match="nope"):
            self.hyperspace.createIndex(df, IndexConfig("bad", ["nope"], ["name"]))
        assert self.hyperspace.indexes().count() == 0

    def test_a_source_file_deleted_mid_way_is_not_indexed(self) -> None:
        path = self.writeSource()
        df = self.spark.read.parquet(path)  # lists the files now
        sorted(Path(path).glob("*.parquet"))[0].unlink()
        self.hyperspace.createIndex(df, IndexConfig("midway", ["id"], ["name"]))
        assert self.hyperspace.index("midway").first()["numSourceFiles"] == 2
        self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("id = 25").select("name"), {"midway"})

    def test_a_spark_error_during_a_create_is_translated(self) -> None:
        path = self.writeSource()
        df = self.spark.read.parquet(path)
        (Path(path) / "part-99999-corrupt.parquet").write_bytes(b"not a parquet file")
        with pytest.raises((HyperspaceException, PySparkException)) as raised:
            self.hyperspace.createIndex(df, IndexConfig("corrupt", ["id"], ["name"]))
        assert not isinstance(raised.value, Py4JJavaError)
        assert "part-99999-corrupt.parquet" in str(raised.value)
        assert self.hyperspace.indexes().filter("state = 'ACTIVE'").count() == 0

    def test_a_spark_analysis_error_during_a_refresh_is_pysparks_own(self) -> None:
        path = self.writeSource()
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("gone", ["id"], ["name"]))
        for f in Path(path).iterdir():
            f.unlink()
        Path(path).rmdir()
        with pytest.raises((HyperspaceException, AnalysisException)) as raised:
            self.hyperspace.refreshIndex("gone", "full")
        assert not isinstance(raised.value, Py4JJavaError)
        assert path.rstrip("/").rsplit("/", 1)[-1] in str(raised.value)
        assert self.hyperspace.index("gone").first()["state"] == "ACTIVE"


class TestGlobSources(HyperspaceCompatTestCase):
    """Sources declared with `spark.hyperspace.source.globbingPattern` (#13 item 7)."""

    def test_glob_pattern_source_and_refresh(self) -> None:
        root = self.dataPath("glob")
        for day in ("1", "2"):
            self.writeParquet([(int(day) * 10 + i, f"d{day}") for i in range(5)], ["id", "name"], f"{root}/{day}/data")
        pattern = f"{root}/*/data"

        def read():
            return self.spark.read.option("spark.hyperspace.source.globbingPattern", pattern).parquet(pattern)

        self.hyperspace.createIndex(read(), IndexConfig("globIdx", ["id"], ["name"]))
        assert self.verifyIndexUsage(lambda: read().filter("id = 12").select("name"), {"globIdx"}) == [("d1",)]
        self.writeParquet([(30, "d3")], ["id", "name"], f"{root}/3/data")
        self.hyperspace.refreshIndex("globIdx", "incremental")
        assert self.verifyIndexUsage(lambda: read().filter("id = 30").select("name"), {"globIdx"}) == [("d3",)]
