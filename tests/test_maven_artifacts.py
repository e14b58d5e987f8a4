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


def test_spark_submit_with_packages_resolves_the_artifact_from_the_repository(tmp_path: Path) -> None:
    """The Python app never names a jar: --packages resolves the artifact (and, its dependencies
    being provided, nothing else) from dist/maven, and the session's queries use its index."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    ivy = tmp_path / "ivy"  # a fresh Ivy cache: the artifact comes from the repository, not a cache
    command = [
        str(Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--packages",
        f"io.hyperspace:{ARTIFACT}:{VERSION}",
        "--repositories",
        REPOSITORY.resolve().as_uri(),
        "--conf",
        f"spark.jars.ivy={ivy}",
        "--conf",
        f"spark.sql.extensions={EXTENSION}",
        "--conf",
        "spark.hyperspace.apply.enabled=true",
        "--conf",
        f"spark.hyperspace.system.path={tmp_path / 'indexes'}",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.ui.enabled=false",
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
