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
    """The shared sources and Delta's (scala-delta: left out of the lines without a Delta release, but
    not a shim: what it calls must compile on every line that has Delta)."""
    trees = [SCALA_SRC / kind / d for kind in ("main", "test") for d in ("scala", "scala-delta")]
    return sorted(p for tree in trees for p in tree.rglob("*.scala"))


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


# The pages a reader follows links through: the README, the docs, the benchmark results' index.
ROOT = PACKAGE.parent.parent
DOC_PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "benchmarks/results").glob("*.md")),
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of ``page`` (lower case, punctuation dropped, spaces as hyphens,
    repeats numbered) and explicit ``<a id>``/``<a name>`` ones."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(
                f"{target} (no file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved})"
            )
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no heading #{anchor} in {resolved.name})")
    return broken


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    broken = {str(p.relative_to(ROOT)): b for p in DOC_PAGES if (b := _broken_links(p))}
    assert broken == {}


def test_the_link_check_sees_missing_files_and_headings(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading: yes\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-code-heading-yes) [self](#top) [gone](missing.md) [bad](other.md#nope)\n"
        "[web](https://example.com/x.md)\n\n# Top\n\n```\n[in a block](ignored.md)\n```\n",
        encoding="utf-8",
    )
    assert [b.split(" ")[0] for b in _broken_links(page)] == ["missing.md", "other.md#nope"]


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def test_the_readme_and_the_guide_python_blocks_parse() -> None:
    """Without a JVM: a syntax slip in a block fails here at once (tests/test_connect.py runs the
    README's blocks and the guide's sections on a session)."""
    for page in (ROOT / "README.md", ROOT / "docs" / "guide.md"):
        blocks = _python_blocks(page)
        assert blocks, page.name
        for i, block in enumerate(blocks, 1):
            compile(block, f"{page.name} python block {i}", "exec")


@pytest.mark.parametrize(("page", "delta_cell"), [("README.md", 3), ("docs/versions.md", 4)])
def test_the_versions_tables_are_versions_properties(page: str, delta_cell: int) -> None:
    """Each line's row: compiled against, patches checked, Delta, then Iceberg, as pinned."""
    pins = _pins()
    text = (ROOT / page).read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (\d+\.\d+) \|.*$", text, flags=re.M)}
    assert sorted(rows) == sorted(pins["spark.lines"].split())
    for line, row in rows.items():
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == pins[f"spark.{line}"], row
        assert cells[2] == ", ".join(pins[f"spark.patches.{line}"].split()), row
        assert cells[delta_cell] == pins[f"delta.{line}"], row
        iceberg, cell = pins[f"iceberg.{line}"], cells[delta_cell + 1]
        assert cell.startswith("none") if iceberg == "none" else cell.split(" ")[0] == iceberg, row


def _pins() -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in (ROOT / "versions.properties").read_text(encoding="utf-8").splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    )


# A release's number where the docs name an artifact: a jar, a Maven coordinate, a wheel.
_ARTIFACT_VERSIONS = re.compile(
    r"hyperspace-spark\d+\.\d+_2\.13-(?P<jar>[^\s`)\"'/]+?)\.jar"
    r"|io\.hyperspace:hyperspace-spark\d+\.\d+_2\.13:(?P<coordinate>[^\s`)\"']+)"
    r"|hyperspace_spark-(?P<wheel>[^\s`)\"'/-]+)-py3"
)


def test_one_version_names_the_release_in_the_changelog_and_the_docs() -> None:
    version = _pins()["hyperspace"]
    newest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.M)
    assert newest and newest.group(1) == version, (
        "CHANGELOG.md's newest section must be versions.properties' hyperspace"
    )
    other = {
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in [*DOC_PAGES, ROOT / "CHANGELOG.md"]
        for m in _ARTIFACT_VERSIONS.finditer(p.read_text(encoding="utf-8"))
        if next(v for v in m.groupdict().values() if v) not in (version, "<version>")
    }
    assert other == set(), f"artifacts named with another version than {version}"


def test_the_version_check_sees_another_version() -> None:
    text = (
        "hyperspace-spark4.2_2.13-0.0.9.jar io.hyperspace:hyperspace-spark4.1_2.13:<version> hyperspace_spark-0.1.0-py3"
    )
    assert [next(v for v in m.groupdict().values() if v) for m in _ARTIFACT_VERSIONS.finditer(text)] == [
        "0.0.9",
        "<version>",
        "0.1.0",
    ]
