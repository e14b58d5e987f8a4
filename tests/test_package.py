"""The installed package: version, the jars inside it (one per Spark line), and version pins kept
in step."""

from __future__ import annotations

import re
import zipfile
from importlib import metadata
from pathlib import Path

import pyspark
import pytest
from packaging.requirements import Requirement

import hyperspace
from conftest import run_python, versions
from hyperspace import HyperspaceJarNotFoundError, _jvm, _ownership


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def test_version_is_the_pinned_one() -> None:
    assert hyperspace.__version__ == versions()["hyperspace"]


def test_no_other_distribution_installed_the_hyperspace_module_here() -> None:
    """Where the package is installed (a wheel's site-packages, or python/ for the editable
    install) no other distribution has files under `hyperspace/` (tests/test_install_name.py
    shows the warning when one has)."""
    site = Path(hyperspace.__file__).resolve().parent.parent
    assert _ownership.other_distributions(site) == []


def test_package_ships_the_jar_named_for_spark_line_and_scala() -> None:
    jar = hyperspace.jar_path()
    v = versions()
    assert jar.name == f"hyperspace-spark{_line(v['spark'])}_2.13-{v['hyperspace']}.jar"
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert "io/hyperspace/HyperspaceSparkSessionExtension.class" in names
    assert "io/hyperspace/BuildInfo.class" in names


def test_the_package_knows_the_pinned_spark_lines() -> None:
    lines = versions()["spark.lines"].split()
    assert _jvm.SPARK_LINES == tuple(lines)
    assert versions()["spark.default"] in lines
    for line in lines:
        assert _line(versions()[f"spark.{line}"]) == line
        assert versions()[f"scala.{line}"].startswith("2.13."), line
        assert versions()[f"delta.{line}"], line
        assert versions().get(f"spark.source.{line}", versions()["spark.source"]) in ("maven", "pyspark"), line


def test_every_line_has_its_shims_and_every_shim_directory_a_line() -> None:
    """build.sbt compiles scala-spark-4.x (shared), the line's own directory, and each
    scala-spark-<first>-<last> whose range of supported lines includes it; a line needs its own
    directory or a range (4.2 has only ranges)."""
    main = Path(__file__).resolve().parent.parent / "scala" / "src" / "main"
    lines = versions()["spark.lines"].split()
    dirs = {d.name for d in main.glob("scala-spark-*")}
    ranges = {d for d in dirs if re.fullmatch(r"scala-spark-\d+\.\d+-\d+\.\d+", d)}
    own = dirs - ranges - {"scala-spark-4.x"}
    assert "scala-spark-4.x" in dirs
    assert own <= {f"scala-spark-{line}" for line in lines}, own
    covered = set()
    for d in ranges:
        first, last = d.removeprefix("scala-spark-").split("-")
        assert first in lines and last in lines and lines.index(first) < lines.index(last), d
        covered |= set(lines[lines.index(first) : lines.index(last) + 1])
    for line in lines:
        assert f"scala-spark-{line}" in own or line in covered, line


def test_the_jar_is_picked_by_the_installed_pyspark_line() -> None:
    assert hyperspace.jar_path() == hyperspace.jar_path(pyspark.__version__)
    assert hyperspace.jar_path().name.startswith(f"hyperspace-spark{_line(pyspark.__version__)}_")


@pytest.mark.parametrize("version", ["3.5.1", "4.9.0", "5.0.0"])
def test_an_unsupported_spark_line_names_the_supported_ones(version: str) -> None:
    with pytest.raises(HyperspaceJarNotFoundError) as e:
        hyperspace.jar_path(version)
    message = str(e.value)
    assert f"Spark {version} (line {_line(version)}) is not supported" in message
    assert f"Spark lines {', '.join(_jvm.SPARK_LINES)}" in message


def test_a_supported_line_without_its_jar_says_how_to_build_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_jvm, "JARS_DIR", tmp_path)
    other = next(line for line in _jvm.SPARK_LINES if line != _line(pyspark.__version__))
    (tmp_path / f"hyperspace-spark{other}_2.13-0.1.0.jar").write_bytes(b"")
    with pytest.raises(HyperspaceJarNotFoundError, match=r"jar for Spark 4\.\d is missing .* `make jar SPARK="):
        hyperspace.jar_path()
    assert hyperspace.jar_path(_jvm.SPARK_PATCHES[other][1]) == tmp_path / f"hyperspace-spark{other}_2.13-0.1.0.jar"


def test_the_package_knows_the_checked_patches_of_each_line() -> None:
    """spark.patches.<line>: the patches the line's jar is checked against (make check-spark-patches),
    oldest first, the compiled-against one among those it accepts."""
    v = versions()
    assert set(_jvm.SPARK_PATCHES) == set(_jvm.SPARK_LINES)
    for line in _jvm.SPARK_LINES:
        patches = v[f"spark.patches.{line}"].split()
        assert _jvm.SPARK_PATCHES[line] == (patches[0], patches[-1]), line
        assert all(_line(p) == line for p in patches), patches
        numbers = [_jvm._patch(p) for p in patches]
        assert numbers == sorted(numbers) and numbers[0] <= _jvm._patch(v[f"spark.{line}"]) <= numbers[-1], line


@pytest.mark.parametrize("line", _jvm.SPARK_LINES)
def test_a_patch_the_line_is_not_checked_against_is_refused_naming_the_supported_ones(
    line: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_jvm, "JARS_DIR", tmp_path)
    jar = tmp_path / f"hyperspace-spark{line}_2.13-0.1.0.jar"
    jar.write_bytes(b"")
    oldest, newest = _jvm.SPARK_PATCHES[line]
    for patch in range(_jvm._patch(oldest), _jvm._patch(newest) + 1):
        assert hyperspace.jar_path(f"{line}.{patch}") == jar
    outside = [f"{line}.{_jvm._patch(newest) + 1}"] + (
        [f"{line}.{_jvm._patch(oldest) - 1}"] if _jvm._patch(oldest) else []
    )
    for version in outside:
        with pytest.raises(HyperspaceJarNotFoundError) as e:
            hyperspace.jar_path(version)
        assert str(e.value).startswith(
            f"Spark {version} is not a patch this hyperspace-spark supports: its jar for Spark {line} runs on "
            f"Spark {oldest} to {newest} (checked against {oldest} and {newest})."
        ), str(e.value)


def test_the_pyspark_requirement_covers_every_supported_line_and_no_other() -> None:
    (req,) = [Requirement(r) for r in metadata.requires("hyperspace-spark") or [] if Requirement(r).name == "pyspark"]
    v = versions()
    for line in v["spark.lines"].split():
        for patch in v[f"spark.patches.{line}"].split():
            assert req.specifier.contains(patch), (req, line, patch)
    major, minor = v["spark.lines"].split()[-1].split(".")
    assert not req.specifier.contains(f"{major}.{int(minor) + 1}.0")
    assert not req.specifier.contains("3.5.6")


def test_pyspark_is_the_pinned_spark() -> None:
    assert pyspark.__version__ == versions()["spark"]


def test_scala_pin_is_the_one_pyspark_ships() -> None:
    jars = Path(pyspark.__file__).parent / "jars"
    assert (jars / f"scala-library-{versions()['scala']}.jar").exists()


@pytest.mark.slow
def test_a_jar_of_another_line_fails_the_session_start_naming_the_right_jar() -> None:
    """What spark-submit --jars with the wrong line's jar does: a clear error when the session
    starts (the extension checks), not a NoSuchMethodError in the middle of a query."""
    mine = _line(pyspark.__version__)
    others = sorted(_jvm.JARS_DIR.glob("hyperspace-spark*_2.13-*.jar"))
    wrong = next((j for j in others if not j.name.startswith(f"hyperspace-spark{mine}_")), None)
    if wrong is None:
        pytest.skip(f"no jar of another Spark line in {_jvm.JARS_DIR} (`make jars` builds every line's)")
    result = run_python(
        f"""
from pyspark.sql import SparkSession
try:
    (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
        .config("spark.jars", {str(wrong)!r})
        .config("spark.sql.extensions", "io.hyperspace.HyperspaceSparkSessionExtension")
        .getOrCreate())
    print("STARTED")
except Exception as e:
    print("FAILED", type(e).__name__, e)
"""
    )
    assert "STARTED" not in result.stdout, result.stdout + result.stderr[-2000:]
    wrong_line = wrong.name[len("hyperspace-spark") :].split("_")[0]
    assert f"({wrong.name}) was built for Spark {versions()[f'spark.{wrong_line}']}" in result.stdout, (
        result.stdout + result.stderr[-3000:]
    )
    assert f"put hyperspace-spark{mine}_2.13-{versions()['hyperspace']}.jar on the class path" in result.stdout


def test_every_public_name_is_documented() -> None:
    for name in hyperspace.__all__:
        if name == "__version__":
            continue
        obj = getattr(hyperspace, name)
        assert obj.__doc__, f"hyperspace.{name} has no docstring"
