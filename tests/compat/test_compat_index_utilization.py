"""The original's python/hyperspace/tests/test_indexutilization.py, its quick-start guide and
its "Hitchhiker's Guide to Hyperspace" notebook, step by step."""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from hyperspace import *  # noqa: F403
from tests.compat.conftest import HyperspaceCompatTestCase


class TestHyperspaceIndexUtilization(HyperspaceCompatTestCase):
    def setUpData(self) -> None:
        self.dataFile = self.dataPath("tempFile.parquet")
        self.writeParquet(
            [("Alice", 25, "Seattle", "Dept1"), ("Bob", 27, "Bellevue", "Dept2")],
            ["name", "age", "city", "department"],
            self.dataFile,
        )
        self.df = self.spark.read.parquet(self.dataFile)

    def test_hyperspace_enable_disable(self) -> None:
        assert not Hyperspace.isEnabled(self.spark), "Hyperspace must be disabled by default."
        assert Hyperspace.enable(self.spark) is self.spark
        assert Hyperspace.isEnabled(self.spark), "Hyperspace must be enabled after Hyperspace enable."
        assert Hyperspace.disable(self.spark) is self.spark
        assert not Hyperspace.isEnabled(self.spark), "Hyperspace must be disabled after Hyperspace disable."

    def test_instance_switches_keep_working(self) -> None:
        assert self.hyperspace.enable() is self.hyperspace
        assert self.hyperspace.isEnabled() and self.hyperspace.is_enabled()
        assert Hyperspace.is_enabled(self.spark)
        assert self.hyperspace.disable() is self.hyperspace
        assert not self.hyperspace.isEnabled()
        # The original's static methods were reachable through an instance too.
        assert self.hyperspace.enable(self.spark) is self.spark and self.hyperspace.isEnabled(self.spark)

    def test_hyperspace_explain(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx1", ["age"], ["name", "department"]))
        self.df.createOrReplaceTempView("employees")
        filter_query = self.spark.sql(""" SELECT age, name, department FROM employees
                                          WHERE employees.age > 26 """)
        received: list[str] = []

        def verify_result(input: str) -> None:
            jvmExplainString = self.spark._jvm.io.hyperspace.Hyperspace.apply(self.spark._jsparkSession).explain(
                filter_query._jdf, False
            )
            assert input == jvmExplainString
            received.append(input)

        self.hyperspace.explain(filter_query, False, verify_result)
        assert len(received) == 1 and "idx1" in received[0]
        assert capsys.readouterr().out == "", "a redirected explain prints nothing"
        # The keyword forms.
        self.hyperspace.explain(filter_query, verbose=True, redirectFunc=received.append)
        assert "Physical Operator" in received[1]
        assert self.hyperspace.explain(filter_query, display=False) == received[0]
        assert capsys.readouterr().out == ""

    def test_explain_highlight_tags(self) -> None:
        self.setUpData()
        self.hyperspace.createIndex(self.df, IndexConfig("idx1", ["age"], ["name"]))
        query = self.df.filter("age = 25").select("name")
        self.spark.conf.set("spark.hyperspace.explain.displayMode.highlight.beginTag", "[[")
        self.spark.conf.set("spark.hyperspace.explain.displayMode.highlight.endTag", "]]")
        out: list[str] = []
        self.hyperspace.explain(query, False, out.append)
        marked = [line for line in out[0].splitlines() if line.startswith("[[")]
        assert marked and all(line.endswith("]]") for line in marked)
        assert any("Name: idx1" in line for line in marked)
        assert "<----" not in out[0]
        # Only one tag set: the display mode's own markers, as in the original.
        self.spark.conf.unset("spark.hyperspace.explain.displayMode.highlight.endTag")
        self.hyperspace.explain(query, False, out.append)
        assert "<----" in out[1] and "[[" not in out[1]
        # html mode with user tags: the tags go in as given, the plan text is escaped.
        self.spark.conf.set("spark.hyperspace.explain.displayMode", "html")
        self.spark.conf.set("spark.hyperspace.explain.displayMode.highlight.beginTag", "<mark>")
        self.spark.conf.set("spark.hyperspace.explain.displayMode.highlight.endTag", "</mark>")
        self.hyperspace.explain(query, False, out.append)
        assert "<mark>" in out[2] and "<b>" not in out[2]

    def test_legacy_num_buckets_key(self) -> None:
        self.setUpData()
        self.spark.conf.unset("spark.hyperspace.index.numBuckets")
        self.spark.conf.set("spark.hyperspace.index.num.buckets", "3")
        assert HyperspaceConfig(self.spark).num_buckets == 3
        assert HyperspaceConfig(self.spark).get("spark.hyperspace.index.num.buckets") == "3"
        self.hyperspace.createIndex(self.df, IndexConfig("legacy", ["age"], ["name"]))
        assert self.hyperspace.index("legacy").first()["numBuckets"] == 3
        # The current key wins when both are set.
        self.spark.conf.set("spark.hyperspace.index.numBuckets", "7")
        self.hyperspace.createIndex(self.df, IndexConfig("current", ["age"], ["name"]))
        assert self.hyperspace.index("current").first()["numBuckets"] == 7
        # A bad value under the old name is reported under that name.
        self.spark.conf.unset("spark.hyperspace.index.numBuckets")
        self.spark.conf.set("spark.hyperspace.index.num.buckets", "0")
        with pytest.raises(HyperspaceException, match="spark.hyperspace.index.num.buckets"):
            self.hyperspace.createIndex(self.df, IndexConfig("bad", ["age"], ["name"]))

    def test_quick_start_guide(self) -> None:
        table = self.dataPath("table")
        sample_data = [(1, "name1"), (2, "name2")]
        self.spark.createDataFrame(sample_data, ["id", "name"]).write.mode("overwrite").parquet(table)
        df = self.spark.read.parquet(table)
        hs = Hyperspace(self.spark)
        hs.createIndex(df, IndexConfig("index", ["id"], ["name"]))
        indexes = hs.indexes()
        indexes.show()
        assert [r["name"] for r in indexes.collect()] == ["index"]

        query = df.filter("""id = 1""").select("""name""")
        text: list[str] = []
        hs.explain(query, True, text.append)
        assert "index" in text[0].split("Indexes used:")[1]
        Hyperspace.enable(self.spark)
        query.show()
        assert self.verifyIndexUsage(lambda: df.filter("""id = 1""").select("""name"""), {"index"}) == [("name1",)]

        hs.refreshIndex("index")
        hs.deleteIndex("index")
        assert self.verifyIndexUsage(lambda: df.filter("""id = 1""").select("""name"""), set()) == [("name1",)]
        hs.restoreIndex("index")
        hs.deleteIndex("index")
        hs.vacuumIndex("index")
        assert hs.indexes().count() == 0


class TestHitchhikersGuide(HyperspaceCompatTestCase):
    """The notebook's cells, in order."""

    dept_schema = StructType(
        [
            StructField("deptId", IntegerType(), True),
            StructField("deptName", StringType(), True),
            StructField("location", StringType(), True),
        ]
    )
    emp_schema = StructType(
        [
            StructField("empId", IntegerType(), True),
            StructField("empName", StringType(), True),
            StructField("deptId", IntegerType(), True),
        ]
    )

    def test_indexes_for_filters_joins_sql_and_refresh(self) -> None:
        departments = [
            (10, "Accounting", "New York"),
            (20, "Research", "Dallas"),
            (30, "Sales", "Chicago"),
            (40, "Operations", "Boston"),
        ]
        employees = [
            (7369, "SMITH", 20),
            (7499, "ALLEN", 30),
            (7521, "WARD", 30),
            (7566, "JONES", 20),
            (7698, "BLAKE", 30),
        ]
        emp_Location = self.dataPath("employees.parquet")
        dept_Location = self.dataPath("departments.parquet")
        self.spark.createDataFrame(employees, self.emp_schema).write.mode("overwrite").parquet(emp_Location)
        self.spark.createDataFrame(departments, self.dept_schema).write.mode("overwrite").parquet(dept_Location)
        emp_DF = self.spark.read.parquet(emp_Location)
        dept_DF = self.spark.read.parquet(dept_Location)

        hyperspace = Hyperspace(self.spark)
        hyperspace.createIndex(emp_DF, IndexConfig("empIndex1", ["deptId"], ["empName"]))
        hyperspace.createIndex(dept_DF, IndexConfig("deptIndex1", ["deptId"], ["deptName"]))
        hyperspace.createIndex(dept_DF, IndexConfig("deptIndex2", ["location"], ["deptName"]))
        hyperspace.indexes().show()
        hyperspace.deleteIndex("deptIndex2")
        hyperspace.deleteIndex("deptIndex1")
        hyperspace.restoreIndex("deptIndex1")
        hyperspace.vacuumIndex("deptIndex2")
        assert sorted(r["name"] for r in hyperspace.indexes().collect()) == ["deptIndex1", "empIndex1"]

        Hyperspace.enable(self.spark)
        Hyperspace.disable(self.spark)
        Hyperspace.enable(self.spark)

        def eqFilter():
            return dept_DF.filter("""deptId = 20""").select("""deptName""")

        assert self.verifyIndexUsage(eqFilter, {"deptIndex1"}) == [("Research",)]
        hyperspace.explain(eqFilter(), True, lambda s: None)

        def rangeFilter():
            return dept_DF.filter("""deptId > 20""").select("deptName")

        assert self.verifyIndexUsage(rangeFilter, {"deptIndex1"}) == [("Operations",), ("Sales",)]

        def eqJoin():
            return emp_DF.join(dept_DF, emp_DF.deptId == dept_DF.deptId).select(emp_DF.empName, dept_DF.deptName)

        assert len(self.verifyIndexUsage(eqJoin, {"empIndex1", "deptIndex1"})) == 5

        emp_DF.createOrReplaceTempView("EMP")
        dept_DF.createOrReplaceTempView("DEPT")

        def joinQuery():
            return self.spark.sql("SELECT EMP.empName, DEPT.deptName FROM EMP, DEPT WHERE EMP.deptId = DEPT.deptId")

        assert len(self.verifyIndexUsage(joinQuery, {"empIndex1", "deptIndex1"})) == 5

        # Refresh after appending departments.
        extra_Departments = [(50, "Inovation", "Seattle"), (60, "Human Resources", "San Francisco")]
        self.spark.createDataFrame(extra_Departments, self.dept_schema).write.mode("Append").parquet(dept_Location)
        dept_DFrame_Updated = self.spark.read.parquet(dept_Location)

        def newRangeFilter():
            return dept_DFrame_Updated.filter("deptId > 20").select("deptName")

        self.verifyIndexUsage(newRangeFilter, set())  # stale: not used
        hyperspace.refreshIndex("deptIndex1")
        assert len(self.verifyIndexUsage(newRangeFilter, {"deptIndex1"})) == 4

        hyperspace.deleteIndex("empIndex1")
        hyperspace.deleteIndex("deptIndex1")
        hyperspace.vacuumIndex("empIndex1")
        hyperspace.vacuumIndex("deptIndex1")
        assert hyperspace.indexes().count() == 0

    def test_hybrid_scan_incremental_refresh_and_optimize(self) -> None:
        testdata = [
            ("orange", 3, "2020-10-01"),
            ("banana", 1, "2020-10-01"),
            ("carrot", 5, "2020-10-02"),
            ("beetroot", 12, "2020-10-02"),
            ("orange", 2, "2020-10-03"),
            ("banana", 11, "2020-10-03"),
            ("carrot", 3, "2020-10-03"),
            ("beetroot", 2, "2020-10-04"),
            ("cucumber", 7, "2020-10-05"),
            ("pepper", 20, "2020-10-06"),
        ]
        testdata_location = self.dataPath("productTable")
        testdata_schema = StructType(
            [
                StructField("name", StringType(), True),
                StructField("qty", IntegerType(), True),
                StructField("date", StringType(), True),
            ]
        )
        self.spark.createDataFrame(testdata, testdata_schema).write.mode("overwrite").parquet(testdata_location)
        test_df = self.spark.read.parquet(testdata_location)
        hyperspace = Hyperspace(self.spark)
        hyperspace.createIndex(test_df, IndexConfig("productIndex2", ["name"], ["date", "qty"]))

        def query():
            test_df_with_append = self.spark.read.parquet(testdata_location)
            filter1 = test_df_with_append.filter("name = 'banana'")
            filter2 = test_df_with_append.filter("qty > 10")
            return filter1.join(filter2, "name")

        assert len(self.verifyIndexUsage(query, {"productIndex2"})) == 2

        append_data = [("orange", 13, "2020-11-01"), ("banana", 5, "2020-11-01")]
        self.spark.createDataFrame(append_data, testdata_schema).write.mode("append").parquet(testdata_location)

        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "false")
        assert len(self.verifyIndexUsage(query, set())) == 3

        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "true")
        self.spark.conf.set("spark.hyperspace.index.hybridscan.maxAppendedRatio", "0.9")
        assert len(self.verifyIndexUsage(query, {"productIndex2"})) == 3
        Hyperspace.enable(self.spark)
        plan = query()._jdf.queryExecution().executedPlan().toString()
        Hyperspace.disable(self.spark)
        assert "BucketUnion" in plan, "appended files are merged into the index's buckets"

        self.spark.conf.set("spark.hyperspace.index.hybridscan.enabled", "false")
        hyperspace.refreshIndex("productIndex2", "incremental")
        assert len(self.verifyIndexUsage(query, {"productIndex2"})) == 3

        self.spark.createDataFrame(append_data, testdata_schema).write.mode("append").parquet(testdata_location)
        hyperspace.refreshIndex("productIndex2", "incremental")
        assert len(self.verifyIndexUsage(query, {"productIndex2"})) == 4
        hyperspace.optimizeIndex("productIndex2")
        assert len(self.verifyIndexUsage(query, {"productIndex2"})) == 4
        hyperspace.optimizeIndex("productIndex2", "full")
        assert len(self.verifyIndexUsage(query, {"productIndex2"})) == 4
