"""Loading the jar, the per-session switches, the facade and error translation."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

import hyperspace
from conftest import run_python, versions
from hyperspace import (
    Hyperspace,
    HyperspaceConfig,
    HyperspaceException,
    HyperspaceJarNotFoundError,
    HyperspaceNotLoadedError,
    _jvm,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
    is_hyperspace_enabled,
)

EXTENSION = "io.hyperspace.HyperspaceSparkSessionExtension"


def _fresh_builder() -> SparkSession.Builder:
    # A new Builder object: SparkSession.builder is shared process-wide.
    return SparkSession.Builder()


def test_configure_sets_jar_and_extension_on_an_empty_builder() -> None:
    builder = configure_spark_with_hyperspace(_fresh_builder())
    assert builder._options["spark.jars"] == str(hyperspace.jar_path())
    assert builder._options["spark.sql.extensions"] == EXTENSION


def test_configure_keeps_the_users_jars_and_extensions() -> None:
    builder = (
        _fresh_builder()
        .config("spark.jars", "/opt/a.jar, /opt/b.jar")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    )
    configure_spark_with_hyperspace(builder)
    configure_spark_with_hyperspace(builder)  # idempotent
    assert builder._options["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{hyperspace.jar_path()}"
    assert builder._options["spark.sql.extensions"] == f"io.delta.sql.DeltaSparkSessionExtension,{EXTENSION}"


def test_configure_replaces_another_hyperspace_jar() -> None:
    builder = _fresh_builder().config("spark.jars", "/old/hyperspace-spark4.0_2.13-0.0.1.jar")
    configure_spark_with_hyperspace(builder)
    assert builder._options["spark.jars"] == str(hyperspace.jar_path())


def test_missing_jar_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_jvm, "JARS_DIR", tmp_path)
    with pytest.raises(HyperspaceJarNotFoundError, match="make build"):
        configure_spark_with_hyperspace(_fresh_builder())


def test_enable_and_disable_are_per_session(spark: SparkSession) -> None:
    other = spark.newSession()
    disable_hyperspace(spark)
    disable_hyperspace(other)
    assert not is_hyperspace_enabled(spark)

    assert enable_hyperspace(spark) is spark
    assert is_hyperspace_enabled(spark)
    assert not is_hyperspace_enabled(other)

    enable_hyperspace(other)
    disable_hyperspace(spark)
    assert not is_hyperspace_enabled(spark)
    assert is_hyperspace_enabled(other)


def test_camel_case_aliases_are_the_same_functions() -> None:
    assert hyperspace.enableHyperspace is enable_hyperspace
    assert hyperspace.disableHyperspace is disable_hyperspace
    assert hyperspace.isHyperspaceEnabled is is_hyperspace_enabled
    assert Hyperspace.isEnabled is Hyperspace.is_enabled


def test_facade_reaches_the_jvm(spark: SparkSession) -> None:
    hs = Hyperspace(spark)
    assert hs.version == versions()["hyperspace"]
    assert hs.spark_version == spark.version == versions()["spark"]
    assert hs.system_path.endswith("/warehouse/indexes")
    assert hs.enable() is hs and hs.is_enabled()
    assert not hs.disable().is_enabled()
    assert "Hyperspace(version=" in repr(hs)


def test_system_path_follows_the_setting(spark: SparkSession, tmp_path: Path) -> None:
    with HyperspaceConfig(spark).override(system_path=str(tmp_path)):
        assert Hyperspace(spark).system_path == tmp_path.as_uri().replace("file:///", "file:/")
    # A relative setting is shown as every operation resolves it: absolute, in the JVM's working
    # directory, whatever directory Python is in.
    jvm_dir = Path(spark.sparkContext._jvm.java.lang.System.getProperty("user.dir"))
    with HyperspaceConfig(spark).override(system_path="relative-indexes"):
        assert Hyperspace(spark).system_path == (jvm_dir / "relative-indexes").as_uri().replace("file:///", "file:/")


def test_bucket_id_function_is_available_to_sql(spark: SparkSession) -> None:
    rows = spark.sql("SELECT hyperspace_bucket_id(8, id) AS b, pmod(hash(id), 8) AS expected FROM range(100)").collect()
    assert all(r.b == r.expected for r in rows)
    assert len({r.b for r in rows}) == 8


def test_jvm_errors_become_python_hyperspace_exceptions(spark: SparkSession) -> None:
    spark.conf.set("spark.hyperspace.apply.enabled", "maybe")
    try:
        with pytest.raises(HyperspaceException) as info:
            is_hyperspace_enabled(spark)
    finally:
        spark.conf.set("spark.hyperspace.apply.enabled", "false")
    error = info.value
    assert str(error) == (
        "Invalid value 'maybe' for spark.hyperspace.apply.enabled: expected a boolean (true or false)."
    )
    assert error.java_class == "io.hyperspace.HyperspaceException"
    assert not isinstance(error, Py4JJavaError)
    assert error.__suppress_context__ and error.__cause__ is None


def test_non_hyperspace_jvm_errors_pass_through(spark: SparkSession) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND") as info:
        with _jvm.translated_errors():
            spark._jsparkSession.sql("SELECT * FROM no_such_table_anywhere")
    assert not isinstance(info.value, HyperspaceException)


def test_a_missing_class_is_reported_as_jar_not_loaded(spark: SparkSession) -> None:
    with pytest.raises(HyperspaceNotLoadedError, match="configure_spark_with_hyperspace"):
        _jvm.java_class(spark, "NoSuchClass")


@pytest.mark.slow
def test_session_without_the_jar_gets_instructions() -> None:
    code = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        from hyperspace import Hyperspace, HyperspaceNotLoadedError
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            Hyperspace(spark)
        except HyperspaceNotLoadedError as e:
            print("MESSAGE:", e)
        else:
            print("NO ERROR")
        spark.stop()
        """
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MESSAGE: The Hyperspace classes are not loaded" in result.stdout
    assert "spark-submit --jars" in result.stdout and str(hyperspace.jar_path()) in result.stdout


@pytest.mark.slow
def test_session_with_the_jar_but_without_the_extension_gets_instructions() -> None:
    code = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        import hyperspace
        from hyperspace import Hyperspace, HyperspaceExtensionNotInstalledException, enable_hyperspace
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars", str(hyperspace.jar_path())).getOrCreate())
        print("VERSION:", Hyperspace(spark).version)
        try:
            enable_hyperspace(spark)
        except HyperspaceExtensionNotInstalledException as e:
            print("MESSAGE:", e)
        print("ENABLED:", hyperspace.is_hyperspace_enabled(spark))
        hyperspace.attach(spark)
        print("ATTACHED:", hyperspace.is_hyperspace_enabled(spark))
        spark.stop()
        """
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"VERSION: {versions()['hyperspace']}" in result.stdout
    assert f"spark.sql.extensions={EXTENSION}" in result.stdout
    assert "hyperspace.attach(spark)" in result.stdout or "Hyperspace.attach(spark)" in result.stdout
    assert "ENABLED: False" in result.stdout
    # attach installs it into the running session, the jar being on the class path already.
    assert "ATTACHED: True" in result.stdout
