"""The original's python/hyperspace/tests/test_indexmanagement.py, plus its index metadata
columns and config class names."""

from __future__ import annotations

from hyperspace import *  # noqa: F403
from tests.compat.conftest import HyperspaceCompatTestCase


class TestHyperspaceIndexManagement(HyperspaceCompatTestCase):
    def setUpData(self) -> None:
        self.dataFile = self.dataPath("tempFile.parquet")
        self.writeParquet([("Alice", 25, "Seattle"), ("Bob", 27, "Bellevue")], ["name", "age", "city"], self.dataFile)
        self.df = self.spark.read.parquet(self.dataFile)

    def test_index_create(self) -> None:
        self.setUpData()
        idx_config = IndexConfig("idx1", ["name"], ["age"])
        self.hyperspace.createIndex(self.df, idx_config)
        assert self.hyperspace.indexes().filter("""name = "idx1" """).count() == 1

    def test_index_create_with_covering_index_config(self) -> None:
        self.setUpData()
        idx_config = CoveringIndexConfig("cidx1", ["name"], ["age"])
        assert isinstance(idx_config, IndexConfig) and idx_config.indexName == "cidx1"
        self.hyperspace.createIndex(self.df, idx_config)
        assert self.hyperspace.index("cidx1").filter("""kind = "CoveringIndex" """).count() == 1

    def test_index_delete(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx2", ["name"], ["age"]))
        assert self.hyperspace.indexes().filter("""name = "idx2" and state = "ACTIVE" """).count() == 1
        assert self.hyperspace.indexes().filter("""name = "idx2" and state = "DELETED" """).count() == 0
        self.hyperspace.deleteIndex("idx2")
        assert self.hyperspace.indexes().filter("""name = "idx2" and state = "DELETED" """).count() == 1
        assert self.hyperspace.indexes().filter("""name = "idx2" and state = "ACTIVE" """).count() == 0

    def test_index_restore(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx3", ["name"], ["age"]))
        self.hyperspace.deleteIndex("idx3")
        assert self.hyperspace.indexes().filter("""name = "idx3" and state = "DELETED" """).count() == 1
        self.hyperspace.restoreIndex("idx3")
        assert self.hyperspace.indexes().filter("""name = "idx3" and state = "ACTIVE" """).count() == 1
        assert self.hyperspace.indexes().filter("""name = "idx3" and state = "DELETED" """).count() == 0

    def test_index_vacuum(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx4", ["name"], ["age"]))
        self.hyperspace.deleteIndex("idx4")
        assert self.hyperspace.indexes().filter("""name = "idx4" and state = "DELETED" """).count() == 1
        self.hyperspace.vacuumIndex("idx4")
        assert self.hyperspace.indexes().filter("""name = "idx4" """).count() == 0
        # Vacuuming an active index leaves it active.
        self.hyperspace.createIndex(self.df, IndexConfig("idx5", ["name"], ["age"]))
        self.hyperspace.vacuumIndex("idx5")
        assert self.hyperspace.indexes().filter("""name = "idx5" and state = "ACTIVE" """).count() == 1

    def test_index_refresh_incremental(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx1", ["name"], ["age"]))
        self.hyperspace.refreshIndex("idx1")
        self.hyperspace.refreshIndex("idx1", "incremental")
        assert self.hyperspace.indexes().filter("""name = "idx1" and state = "ACTIVE" """).count() == 1

    def test_index_optimize(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx1", ["name"], ["age"]))
        self.hyperspace.optimizeIndex("idx1")
        self.hyperspace.optimizeIndex("idx1", "full")
        assert self.hyperspace.indexes().filter("""name = "idx1" and state = "ACTIVE" """).count() == 1

    def test_index_metadata(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx1", ["name"], ["age"]))
        # The original's indexes() columns, and everything its index(name) reported.
        summary = (
            self.hyperspace.indexes()
            .select("name", "indexedColumns", "indexLocation", "state", "additionalStats")
            .first()
        )
        assert (summary["name"], summary["indexedColumns"], summary["state"]) == ("idx1", ["name"], "ACTIVE")
        assert summary["additionalStats"]["includedColumns"] == "age"
        assert summary["additionalStats"]["numBuckets"] == "5"
        assert summary["additionalStats"]["hasLineage"] == "false"
        assert "name" in summary["additionalStats"]["schema"]

        row = self.hyperspace.index("idx1").first()
        assert row["kind"] == "CoveringIndex" and row["kindAbbr"] == "CI"
        # indexLocation names the data version directory, so its files can be read directly.
        assert row["indexLocation"].endswith("/idx1/v__=0")
        assert self.spark.read.parquet(row["indexLocation"]).count() == 2
        assert row["indexContentPaths"] == [row["indexLocation"]]
        assert row["numIndexFiles"] >= 1 and row["sizeIndexFiles"] == row["sizeInBytes"] > 0
        sourceFiles = self.dataFiles(self.dataFile)
        assert row["numSourceFiles"] == len(sourceFiles)
        assert row["sizeSourceFiles"] == sum(p.stat().st_size for p in sourceFiles)
        assert (row["numAppendedFiles"], row["sizeAppendedFiles"]) == (0, 0)
        assert (row["numDeletedFiles"], row["sizeDeletedFiles"]) == (0, 0)
        # The index directory itself (its log and every version) stays available.
        assert row["indexRoot"].endswith("/idx1") and row["indexLocation"].startswith(row["indexRoot"])
        self.hyperspace.index("idx1").show()

    def test_index_location_follows_the_data_versions(self) -> None:
        self.setUpData()
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        self.hyperspace.createIndex(self.df, IndexConfig("idx1", ["name"], ["age"]))
        self.writeParquet([("Carol", 30, "Redmond")], ["name", "age", "city"], self.dataFile, mode="append")
        self.hyperspace.refreshIndex("idx1", "incremental")
        row = self.hyperspace.index("idx1").first()
        # Files of v__=0 and v__=1 are both used: the location is the index directory above them.
        assert row["indexContentPaths"] == [row["indexRoot"] + "/v__=0", row["indexRoot"] + "/v__=1"]
        assert row["indexLocation"] == row["indexRoot"]
        self.writeParquet([("Dan", 31, "Kirkland")], ["name", "age", "city"], self.dataFile, mode="append")
        self.hyperspace.refreshIndex("idx1", "full")  # a rebuild writes one new version
        row = self.hyperspace.index("idx1").first()
        assert row["indexLocation"] == row["indexRoot"] + "/v__=2"
        assert row["indexContentPaths"] == [row["indexLocation"]]
        assert self.spark.read.parquet(row["indexLocation"]).count() == 4

    def test_quick_refresh_is_reported_in_num_appended_and_deleted_files(self) -> None:
        path = self.dataPath("quick")
        self.writeParquet([(i, f"n{i}") for i in range(20)], ["id", "name"], path, numFiles=2)
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", "true")
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("quickIdx", ["id"], ["name"]))
        deleted = self.dataFiles(path)[0]
        deletedSize = deleted.stat().st_size
        deleted.unlink()
        self.writeParquet([(100, "n100")], ["id", "name"], path, mode="append")
        assert self.hyperspace.index("quickIdx").first()["numAppendedFiles"] == 0
        self.hyperspace.refreshIndex("quickIdx", "quick")
        row = self.hyperspace.index("quickIdx").first()
        assert (row["numAppendedFiles"], row["numDeletedFiles"]) == (1, 1)
        assert row["sizeDeletedFiles"] == deletedSize and row["sizeAppendedFiles"] > 0

    def test_data_skipping_index_config_names(self) -> None:
        config = DataSkippingIndexConfig("dsIdx", MinMaxSketch("age"))
        assert config.indexName == "dsIdx" == config.name
        self.setUpData()
        self.hyperspace.createIndex(self.df, config)
        row = self.hyperspace.index("dsIdx").first()
        assert row["kind"] == "DataSkippingIndex" and row["kindAbbr"] == "DS"
        assert row["additionalStats"] == {"sketches": "MinMax(age)"}
