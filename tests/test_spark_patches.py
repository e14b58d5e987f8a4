"""The static check that a line's jar links on every checked patch of its line (tools/spark_patches.py,
`make check-spark-patches`): first on small jars javac builds here (a library in two "patches" and
a user of it), so each kind of break is seen reported; then on the installed line's real jar."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pyspark
import pytest

import hyperspace
from conftest import versions

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("spark_patches", REPO / "tools" / "spark_patches.py")
assert _spec and _spec.loader
spark_patches = importlib.util.module_from_spec(_spec)
sys.modules["spark_patches"] = spark_patches  # its dataclasses look their module up
_spec.loader.exec_module(spark_patches)

# The library as the jar was compiled against it ("4.9.3"), and as another patch has it ("4.9.0").
COMPILED = {
    "org/apache/spark/lib/Conf.java": """package org.apache.spark.lib;
public class Conf {
  public static final Conf INSTANCE = new Conf();
  public static String NEW_KEY = "k";
  public boolean newSetting() { return true; }
  public void retyped(int x) {}
  public int kept() { return 1; }
}""",
    "org/apache/spark/lib/Node.java": """package org.apache.spark.lib;
public abstract class Node { public abstract int arity(); }""",
    "org/apache/spark/lib/Added.java": """package org.apache.spark.lib;
public class Added { public Added() {} }""",
    "org/apache/spark/lib/Base.java": """package org.apache.spark.lib;
public class Base { public int inherited() { return 2; } }""",
    "org/apache/spark/lib/Sub.java": """package org.apache.spark.lib;
public class Sub extends Base {}""",
}
OTHER_PATCH = {
    # NEW_KEY, newSetting() and Added are not there yet; retyped takes a long.
    "org/apache/spark/lib/Conf.java": """package org.apache.spark.lib;
public class Conf {
  public static final Conf INSTANCE = new Conf();
  public void retyped(long x) {}
  public int kept() { return 1; }
}""",
    # One more abstract method, which a subclass of ours does not implement.
    "org/apache/spark/lib/Node.java": """package org.apache.spark.lib;
public abstract class Node { public abstract int arity(); public abstract String label(); }""",
    # inherited() moved up: still resolves through the superclass chain.
    "org/apache/spark/lib/Base.java": """package org.apache.spark.lib;
public class Base extends Root {}""",
    "org/apache/spark/lib/Root.java": """package org.apache.spark.lib;
public class Root { public int inherited() { return 2; } }""",
    "org/apache/spark/lib/Sub.java": """package org.apache.spark.lib;
public class Sub extends Base {}""",
}
OURS = {
    "io/hyperspace/Uses.java": """package io.hyperspace;
import org.apache.spark.lib.*;
public class Uses {
  public Object all() {
    Conf c = Conf.INSTANCE;
    c.retyped(1);
    return "" + c.kept() + c.newSetting() + Conf.NEW_KEY + new Added() + new Sub().inherited();
  }
}""",
    "io/hyperspace/Leaf.java": """package io.hyperspace;
public class Leaf extends org.apache.spark.lib.Node { public int arity() { return 0; } }""",
}


def _jars(tmp: Path, name: str, sources: dict[str, str]) -> dict[str, Path]:
    """``sources`` compiled in one javac run: io/hyperspace's classes into ``ours.jar``, the rest into
    ``<name>.jar``."""
    src, out = tmp / name / "src", tmp / name / "classes"
    for rel, text in sources.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    subprocess.run(["javac", "--release", "17", "-d", str(out), *map(str, src.rglob("*.java"))], check=True)
    jars: dict[str, Path] = {}
    for f in sorted(out.rglob("*.class")):
        rel = f.relative_to(out).as_posix()
        which = "ours" if rel.startswith("io/hyperspace/") else name
        jars.setdefault(which, tmp / f"{which}.jar")
        with zipfile.ZipFile(jars[which], "a") as z:
            z.write(f, rel)
    return jars


@pytest.fixture(scope="module")
def jars(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("spark-patches")
    return {**_jars(tmp, "compiled", {**COMPILED, **OURS}), **_jars(tmp, "other", OTHER_PATCH)}


def _problems(jars: dict[str, Path], patch: str) -> spark_patches.Problems:
    jdk = spark_patches.ClassPath.of_jdk(spark_patches.jdk_home())
    return spark_patches.problems(spark_patches.own_classes(jars["ours"]), spark_patches.ClassPath([jars[patch]], jdk))


def test_everything_links_on_the_patch_it_was_compiled_against(jars: dict[str, Path]) -> None:
    assert _problems(jars, "compiled") == {}


def test_each_class_and_member_another_patch_lacks_is_named_with_its_users(jars: dict[str, Path]) -> None:
    found = _problems(jars, "other")
    uses, leaf = {"io.hyperspace.Uses"}, {"io.hyperspace.Leaf"}
    assert found == {
        "class org.apache.spark.lib.Added": [("the class does not exist", uses)],
        "method org.apache.spark.lib.Added.<init>(): void": [("the class does not exist", uses)],
        "field org.apache.spark.lib.Conf.NEW_KEY: java.lang.String": [("absent", uses)],
        "method org.apache.spark.lib.Conf.newSetting(): boolean": [("absent", uses)],
        "method org.apache.spark.lib.Conf.retyped(int): void": [("absent; it has retyped(long): void", uses)],
        "method org.apache.spark.lib.Node.label(): java.lang.String": [("abstract, and not implemented", leaf)],
    }


def test_the_report_names_the_patch_the_member_and_the_user(
    jars: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` reads a patch's jars from the cache and the line's Delta/Iceberg jars; here both are ours."""
    monkeypatch.setattr(spark_patches, "patch_jars", lambda version, cache: [jars[version]])
    monkeypatch.setattr(spark_patches, "table_format_jars", lambda line, v, cache: [])
    assert spark_patches.check(jars["ours"], "4.9", ["compiled", "other"], Path("unused")) == 1
    out = capsys.readouterr().out
    assert "Spark compiled: every reference links" in out
    assert "Spark other: 6 missing" in out
    assert "  method org.apache.spark.lib.Conf.newSetting(): boolean\n      absent; used by io.hyperspace.Uses\n" in out
    assert "ours.jar does not link on Spark other: put each member above behind the shims" in out
    monkeypatch.setattr(spark_patches, "patch_jars", lambda version, cache: [jars["compiled"]])
    assert spark_patches.check(jars["ours"], "4.9", ["compiled"], Path("unused")) == 0


def _fake_sdist(version: str, jars: dict[str, bytes]) -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """A stand-in for `pip download` writing a pyspark sdist with `jars` in deps/jars/ (and a file
    outside it), counting its calls."""

    def download(cmd: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        download.calls += 1  # type: ignore[attr-defined]
        target = Path(cmd[cmd.index("-d") + 1]) / f"pyspark-{version}.tar.gz"
        with tarfile.open(target, "w:gz") as tar:
            for name, data in {**{f"deps/jars/{n}": d for n, d in jars.items()}, "setup.py": b""}.items():
                info = tarfile.TarInfo(f"pyspark-{version}/{name}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return subprocess.CompletedProcess(cmd, 0)

    download.calls = 0  # type: ignore[attr-defined]
    return download


def test_spark_jars_keeps_every_jar_of_the_sdist_once_and_the_check_reads_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--spark-jars (build.sbt's class path for a pyspark-sourced line) prints a directory holding
    every jar of deps/jars/, downloads once, and the patch check then reads that directory's jars
    it needs instead of downloading the sdist again."""
    jars = {"spark-sql_2.13-4.9.1.jar": b"sql", "netty-all-4.2.jar": b"netty", "scala-library-2.13.18.jar": b"scala"}
    fake = _fake_sdist("4.9.1", jars)
    monkeypatch.setattr(spark_patches.subprocess, "run", fake)
    assert spark_patches.main(["--spark-jars", "4.9.1", "--cache", str(tmp_path)]) == 0
    home = Path(capsys.readouterr().out.strip())
    assert home == tmp_path / "spark-jars" / "4.9.1"
    assert sorted(p.name for p in home.iterdir() if p.name != ".complete") == sorted(jars)
    assert (home / "netty-all-4.2.jar").read_bytes() == b"netty"
    assert spark_patches.main(["--spark-jars", "4.9.1", "--cache", str(tmp_path)]) == 0
    assert [p.name for p in spark_patches.patch_jars("4.9.1", tmp_path)] == [
        "scala-library-2.13.18.jar",
        "spark-sql_2.13-4.9.1.jar",
    ]
    assert fake.calls == 1  # type: ignore[attr-defined]


def test_spark_jars_refuses_an_sdist_without_spark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(spark_patches.subprocess, "run", _fake_sdist("4.9.2", {"netty-all-4.2.jar": b"netty"}))
    with pytest.raises(SystemExit, match="no deps/jars/spark-sql_"):
        spark_patches.spark_jars("4.9.2", tmp_path)
    assert not (tmp_path / "spark-jars" / "4.9.2" / ".complete").exists()


@pytest.mark.slow
def test_the_installed_lines_jar_links_on_every_checked_patch_of_its_line() -> None:
    """The check `make check-spark-patches` runs, on the jar the installed pyspark's line loads (the
    first run downloads each patch's pyspark once into the build cache)."""
    line = ".".join(versions()["spark"].split(".")[:2])
    patches = versions()["spark.patches"].split()
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "spark_patches.py"), "--line", line, "--jar", str(hyperspace.jar_path())],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for patch in patches:
        assert f"Spark {patch}: every reference links" in result.stdout, result.stdout


# The README's quick start and a lookup through a covering index, read in the driver (where 4.1.3's
# jar failed on 4.1.0 with a NoSuchMethodError), with Hyperspace on and off.
LOOKUP = """
import sys, tempfile, time
from pyspark.sql import SparkSession
import hyperspace
from hyperspace import Hyperspace, IndexConfig, configure_spark_with_hyperspace, enable_hyperspace, disable_hyperspace

started = time.monotonic()
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
spark = configure_spark_with_hyperspace(builder.config("spark.sql.shuffle.partitions", "2")).getOrCreate()
assert spark.version == sys.argv[1], spark.version
work = tempfile.mkdtemp()
spark.conf.set("spark.hyperspace.system.path", work + "/indexes")
spark.range(0, 5000, 1, 4).selectExpr("id % 97 AS customer_id", "id * 3 AS amount", "id").write.parquet(work + "/orders")
hs = Hyperspace(spark)
hs.create_index(spark.read.parquet(work + "/orders"), IndexConfig("by_customer", ["customer_id"], ["amount"], num_buckets=4))
def lookup():
    df = spark.read.parquet(work + "/orders").where("customer_id = 42").select("amount")
    return df._jdf.queryExecution().executedPlan().toString(), sorted(r.amount for r in df.collect())
plan_off, off = lookup()
enable_hyperspace(spark)
plan_on, on = lookup()
disable_hyperspace(spark)
print("PLAN", plan_on.replace(chr(10), " | "))
assert "by_customer" in plan_on and "by_customer" not in plan_off, plan_on
assert "DriverIndexRead" in plan_on, plan_on
assert on == off and len(on) == len([i for i in range(5000) if i % 97 == 42]), (on, off)
print(f"LOOKUP OK on Spark {spark.version} with {hyperspace.jar_path().name}: {len(on)} rows in {time.monotonic() - started:.0f} s")
"""


def _other_checked_patches() -> list[str]:
    """The patches of the installed line's list other than the installed pyspark."""
    return [p for p in versions()["spark.patches"].split() if p != pyspark.__version__]


def _venv_with(patch: str) -> Path:
    """A venv holding only pyspark ``patch`` and pyarrow (which hyperspace imports), made once and
    kept in the build cache (HS_CACHE) under the patch and Python version."""
    cache = Path(os.environ.get("HS_CACHE", Path.home() / ".cache" / "hyperspace-build"))
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    venv = cache / "patch-venvs" / f"pyspark-{patch}-pyarrow-{versions()['pyarrow.test']}-py{py}"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
        subprocess.run([*pip, f"pyspark=={patch}", f"pyarrow=={versions()['pyarrow.test']}"], check=True, timeout=1200)
        (venv / ".complete").touch()
    return venv


# `make test-full` and `make test-spark-patches` (a venv with another pyspark, ~160 s the first time
# on CI's machine): in CI the check above, and on the other lines make test-lines' own
# check-spark-patches, link the jar against every listed patch, which is what broke on 4.1.0.
@pytest.mark.full
@pytest.mark.slow
@pytest.mark.parametrize("patch", _other_checked_patches())
def test_a_lookup_through_an_index_on_another_checked_patch_equals_hyperspace_off(patch: str, tmp_path: Path) -> None:
    """The installed package (its line's jar) in a venv with another patch of the line the jar is
    checked against: the session starts, and a lookup through an index, read in the driver, returns
    what it returns with Hyperspace off."""
    venv = _venv_with(patch)
    package = tmp_path / "site"
    shutil.copytree(Path(hyperspace.__file__).parent, package / "hyperspace")
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", LOOKUP, patch],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(package), "PYSPARK_PYTHON": str(venv / "bin" / "python")},
    )
    assert result.returncode == 0 and "LOOKUP OK" in result.stdout, result.stdout + result.stderr[-4000:]
