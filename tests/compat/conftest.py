"""The original Hyperspace's tests and scenarios, run against this project in their own style.

Every test here is written the way the original's users wrote their code (``from hyperspace
import *``, camelCase methods, positional ``IndexConfig``, ``Hyperspace.enable(spark)``) and,
for each query, compares the rows with Hyperspace on and off and checks which indexes the plan
uses. The session is the suite-wide one of tests/conftest.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from hyperspace import *  # noqa: F403 - the original's import style is the point

# Settings a scenario may change; all are reset after each test so the shared session is left
# as it was found.
_TOUCHED_KEYS = (
    "spark.hyperspace.system.path",
    "spark.hyperspace.index.numBuckets",
    "spark.hyperspace.index.num.buckets",
    "spark.hyperspace.index.lineage.enabled",
    "spark.hyperspace.index.hybridscan.enabled",
    "spark.hyperspace.index.hybridscan.maxAppendedRatio",
    "spark.hyperspace.index.hybridscan.maxDeletedRatio",
    "spark.hyperspace.explain.displayMode",
    "spark.hyperspace.explain.displayMode.highlight.beginTag",
    "spark.hyperspace.explain.displayMode.highlight.endTag",
    "spark.hyperspace.index.dataskipping.autoPartitionSketch",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.caseSensitive",
    "spark.hyperspace.index.vacuum.retention",
)

_INDEXES_USED = re.compile(r"^(\S+): \S+ \(LogVersion: \d+\)$")


def indexesUsed(hyperspace: Hyperspace, df: DataFrame) -> set[str]:  # noqa: F405
    """The indexes the plan of ``df`` reads, from the "Indexes used" part of explain (the way the
    original's users checked), collected through explain's redirect function."""
    captured: list[str] = []
    hyperspace.explain(df, False, captured.append)
    text = captured[0]
    section = text.split("Indexes used:", 1)[1]
    return {m.group(1) for line in section.splitlines() if (m := _INDEXES_USED.match(line.strip()))}


def sortedRows(df: DataFrame) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


class HyperspaceCompatTestCase:
    """What the original's ``HyperspaceTestCase`` set up: a session with few buckets, a fresh
    index system path and data directory per test, and a ``Hyperspace`` object."""

    spark: SparkSession
    hyperspace: Hyperspace  # noqa: F405
    tempPath: Path

    @pytest.fixture(autouse=True)
    def setUpHyperspace(self, spark: SparkSession, tmp_path: Path) -> Iterator[None]:
        previous = {k: spark.conf.get(k, None) for k in _TOUCHED_KEYS}
        self.spark = spark
        self.tempPath = tmp_path
        self.indexPath = str(tmp_path / "indexes")
        spark.conf.set("spark.hyperspace.system.path", self.indexPath)
        spark.conf.set("spark.hyperspace.index.numBuckets", "5")
        # As the original's notebook: small tables would otherwise be broadcast.
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
        # The original's vacuum removed data at once; ours keeps it for a retention period
        # (docs/migrating.md), which its users set to 0 to keep the original's behaviour.
        spark.conf.set("spark.hyperspace.index.vacuum.retention", "0")
        self.hyperspace = Hyperspace(spark)  # noqa: F405
        try:
            yield
        finally:
            Hyperspace.disable(spark)  # noqa: F405
            for key, value in previous.items():
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)

    def dataPath(self, name: str) -> str:
        return str(self.tempPath / "data" / name)

    def writeParquet(
        self,
        rows: Iterable[tuple],
        columns: list[str],
        path: str,
        mode: str = "overwrite",
        partitionBy: list[str] | None = None,
        numFiles: int = 1,
    ) -> None:
        writer = self.spark.createDataFrame(list(rows), columns).repartition(numFiles).write.mode(mode)
        if partitionBy:
            writer = writer.partitionBy(*partitionBy)
        writer.parquet(path)

    def verifyIndexUsage(self, query: Callable[[], DataFrame], expectedIndexes: set[str]) -> list[tuple]:
        """Runs ``query`` with Hyperspace off, then on: the rows must be equal, and the plan with
        Hyperspace on must read exactly ``expectedIndexes``. Returns the rows."""
        wasEnabled = Hyperspace.isEnabled(self.spark)  # noqa: F405
        Hyperspace.disable(self.spark)  # noqa: F405
        expected = sortedRows(query())
        Hyperspace.enable(self.spark)  # noqa: F405
        try:
            df = query()
            assert indexesUsed(self.hyperspace, df) == expectedIndexes
            assert sortedRows(df) == expected
        finally:
            if not wasEnabled:
                Hyperspace.disable(self.spark)  # noqa: F405
        return expected

    def dataFiles(self, path: str) -> list[Path]:
        return sorted(p for p in Path(path).rglob("*.parquet") if p.is_file())
