"""End-to-end scenarios of the original's E2EHyperspaceRulesTest (filter and join rules)."""

from __future__ import annotations

import pytest

from hyperspace import *  # noqa: F403
from tests.compat.conftest import HyperspaceCompatTestCase

SAMPLE = [
    ("2017-09-03", "810a20a2baa24ff3ad493bfbf064569a", "donde", 2, 1000),
    ("2017-09-03", "fd093f8a05604515957083e70cb3dceb", "facebook", 1, 3000),
    ("2017-09-03", "af3ed6a197a8447cba8bc8ea21fad208", "facebook", 1, 3000),
    ("2017-09-03", "975134eca06c4711a0406d0464cbe7d6", "facebook", 1, 4000),
    ("2018-09-03", "e90a6028e15b4f4593eef557daf5166d", "ibraco", 2, 3000),
    ("2018-09-03", "576ed96b0d5340aa98a47de15c9f87ce", "facebook", 2, 3000),
    ("2018-09-03", "50d690516ca641438166049a6303650c", "ibraco", 2, 1000),
    ("2019-10-03", "380786e6495d4cd8a5dd4cc8d3d12917", "facebook", 2, 3000),
    ("2019-10-03", "ff60e4838b92421eafc3e6ee59a9e9f1", "miperro", 2, 2000),
    ("2019-10-03", "187696fe0a6a40cc9516bc6e47c70bc1", "facebook", 4, 3000),
]
COLUMNS = ["Date", "RGUID", "Query", "imprs", "clicks"]


class TestE2EHyperspaceRules(HyperspaceCompatTestCase):
    def writeSample(self, partitioned: bool) -> str:
        path = self.dataPath("partitioned" if partitioned else "nonPartitioned")
        self.writeParquet(SAMPLE, COLUMNS, path, partitionBy=["Date", "Query"] if partitioned else None, numFiles=3)
        return path

    def test_verify_enable_disable_plug_rules_in_and_out(self) -> None:
        path = self.writeSample(False)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("filterIndex", ["clicks"], ["Query"]))

        def query():
            return self.spark.read.parquet(path).filter("clicks <= 2000").select("Query")

        Hyperspace.enable(self.spark)
        assert "Name: filterIndex" in query()._jdf.queryExecution().optimizedPlan().toString()
        Hyperspace.disable(self.spark)
        assert "Name: filterIndex" not in query()._jdf.queryExecution().optimizedPlan().toString()

    @pytest.mark.parametrize("partitioned", [False, True], ids=["nonPartitioned", "partitioned"])
    @pytest.mark.parametrize("lineage", [False, True], ids=["noLineage", "lineage"])
    def test_filter_query(self, partitioned: bool, lineage: bool) -> None:
        self.spark.conf.set("spark.hyperspace.index.lineage.enabled", str(lineage).lower())
        path = self.writeSample(partitioned)
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("filterIndex", ["clicks"], ["Query"]))

        def query():
            return self.spark.read.parquet(path).filter("clicks <= 2000").select("Query")

        assert self.verifyIndexUsage(query, {"filterIndex"}) == [("donde",), ("ibraco",), ("miperro",)]

    def test_filter_query_when_all_columns_are_selected(self) -> None:
        path = self.writeSample(True)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("filterIndex", ["clicks"], ["Date", "RGUID", "Query", "imprs"]))

        def query():
            return self.spark.read.parquet(path).filter("clicks <= 2000")

        assert len(self.verifyIndexUsage(query, {"filterIndex"})) == 3

    def test_case_insensitive_filter_query(self) -> None:
        path = self.writeSample(False)
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("filterIndex", ["RGUID"], ["Date"]))

        def query():
            return self.spark.read.parquet(path).filter("rguid = '187696fe0a6a40cc9516bc6e47c70bc1'").select("DATE")

        assert self.verifyIndexUsage(query, {"filterIndex"}) == [("2019-10-03",)]

    def test_case_sensitive_filter_query_where_changing_conf_changes_behavior(self) -> None:
        path = self.writeSample(False)
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("filterIndex", ["RGUID"], ["Date"]))
        self.spark.conf.set("spark.sql.caseSensitive", "true")

        def query():
            return self.spark.read.parquet(path).filter("RGUID = '187696fe0a6a40cc9516bc6e47c70bc1'").select("Date")

        assert self.verifyIndexUsage(query, {"filterIndex"}) == [("2019-10-03",)]

    @pytest.mark.parametrize("partitioned", [False, True], ids=["nonPartitioned", "partitioned"])
    def test_join_query(self, partitioned: bool) -> None:
        path = self.writeSample(partitioned)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("leftIndex", ["clicks"], ["Query"]))
        self.hyperspace.createIndex(df, IndexConfig("rightIndex", ["clicks"], ["imprs"]))

        def query():
            left = self.spark.read.parquet(path)
            right = self.spark.read.parquet(path)
            return left.join(right, left.clicks == right.clicks).select(left.Query, right.imprs)

        assert len(self.verifyIndexUsage(query, {"leftIndex", "rightIndex"})) == 2 * 2 + 6 * 6 + 1 * 1 + 1 * 1

    def test_join_query_with_case_insensitive_column_names(self) -> None:
        path = self.writeSample(False)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("leftIndex", ["RGUID"], ["Date"]))
        self.hyperspace.createIndex(df, IndexConfig("rightIndex", ["RGUID"], ["imprs"]))

        def query():
            left = self.spark.read.parquet(path)
            right = self.spark.read.parquet(path)
            return left.join(right, left["rguid"] == right["rguid"]).select(left["date"], right["IMPRS"])

        assert len(self.verifyIndexUsage(query, {"leftIndex", "rightIndex"})) == 10

    def test_join_query_on_catalog_temp_views(self) -> None:
        path = self.writeSample(False)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("leftIndex", ["clicks"], ["Query"]))
        self.hyperspace.createIndex(df, IndexConfig("rightIndex", ["clicks"], ["imprs"]))
        df.createOrReplaceTempView("t1")
        df.createOrReplaceTempView("t2")

        def query():
            return self.spark.sql("SELECT t1.Query, t2.imprs FROM t1, t2 WHERE t1.clicks = t2.clicks")

        assert len(self.verifyIndexUsage(query, {"leftIndex", "rightIndex"})) == 42

    def test_join_query_with_two_child_subqueries_as_filter_queries(self) -> None:
        path = self.writeSample(False)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("leftIndex", ["clicks"], ["Query"]))
        self.hyperspace.createIndex(df, IndexConfig("rightIndex", ["clicks"], ["imprs"]))

        def query():
            left = self.spark.read.parquet(path).filter("clicks >= 2000").select("clicks", "Query")
            right = self.spark.read.parquet(path).filter("clicks <= 4000").select("clicks", "imprs")
            return left.join(right, "clicks")

        assert len(self.verifyIndexUsage(query, {"leftIndex", "rightIndex"})) == 1 + 36 + 1

    def test_deleted_indexes_are_not_applied_and_shown_as_deleted(self) -> None:
        path = self.writeSample(False)
        self.hyperspace.createIndex(self.spark.read.parquet(path), IndexConfig("filterIndex", ["clicks"], ["Query"]))

        def query():
            return self.spark.read.parquet(path).filter("clicks <= 2000").select("Query")

        self.verifyIndexUsage(query, {"filterIndex"})
        self.hyperspace.deleteIndex("filterIndex")
        assert self.hyperspace.indexes().filter("name = 'filterIndex' AND state = 'DELETED'").count() == 1
        self.verifyIndexUsage(query, set())
        self.hyperspace.restoreIndex("filterIndex")
        self.verifyIndexUsage(query, {"filterIndex"})

    def test_join_with_uncovered_column_does_not_use_the_index(self) -> None:
        path = self.writeSample(False)
        df = self.spark.read.parquet(path)
        self.hyperspace.createIndex(df, IndexConfig("leftIndex", ["clicks"], ["Query"]))

        def query():
            left = self.spark.read.parquet(path)
            right = self.spark.read.parquet(path)
            return left.join(right, left.clicks == right.clicks).select(left.RGUID, right.imprs)

        self.verifyIndexUsage(query, set())

    def test_base_path_over_partition_directories(self) -> None:
        # An index over the root; queries over some partition directories read with basePath
        # (however basePath is spelled) read only those directories' rows of the index.
        root = self.dataPath("basePath")
        self.writeParquet([(i, i % 3, f"n{i}") for i in range(30)], ["id", "p", "name"], root, partitionBy=["p"])
        self.hyperspace.createIndex(self.spark.read.parquet(root), IndexConfig("baseIdx", ["id"], ["name", "p"]))

        for basePath in (root, root + "/", "file://" + root):

            def query(basePath=basePath):
                return (
                    self.spark.read.option("basePath", basePath)
                    .parquet(f"{root}/p=1")
                    .filter("id = 4 or id = 5")
                    .select("name", "p")
                )

            assert self.verifyIndexUsage(query, {"baseIdx"}) == [("n4", 1)]

    def test_base_path_over_a_partition_the_index_cannot_tell_apart(self) -> None:
        # Without lineage and without the partition column, the index cannot keep one partition's
        # rows: it is not used, and whyNot says so.
        root = self.dataPath("basePathNoColumn")
        self.writeParquet([(i, i % 3, f"n{i}") for i in range(30)], ["id", "p", "name"], root, partitionBy=["p"])
        self.hyperspace.createIndex(self.spark.read.parquet(root), IndexConfig("baseIdx", ["id"], ["name"]))

        def query():
            return self.spark.read.option("basePath", root).parquet(f"{root}/p=1").filter("id = 4").select("name")

        assert self.verifyIndexUsage(query, set()) == [("n4",)]
        assert "lineage" in self.hyperspace.whyNot(query(), "baseIdx")


class TestNestedColumns(HyperspaceCompatTestCase):
    """Indexes over struct fields named by dotted paths (the original's `__hs_nested` columns)."""

    def writeNested(self, name: str, rows: int) -> str:
        path = self.dataPath(name)
        self.spark.range(rows).selectExpr(
            "id",
            "CONCAT('q', id % 4) AS Query",
            "named_struct('leaf', named_struct('id', id % 10, 'cnt', id * 2), 'flag', id % 2 = 0) AS nested",
        ).repartition(3).write.parquet(path)
        return path

    def test_filter_on_a_nested_column(self) -> None:
        path = self.dataPath("nested")
        self.spark.range(20).selectExpr(
            "id", "named_struct('leaf', named_struct('id', id, 'cnt', id * 2)) AS nested"
        ).write.parquet(path)
        self.hyperspace.createIndex(
            self.spark.read.parquet(path), IndexConfig("nestedIdx", ["nested.leaf.id"], ["nested.leaf.cnt"])
        )

        def query():
            return self.spark.read.parquet(path).filter("nested.leaf.id = 3").select("nested.leaf.cnt")

        assert self.verifyIndexUsage(query, {"nestedIdx"}) == [(6,)]
        row = self.hyperspace.indexes().filter("name = 'nestedIdx'").first()
        assert row["indexedColumns"] == ["nested.leaf.id"]

    def test_join_on_a_nested_column(self) -> None:
        leftPath = self.writeNested("nestedLeft", 40)
        rightPath = self.writeNested("nestedRight", 25)
        self.hyperspace.createIndex(
            self.spark.read.parquet(leftPath), IndexConfig("leftIndex", ["nested.leaf.id"], ["nested.leaf.cnt"])
        )
        self.hyperspace.createIndex(
            self.spark.read.parquet(rightPath), IndexConfig("rightIndex", ["nested.leaf.id"], ["Query"])
        )

        def query():
            left = self.spark.read.parquet(leftPath)
            right = self.spark.read.parquet(rightPath)
            return left.join(right, left["nested.leaf.id"] == right["nested.leaf.id"]).select(
                left["nested.leaf.cnt"], right["Query"]
            )

        rows = self.verifyIndexUsage(query, {"leftIndex", "rightIndex"})
        assert len(rows) == 4 * 25  # each key has 4 rows on the left; the right has 25 rows
