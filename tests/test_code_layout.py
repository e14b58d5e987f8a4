"""Rules of the package's layout, read from its source (no JVM): py4j and pyspark's JVM handles
stay in ``hyperspace/_jvm.py``, the log reader stays free of Spark, and the Scala code builds
Spark's shape-sensitive internal classes only in the per-Spark-line shims."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "hyperspace"

# pyspark's handles on the JVM side of its objects (and py4j's gateway): only _jvm.py uses them.
JVM_HANDLES = {"_jvm", "_jsc", "_jdf", "_jsparkSession", "_jconf", "_gateway", "_jrdd", "_jreader", "_jwrite"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "jars" not in p.parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    package = ["hyperspace", *path.relative_to(PACKAGE).parent.parts]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.add(module)
    return found


def _jvm_handles_used(path: Path) -> set[str]:
    used: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in JVM_HANDLES:
            used.add(node.attr)
        elif isinstance(node, ast.Constant) and node.value in JVM_HANDLES:  # getattr(df, "_jdf")
            used.add(str(node.value))
    return used


def test_only_the_jvm_module_imports_py4j() -> None:
    offenders = {
        p.name: sorted(m for m in _imports(p) if m.split(".")[0] == "py4j") for p in _modules() if p.name != "_jvm.py"
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_only_the_jvm_module_touches_pyspark_jvm_handles() -> None:
    offenders = {str(p.relative_to(PACKAGE)): _jvm_handles_used(p) for p in _modules() if p.name != "_jvm.py"}
    assert {name: used for name, used in offenders.items() if used} == {}


def test_the_log_reader_needs_neither_spark_nor_the_jvm() -> None:
    reader = [PACKAGE / "log.py", *sorted((PACKAGE / "_log").glob("*.py"))]
    for path in reader:
        imported = _imports(path)
        assert not {m for m in imported if m.split(".")[0] in ("pyspark", "py4j")}, path.name
        hyperspace_modules = {m for m in imported if m.split(".")[0] == "hyperspace"}
        allowed = {"hyperspace.exceptions"} | {m for m in hyperspace_modules if m.startswith("hyperspace._log")}
        assert hyperspace_modules <= allowed, path.name


@pytest.mark.slow
def test_the_wheel_holds_every_module(tmp_path: Path) -> None:
    """Built for real: a subpackage missing from the setuptools configuration would be absent."""
    # Built from a copy: setuptools writes build/ and *.egg-info/ beside the sources.
    source = tmp_path / "python"
    shutil.copytree(PACKAGE.parent, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    shutil.copy(PACKAGE.parent.parent / "versions.properties", source)
    wheel_dir = tmp_path / "wheel"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheel_dir), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = wheel_dir.glob("hyperspace_spark-*.whl")
    with zipfile.ZipFile(wheel) as z:
        packaged = {n for n in z.namelist() if n.endswith(".py")}
    expected = {str(p.relative_to(PACKAGE.parent)) for p in _modules()}
    assert expected <= packaged, sorted(expected - packaged)


# ---- Scala: Spark internals only in the shims ----------------------------------------------

SCALA_SRC = PACKAGE.parent.parent / "scala" / "src"

# Spark classes whose constructor shape (arity, field order, curried arguments) is Spark's own
# and has changed between Spark lines, or that Spark builds internally: constructing them or
# matching on their constructor happens in scala/src/main/scala-spark-<line>/ (or a range of lines) only
# (docs/architecture.md, "Spark lines"). Type tests (`case r: LogicalRelation`) and field reads
# are fine anywhere.
SHAPE_SENSITIVE = (
    "LogicalRelation",
    "HadoopFsRelation",
    "Aggregate",
    "Join",
    "ExtractEquiJoinKeys",
    "FileSourceScanExec",
    "InMemoryFileIndex",
    "PartitionedFile",
    "FileStatusWithMetadata",
    "PartitionDirectory",
    "Cast",
    "InsertIntoHadoopFsRelationCommand",
    "ShuffledRowRDD",
    "FileScanRDD",
    "FilePartition",
    "LogicalRDD",
    "PhysicalOperation",
    "SortBasedAggregationIterator",
)
# Spark classes that moved package between Spark lines: named only in the shims.
MOVED = ("MetadataLogFileIndex",)  # execution.streaming -> execution.streaming.runtime in 4.1
# `Name(` or `new Name(` (a call, an extractor pattern, or `extends Name(`), not `x.Name(` or
# `SomeName(`.
_SHAPE_USE = re.compile(r"(?<![\w.])(?:new\s+)?(" + "|".join(SHAPE_SENSITIVE) + r")\s*[(\[]")
_MOVED_USE = re.compile(r"(?<![\w])(" + "|".join(MOVED) + r")(?![\w])")
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"', re.S)


def _scala_outside_shims() -> list[Path]:
    return sorted(
        p for tree in (SCALA_SRC / "main" / "scala", SCALA_SRC / "test" / "scala") for p in tree.rglob("*.scala")
    )


def _shape_sensitive_uses(source: str) -> list[tuple[int, str]]:
    """(line, class) of each constructor call or pattern of a SHAPE_SENSITIVE class, and of each
    mention of a MOVED one."""
    # Comments and string literals blanked (newlines kept), so line numbers stay right.
    code = _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    found = [*_SHAPE_USE.finditer(code), *_MOVED_USE.finditer(code)]
    return sorted((code.count("\n", 0, m.start()) + 1, m.group(1)) for m in found)


def test_the_shape_check_sees_calls_patterns_and_subclasses_but_not_comments() -> None:
    source = """
      case LogicalRelation(fs: HadoopFsRelation, _, _, _, _) => fs  // LogicalRelation(x)
      val c = Cast(child, LongType)
      class R extends HadoopFsRelation(a, b)(spark)
      val p = new PartitionedFile(row, path, 0, 1)
      /* Aggregate(g, a, c) */ val s = "Join(l, r)"
      case r: LogicalRelation => Cast.canCast(a, b) || DistinctSketchAggregate(x) != x.Join(y)
      case _: MetadataLogFileIndex => true  // MetadataLogFileIndex
    """
    assert _shape_sensitive_uses(source) == [
        (2, "LogicalRelation"),
        (3, "Cast"),
        (4, "HadoopFsRelation"),
        (5, "PartitionedFile"),
        (8, "MetadataLogFileIndex"),
    ]


def test_spark_internals_of_changing_shape_are_only_built_in_the_shims() -> None:
    offenders = {
        f"{p.relative_to(SCALA_SRC)}:{line}": name
        for p in _scala_outside_shims()
        for line, name in _shape_sensitive_uses(p.read_text(encoding="utf-8"))
    }
    assert offenders == {}, "use (or add) an extractor or factory in io.hyperspace.shims"


def test_code_with_spark_private_access_lives_in_the_shims() -> None:
    """Code in Spark's packages (for `private[sql]` access) is version-specific by nature."""
    assert sorted((SCALA_SRC / "main" / "scala" / "org" / "apache" / "spark").rglob("*.scala")) == []
    # Per-line directories (scala-spark-4.x, scala-spark-4.1), not ranges of lines (scala-spark-4.1-4.2).
    lines = sorted(
        d.name for d in (SCALA_SRC / "main").glob("scala-spark-*") if re.fullmatch(r"scala-spark-\d+\.(\d+|x)", d.name)
    )
    assert lines, "no per-Spark-line source directory"
    for line in lines:
        assert (SCALA_SRC / "main" / line / "io" / "hyperspace" / "shims").is_dir(), line
