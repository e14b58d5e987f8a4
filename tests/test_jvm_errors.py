"""Hyperspace's JVM exceptions reach Python as ``hyperspace.exceptions`` classes wherever they are
raised — in pyspark's own calls too (SQL, DataFrame operations, actions) — while Spark's errors stay
pyspark's."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions import captured
from pyspark.sql import SparkSession

from hyperspace import HyperspaceConflictException, HyperspaceException, _jvm


def test_sql_calling_a_hyperspace_function_wrongly_raises_hyperspace_exception(spark: SparkSession) -> None:
    with pytest.raises(HyperspaceException, match="bucket count of hyperspace_bucket_id must be positive") as info:
        spark.sql("SELECT hyperspace_bucket_id(0, id) AS b FROM range(3)").collect()
    assert not isinstance(info.value, Py4JJavaError)
    assert info.value.java_class == "io.hyperspace.HyperspaceException"
    assert info.value.__suppress_context__


def test_dataframe_operations_raise_hyperspace_exception(spark: SparkSession) -> None:
    with pytest.raises(HyperspaceException, match="must be an integer literal bucket count"):
        spark.range(3).selectExpr("hyperspace_bucket_id(id, id)").collect()


def test_a_hyperspace_error_wrapped_by_spark_keeps_its_class(spark: SparkSession) -> None:
    """A task's error reaches the driver wrapped (SparkException: Job aborted ... caused by ...);
    the Hyperspace exception in the cause chain is the one raised, with its own class and message.
    The JVM throws here for real (a failed future re-throws its cause chain on join)."""
    jvm = spark.sparkContext._jvm
    conflict = jvm.io.hyperspace.HyperspaceConflictException("Index 'x' is being refreshed.")
    job_failure = jvm.org.apache.spark.SparkException("Job aborted due to stage failure", conflict)
    with pytest.raises(HyperspaceConflictException, match="Index 'x' is being refreshed.") as info:
        jvm.java.util.concurrent.CompletableFuture.failedFuture(job_failure).join()
    assert info.value.java_class == "io.hyperspace.HyperspaceConflictException"


def test_spark_errors_stay_pyspark_errors(spark: SparkSession) -> None:
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND") as info:
        spark.sql("SELECT * FROM no_such_table_for_hyperspace").collect()
    assert not isinstance(info.value, HyperspaceException)


def test_spark_errors_pyspark_does_not_know_stay_raw(spark: SparkSession) -> None:
    """Outside Hyperspace's own API, errors pyspark does not convert keep pyspark's behaviour."""
    jvm = spark.sparkContext._jvm
    with pytest.raises(Py4JJavaError):
        jvm.java.util.concurrent.CompletableFuture.failedFuture(jvm.java.io.IOException("disk")).join()


def test_installing_twice_does_not_stack_the_conversion(spark: SparkSession) -> None:
    before = captured.convert_exception
    _jvm.install_error_translation()
    _jvm.install_error_translation()
    assert captured.convert_exception is before
