"""The installed package: version, the jar inside it, and version pins kept in step."""

from __future__ import annotations

import zipfile

import pyspark

import hyperspace
from conftest import versions


def test_version_is_the_pinned_one() -> None:
    assert hyperspace.__version__ == versions()["hyperspace"]


def test_package_ships_the_jar_named_for_spark_line_and_scala() -> None:
    jar = hyperspace.jar_path()
    v = versions()
    spark_line = ".".join(v["spark"].split(".")[:2])
    assert jar.name == f"hyperspace-spark{spark_line}_2.13-{v['hyperspace']}.jar"
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert "io/hyperspace/HyperspaceSparkSessionExtension.class" in names
    assert "io/hyperspace/BuildInfo.class" in names


def test_pyspark_is_the_pinned_spark() -> None:
    assert pyspark.__version__ == versions()["spark"]


def test_scala_pin_is_the_one_pyspark_ships() -> None:
    from pathlib import Path

    jars = Path(pyspark.__file__).parent / "jars"
    assert (jars / f"scala-library-{versions()['scala']}.jar").exists()


def test_every_public_name_is_documented() -> None:
    for name in hyperspace.__all__:
        if name == "__version__":
            continue
        obj = getattr(hyperspace, name)
        assert obj.__doc__, f"hyperspace.{name} has no docstring"
