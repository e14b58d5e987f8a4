"""End-to-end scenarios of the original's RefreshIndexTest, HybridScanSuite and the refresh parts
of E2EHyperspaceRulesTest: full, incremental and quick refresh after appends and deletes, and
stale indexes read through hybrid scan."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from hyperspace import *  # noqa: F403
from tests.compat.conftest import HyperspaceCompatTestCase


class TestRefreshAndHybridScan(HyperspaceCompatTestCase):
    def writeSource(
        self,
        name: str = "source",
        start: int = 0,
        rows: int = 40,
        numFiles: int = 4,
        mode: str = "overwrite",
        fmt: str = "parquet",
    ) -> str:
        path = self.dataPath(name)
        df = self.spark.createDataFrame(
            [(i, f"name{i % 7}", i * 10) for i in range(start, start + rows)], ["id", "name", "amount"]
        ).repartition(numFiles)
        df.write.mode(mode).format(fmt).save(path)
        return path

    def sourceFiles(self, path: str, suffix: str = ".parquet") -> list[Path]:
        return sorted(p for p in Path(path).iterdir() if p.name.endswith(suffix))

    def createJoinIndexes(self, path: str) -> None:
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("leftIdx", ["id"], ["name"]))
        self.hyperspace.createIndex(df, IndexConfig("rightIdx", ["id"], ["amount"]))

    def joinQuery(self, path: str):
        def query():
            left = self.spark.read.parquet(path).select("id", "name")
            right = self.spark.read.parquet(path).select("id", "amount")
            return left.join(right, "id")

        return query

    def test_incremental_refresh_with_deletes_fails_on_an_index_without_lineage(self) -> None:
        path = self.writeSource()
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("idx", ["id"], ["name"]))
        self.sourceFiles(path)[0].unlink()
        with pytest.raises(HyperspaceException, match="lineage"):
            self.hyperspace.refreshIndex("idx", "incremental")

    def test_incremental_refresh_is_a_noop_when_nothing_changed(self) -> None:
        path = self.writeSource()
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("idx", ["id"], ["name"]))
        before = self.hyperspace.index("idx").first()["logVersion"]
        self.hyperspace.refreshIndex("idx", "incremental")
        assert self.hyperspace.index("idx").first()["logVersion"] == before

    def test_incremental_refresh_fails_when_all_source_files_are_deleted(self) -> None:
        path = self.writeSource()
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("idx", ["id"], ["name"]))
        for f in self.sourceFiles(path):
            f.unlink()
        with pytest.raises(HyperspaceException):
            self.hyperspace.refreshIndex("idx", "incremental")
        assert self.hyperspace.index("idx").first()["state"] == "ACTIVE"

    @pytest.mark.parametrize("mode", ["incremental", "full"])
    def test_join_rule_after_refresh_when_files_are_deleted_and_appended(self, mode: str) -> None:
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        path = self.writeSource()
        self.createJoinIndexes(path)
        query = self.joinQuery(path)
        assert len(self.verifyIndexUsage(query, {"leftIdx", "rightIdx"})) == 40
        self.sourceFiles(path)[0].unlink()
        self.writeSource(start=100, rows=10, numFiles=1, mode="append")
        self.verifyIndexUsage(query, set())  # stale, hybrid scan off
        self.hyperspace.refreshIndex("leftIdx", mode)
        self.hyperspace.refreshIndex("rightIdx", mode)
        rows = self.verifyIndexUsage(query, {"leftIdx", "rightIdx"})
        assert len(rows) == self.spark.read.parquet(path).count() < 50  # ids are unique

    def test_join_rule_after_quick_refresh_when_files_are_deleted_and_appended(self) -> None:
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        path = self.writeSource()
        self.createJoinIndexes(path)
        query = self.joinQuery(path)
        self.sourceFiles(path)[0].unlink()
        self.writeSource(start=100, rows=10, numFiles=1, mode="append")
        self.hyperspace.refreshIndex("leftIdx", "quick")
        self.hyperspace.refreshIndex("rightIdx", "quick")
        row = self.hyperspace.index("leftIdx").first()
        assert (row["numAppendedFiles"], row["numDeletedFiles"]) == (1, 1)
        # A quick refresh only records the changes: queries make up for them with hybrid scan.
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
        self.spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", "0.99")
        self.spark.conf.set("spark.hyperspace.index.hybridscan.maxDeletedRatio", "0.99")
        assert len(self.verifyIndexUsage(query, {"leftIdx", "rightIdx"})) == self.spark.read.parquet(path).count()

    def test_hybrid_scan_append_only_join_rule_merges_appended_data_by_bucket_union(self) -> None:
        path = self.writeSource()
        self.createJoinIndexes(path)
        self.writeSource(start=100, rows=5, numFiles=1, mode="append")
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
        query = self.joinQuery(path)
        assert len(self.verifyIndexUsage(query, {"leftIdx", "rightIdx"})) == 45
        Hyperspace.enable(self.spark)
        plan = query()._jdf.queryExecution().executedPlan().toString()
        assert "BucketUnion" in plan

    @pytest.mark.parametrize("fmt", ["json", "csv"])
    def test_hybrid_scan_append_only_filter_rule_on_non_parquet_source(self, fmt: str) -> None:
        path = self.dataPath(fmt)
        df = self.spark.createDataFrame([(i, f"name{i % 7}") for i in range(40)], ["id", "name"]).repartition(4)
        df.write.format(fmt).option("header", "true").save(path)

        def read():
            reader = self.spark.read.format(fmt)
            if fmt == "csv":
                reader = reader.option("header", "true").schema("id INT, name STRING")
            return reader.load(path)

        self.hyperspace.createIndex(read(), IndexConfig("idx", ["name"], ["id"]))
        self.spark.createDataFrame([(100, "name3")], ["id", "name"]).write.mode("append").format(fmt).option(
            "header", "true"
        ).save(path)
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")

        def query():
            return read().filter("name = 'name3'").select("id", "name")

        assert (100, "name3") in self.verifyIndexUsage(query, {"idx"})

    def test_hybrid_scan_delete_only_join_rule_excludes_deleted_files(self) -> None:
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        path = self.writeSource(numFiles=8)
        self.createJoinIndexes(path)
        self.sourceFiles(path)[0].unlink()
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
        rows = self.verifyIndexUsage(self.joinQuery(path), {"leftIdx", "rightIdx"})
        assert len(rows) == self.spark.read.parquet(path).count() < 40

    def test_hybrid_scan_append_and_delete_filter_rule(self) -> None:
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        path = self.writeSource(numFiles=8)
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("idx", ["name"], ["id"]))
        self.sourceFiles(path)[0].unlink()
        self.writeSource(start=100, rows=7, numFiles=1, mode="append")
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")

        def query():
            return self.spark.read.parquet(path).filter("name = 'name2'").select("id", "name")

        rows = self.verifyIndexUsage(query, {"idx"})
        assert (100, "name2") in rows  # an appended row (names cycle with id % 7)

    def test_hybrid_scan_for_partitioned_source_with_user_specified_base_path(self) -> None:
        # The original's HybridScanForPartitionedDataTest: an index over two partition
        # directories read with basePath serves a query over the root holding exactly them;
        # a partition appended later is served by hybrid scan only, and an incremental refresh
        # keeps the partition values of the rows it adds.
        path = self.dataPath("partitioned")
        rows = [("2017-09-03", "a", 1000), ("2017-09-03", "b", 3000), ("2018-09-03", "c", 2000)]
        self.writeParquet(rows, ["Date", "Query", "clicks"], path, partitionBy=["Date"])
        indexSourcePaths = [f"{path}/Date=2017-09-03", f"{path}/Date=2018-09-03"]
        df = self.spark.read.format("parquet").option("basePath", path).load(indexSourcePaths)
        self.hyperspace.createIndex(df, IndexConfig("indexName", ["Date"], ["clicks"]))

        def filterQuery():
            df = self.spark.read.format("parquet").load(path)
            return df.filter(df["Date"] > "2000-01-01").select(df["clicks"])

        def onePartitionQuery():
            df = self.spark.read.format("parquet").option("basePath", path).load(indexSourcePaths[1])
            return df.filter(df["Date"] > "2000-01-01").select(df["clicks"])

        for hybridScan in ("false", "true"):
            self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", hybridScan)
            assert len(self.verifyIndexUsage(filterQuery, {"indexName"})) == 3
            # One of the index's partition directories: only its rows of the index.
            assert self.verifyIndexUsage(onePartitionQuery, {"indexName"}) == [(2000,)]

        self.writeParquet(
            [("2019-10-03", "d", 4000)], ["Date", "Query", "clicks"], path, mode="append", partitionBy=["Date"]
        )
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "false")
        assert len(self.verifyIndexUsage(filterQuery, set())) == 4
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
        self.spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", "0.9")
        assert len(self.verifyIndexUsage(filterQuery, {"indexName"})) == 4

        # New rows in an indexed partition: the incremental refresh indexes them with their Date.
        self.writeParquet(
            [("2018-09-03", "e", 5000)], ["Date", "Query", "clicks"], path, mode="append", partitionBy=["Date"]
        )
        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "false")
        self.hyperspace.refreshIndex("indexName", "incremental")

        def indexedPartitions():
            return (
                self.spark.read.format("parquet")
                .option("basePath", path)
                .load(indexSourcePaths)
                .filter("Date = '2018-09-03'")
                .select("clicks", "Date")
            )

        assert sorted(self.verifyIndexUsage(indexedPartitions, {"indexName"})) == [
            (2000, datetime.date(2018, 9, 3)),
            (5000, datetime.date(2018, 9, 3)),
        ]
