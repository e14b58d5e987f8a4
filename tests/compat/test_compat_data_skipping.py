"""End-to-end scenarios of the original's DataSkippingIndexIntegrationTest."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from hyperspace import *  # noqa: F403
from tests.compat.conftest import HyperspaceCompatTestCase


class TestDataSkippingIndexIntegration(HyperspaceCompatTestCase):
    def createSourceData(
        self,
        name: str,
        numFiles: int = 10,
        rows: int = 100,
        partitionBy: list[str] | None = None,
        columns: tuple[str, ...] = ("id AS A", "id * 3 AS B", "CONCAT('v', id) AS C"),
    ) -> str:
        """Rows in id order, ``numFiles`` files of consecutive ids (per partition, if partitioned)."""
        path = self.dataPath(name)
        df = self.spark.range(rows).selectExpr(*columns)
        if partitionBy:
            perFile = max(rows // numFiles, 1)
            df = df.withColumn("_f", (F.col("B") / perFile).cast("int")).repartition("_f").drop("_f")
            df.write.partitionBy(*partitionBy).parquet(path)
        else:
            df.repartitionByRange(numFiles, "A").write.parquet(path)
        return path

    def filesRead(self) -> int:
        [stats] = self.hyperspace.lastQuerySkippingStats()
        return stats.files_read

    def test_minmax_index_is_applied_for_equal_to(self) -> None:
        path = self.createSourceData("minmax")
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("A")))

        def query():
            return self.spark.read.parquet(path).filter("A = 1")

        assert self.verifyIndexUsage(query, {"myind"}) == [(1, 3, "v1")]
        Hyperspace.enable(self.spark)
        query().collect()
        assert self.filesRead() == 1

    def test_empty_relation_if_no_files_match(self) -> None:
        path = self.createSourceData("empty")
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("A")))
        assert self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A = 1000"), {"myind"}) == []

    def test_minmax_index_with_an_expression(self) -> None:
        path = self.createSourceData("expr")
        self.hyperspace.createIndex(
            self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("A + B"))
        )

        def query():
            return self.spark.read.parquet(path).filter("A + B = 8")

        assert self.verifyIndexUsage(query, {"myind"}) == [(2, 6, "v2")]

    def test_minmax_index_is_not_applied_if_not_applicable(self) -> None:
        path = self.createSourceData("na")
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("A")))
        self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("B = 3"), set())
        self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A IS NULL"), set())

    def test_bloom_filter_index_for_equal_to_and_in(self) -> None:
        path = self.createSourceData("bloom")
        self.hyperspace.createIndex(
            self.spark.read.parquet(path), DataSkippingIndexConfig("myind", BloomFilterSketch("C", 0.001, 20))
        )
        assert self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("C = 'v42'"), {"myind"}) == [
            (42, 126, "v42")
        ]
        assert (
            len(
                self.verifyIndexUsage(
                    lambda: self.spark.read.parquet(path).filter("C IN ('v1', 'v55', 'v99')"), {"myind"}
                )
            )
            == 3
        )

    @pytest.mark.parametrize("mode", ["incremental", "full"])
    def test_minmax_index_can_be_refreshed(self, mode: str) -> None:
        path = self.createSourceData("refresh")
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("A")))
        self.spark.range(100, 110).selectExpr("id AS A", "id * 3 AS B", "CONCAT('v', id) AS C").coalesce(1).write.mode(
            "append"
        ).parquet(path)
        self.hyperspace.refreshIndex("myind", mode)
        assert self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A = 105"), {"myind"}) == [
            (105, 315, "v105")
        ]
        Hyperspace.enable(self.spark)
        self.spark.read.parquet(path).filter("A = 105").collect()
        assert self.filesRead() == 1

    def test_minmax_index_can_be_optimized(self) -> None:
        path = self.createSourceData("optimize")
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("A")))
        self.spark.range(100, 110).selectExpr("id AS A", "id * 3 AS B", "CONCAT('v', id) AS C").coalesce(1).write.mode(
            "append"
        ).parquet(path)
        self.hyperspace.refreshIndex("myind", "incremental")
        self.hyperspace.optimizeIndex("myind")
        assert (
            len(self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A < 3 OR A > 107"), {"myind"})) == 5
        )

    def test_data_skipping_index_is_applied_if_covering_index_is_not_applicable(self) -> None:
        path = self.createSourceData("both")
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("ci", ["A"], ["B"]))
        self.hyperspace.createIndex(df, DataSkippingIndexConfig("ds", MinMaxSketch("A")))
        # The covering index does not cover C: only the data skipping index applies.
        assert self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A = 1"), {"ds"}) == [(1, 3, "v1")]

    def test_data_skipping_with_partitioned_data(self) -> None:
        path = self.createSourceData(
            "partitioned", rows=1000, partitionBy=["A"], columns=("CAST(id / 10 AS INT) AS A", "id AS B")
        )
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("B")))
        assert (
            len(self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A = 1 OR B = 100"), {"myind"}))
            == 11
        )

    def test_data_skipping_with_partitioned_data_and_a_column_comparison(self) -> None:
        # Four files per partition A (A = 0, 200, ...), each of 50 consecutive B values; A = B can
        # hold only in the first file of each partition.
        path = self.dataPath("aEqualsB")
        df = self.spark.range(1000).selectExpr("CAST(id / 200 AS INT) * 200 AS A", "id AS B")
        df.withColumn("_f", (F.col("B") / 50).cast("int")).repartition("_f").drop("_f").write.partitionBy("A").parquet(
            path
        )
        self.hyperspace.createIndex(self.spark.read.parquet(path), DataSkippingIndexConfig("myind", MinMaxSketch("B")))
        assert len(self.verifyIndexUsage(lambda: self.spark.read.parquet(path).filter("A = B"), {"myind"})) == 5
        Hyperspace.enable(self.spark)
        self.spark.read.parquet(path).filter("A = B").collect()
        assert self.filesRead() == 5
