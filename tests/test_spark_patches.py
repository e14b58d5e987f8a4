"""The static check that a line's jar links on every checked patch of its line (tools/spark_patches.py,
`make check-spark-patches`): first on small jars javac builds here (a library in two "patches" and
a user of it), so each kind of break is seen reported; then on the installed line's real jar."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

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

