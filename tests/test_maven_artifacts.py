"""The line's Maven artifacts as a JVM user takes them: `make publish-local` writes
io.hyperspace:hyperspace-spark<line>_2.13:<version> into dist/maven/ (a Maven repository layout),
and `spark-submit --packages` resolves it from there, with nothing else: its POM names Spark,
Delta, Iceberg and Scala `provided`, so a second Spark is never pulled onto the class path.

CI publishes the default line's artifacts after its Scala suites and runs this module in that
line's wheel venv (Makefile: test-lines), with HYPERSPACE_REQUIRE_MAVEN=1, so missing artifacts
fail there; elsewhere (`make test`, run before anything is published) the module is skipped
with the command that makes them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pyspark
import pytest

from conftest import REPO, short_jvm_env, versions

LINE = ".".join(pyspark.__version__.split(".")[:2])
ARTIFACT = f"hyperspace-spark{LINE}_2.13"
VERSION = versions()["hyperspace"]
REPOSITORY = REPO / "dist" / "maven"
ARTIFACT_DIR = REPOSITORY / "io" / "hyperspace" / ARTIFACT / VERSION
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
EXTENSION = "io.hyperspace.HyperspaceSparkSessionExtension"

pytestmark = pytest.mark.skipif(
    not (ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.pom").is_file() and os.environ.get("HYPERSPACE_REQUIRE_MAVEN") != "1",
    reason=f"no {ARTIFACT}:{VERSION} in dist/maven/ (make publish-local PUBLISH_LINES={LINE})",
)


def _pom() -> ElementTree.Element:
    return ElementTree.parse(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.pom").getroot()


def test_the_pom_names_the_artifact_its_licence_and_only_provided_dependencies() -> None:
    pom = _pom()
    assert pom.findtext("m:groupId", namespaces=POM_NS) == "io.hyperspace"
    assert pom.findtext("m:artifactId", namespaces=POM_NS) == ARTIFACT
    assert pom.findtext("m:version", namespaces=POM_NS) == VERSION
    assert pom.findtext("m:licenses/m:license/m:name", namespaces=POM_NS) == "Apache-2.0"
    assert pom.findtext("m:developers/m:developer/m:name", namespaces=POM_NS)
    dependencies = {
        d.findtext("m:artifactId", namespaces=POM_NS): d.findtext("m:scope", namespaces=POM_NS)
        for d in pom.findall("m:dependencies/m:dependency", POM_NS)
    }
    runtime = {name: scope for name, scope in dependencies.items() if scope not in ("provided", "test")}
    assert runtime == {}, f"dependencies a user's Spark would get twice: {runtime}"
    for provided in ("scala-library", "spark-sql_2.13", "spark-core_2.13", "spark-catalyst_2.13"):
        assert dependencies.get(provided) == "provided", dependencies
    if versions().get(f"delta.{LINE}", versions().get("delta")) != "none":
        assert dependencies.get("delta-spark_2.13") == "provided", dependencies


def test_the_jar_comes_with_its_sources_scaladoc_and_licence() -> None:
    with zipfile.ZipFile(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.jar") as jar:
        names = set(jar.namelist())
    assert {"io/hyperspace/HyperspaceSparkSessionExtension.class", "META-INF/LICENSE"} <= names
    with zipfile.ZipFile(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}-sources.jar") as sources:
        assert "io/hyperspace/HyperspaceSparkSessionExtension.scala" in sources.namelist()
    with zipfile.ZipFile(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}-javadoc.jar") as docs:
        assert "index.html" in docs.namelist()


APP = """
import sys
from pyspark.sql import SparkSession
from hyperspace import Hyperspace, IndexConfig

spark = SparkSession.builder.getOrCreate()
lake = sys.argv[1]
spark.range(0, 2000, 1, 4).selectExpr("id AS k", "id * 3 AS v").write.parquet(lake + "/t")
hs = Hyperspace(spark)
hs.create_index(spark.read.parquet(lake + "/t"), IndexConfig("by_k", ["k"], ["v"]))
query = spark.read.parquet(lake + "/t").where("k = 1234").select("v")
rows = [r.v for r in query.collect()]
plan = query._jdf.queryExecution().executedPlan().toString()
print("ROWS", rows)
print("USES_INDEX", "by_k" in plan)
"""


def readme_block(language: str, marker: str) -> str:
    """The README's ``language`` block holding ``marker``, for this line's artifact (the README
    names the default line's)."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```", (REPO / "README.md").read_text(encoding="utf-8"), re.M | re.S)
    (block,) = [b for b in blocks if marker in b]
    return block.replace(f"hyperspace-spark{versions()['spark.default']}", f"hyperspace-spark{LINE}")


def test_spark_submit_with_packages_resolves_the_artifact_from_the_repository(tmp_path: Path) -> None:
    """The README's --packages command, run from the checkout: the Python app never names a jar,
    --packages resolves the artifact (and, its dependencies being provided, nothing else) from
    dist/maven, and the session's queries use its index."""
    readme = shlex.split(readme_block("bash", "--packages").replace("\\\n", " ").replace("$PWD", str(REPO)))
    assert readme[0] == "spark-submit" and readme[-1] == "app.py", readme
    assert readme[readme.index("--packages") + 1] == f"io.hyperspace:{ARTIFACT}:{VERSION}", readme
    assert Path(readme[readme.index("--repositories") + 1].removeprefix("file://")) == REPOSITORY, readme
    assert f"spark.sql.extensions={EXTENSION}" in readme, readme
    app = tmp_path / "app.py"
    app.write_text(APP)
    ivy = tmp_path / "ivy"  # a fresh Ivy cache: the artifact comes from the repository, not a cache
    local = {
        "spark.jars.ivy": str(ivy),
        "spark.hyperspace.apply.enabled": "true",
        "spark.hyperspace.system.path": str(tmp_path / "indexes"),
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
    }
    command = [
        str(Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        *readme[1:-1],
        *[a for k, v in local.items() for a in ("--conf", f"{k}={v}")],
        str(app),
        str(tmp_path / "lake"),
    ]
    # The app imports the Python API from the installed package; the jar it uses is the resolved one.
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=short_jvm_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "ROWS [3702]" in done.stdout, done.stdout[-3000:]
    assert "USES_INDEX True" in done.stdout, done.stdout[-3000:]
    resolved = sorted(p.name for p in (ivy / "jars").glob("*.jar"))
    assert resolved == [f"io.hyperspace_{ARTIFACT}-{VERSION}.jar"], resolved


# The README's sbt lines follow these.
BUILD_SBT = """
scalaVersion := "{scala}"
libraryDependencies += "org.apache.spark" %% "spark-sql" % "{spark}"
fork := true
javaOptions ++= Seq({java_options})
"""

MAIN_SCALA = """
import org.apache.spark.sql.SparkSession
import io.hyperspace._
import io.hyperspace.index.IndexConfig

object Main {
  def main(args: Array[String]): Unit = {
    val lake = args(0)
    val spark = SparkSession.builder().master("local[2]")
      .config("spark.sql.extensions", "io.hyperspace.HyperspaceSparkSessionExtension")
      .config("spark.hyperspace.system.path", lake + "/indexes")
      .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
      .getOrCreate()
    spark.range(0, 2000, 1, 4).selectExpr("id AS k", "id * 3 AS v").write.parquet(lake + "/t")
    val hs = Hyperspace(spark)
    hs.createIndex(spark.read.parquet(lake + "/t"), IndexConfig("by_k", Seq("k"), Seq("v")))
    def query = spark.read.parquet(lake + "/t").where("k = 1234").select("v")
    val plain = query.collect().map(_.getLong(0)).toList
    spark.enableHyperspace()
    val indexed = query.collect().map(_.getLong(0)).toList
    println(s"ROWS $plain $indexed")
    println(s"USES_INDEX ${query.queryExecution.executedPlan.toString.contains("by_k")}")
    spark.stop()
  }
}
"""

# The JVM options Spark 4 needs on Java 17, as build.sbt gives its own test JVMs.
JAVA17_OPTIONS = [
    "--add-opens=java.base/" + p + "=ALL-UNNAMED"
    for p in (
        "java.lang",
        "java.lang.invoke",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "jdk.internal.ref",
        "sun.nio.ch",
        "sun.nio.cs",
        "sun.security.action",
        "sun.util.calendar",
    )
] + ["-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true"]


@pytest.mark.full
@pytest.mark.slow
def test_an_sbt_project_depending_on_the_artifact_runs_a_query_through_its_index(tmp_path: Path) -> None:
    """A Scala user's build, with the README's sbt lines: the artifact from dist/maven beside their
    own Spark, compiled and run with sbt, with nothing else on the class path; the query reads the
    index, the rows are Spark's. An sbt start and a compile: make test-full (CI runs the
    --packages test above)."""
    pins = versions()
    cache = Path(os.environ.get("HS_CACHE", Path.home() / ".cache" / "hyperspace-build"))
    launcher = cache / f"sbt-launch-{pins['sbt']}.jar"
    assert launcher.is_file(), f"{launcher} is missing: make setup bootstraps it"
    project = tmp_path / "app"
    (project / "src" / "main" / "scala").mkdir(parents=True)
    (project / "project").mkdir()
    (project / "project" / "build.properties").write_text(f"sbt.version={pins['sbt']}\n")
    readme = readme_block("scala", "libraryDependencies").replace("/path/to/checkout", str(REPO))
    assert f'"{REPOSITORY.resolve().as_uri()}"' in readme, readme
    (project / "build.sbt").write_text(
        BUILD_SBT.format(
            scala=pins.get(f"scala.{LINE}", pins.get("scala")),
            spark=pyspark.__version__,
            java_options=", ".join(f'"{o}"' for o in JAVA17_OPTIONS),
        )
        + readme
    )
    (project / "src" / "main" / "scala" / "Main.scala").write_text(MAIN_SCALA)
    # The build resolves from this checkout's repository and Maven Central only.
    repositories = tmp_path / "repositories"
    repositories.write_text(f"[repositories]\n  hyperspace: {REPOSITORY.resolve().as_uri()}\n  maven-central\n")
    command = [
        "java",
        "-Xmx2g",
        f"-Dsbt.boot.directory={cache / 'sbt-boot'}",
        f"-Dsbt.global.base={tmp_path / 'sbt-global'}",
        f"-Dsbt.ivy.home={tmp_path / 'ivy2'}",
        f"-Dsbt.coursier.home={cache / 'coursier-home'}",
        f"-Dsbt.repository.config={repositories}",
        "-Dsbt.override.build.repos=true",
        "-Dsbt.supershell=false",
        "-Dsbt.server.forcestart=false",
        "-Dsbt.ci=true",
        "-jar",
        str(launcher),
        f"run {tmp_path / 'lake'}",
    ]
    done = subprocess.run(
        command,
        cwd=str(project),
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COURSIER_CACHE": str(cache / "coursier")},
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "ROWS List(3702) List(3702)" in done.stdout, done.stdout[-3000:]
    assert "USES_INDEX true" in done.stdout, done.stdout[-3000:]
