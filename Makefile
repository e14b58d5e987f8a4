# Hyperspace for Spark 4 — every target installs what it needs itself, so `make demo` and
# `make test` each work as the first command on a fresh clone.
#
# Only PyPI and Maven Central are contacted: sbt is bootstrapped from the
# org.scala-sbt:sbt-launch jar on Maven Central and told (project/repositories +
# sbt.override.build.repos) to resolve everything from `local` and Maven Central alone.

SHELL := /bin/bash
.DEFAULT_GOAL := help

version_of = $(shell sed -n 's/^$(subst .,\.,$(1))=//p' versions.properties)
HS_VERSION    := $(call version_of,hyperspace)
SBT_VERSION   := $(call version_of,sbt)

# The Spark line to build and test: `make test SPARK=4.1`. Each line has its own jar, class files
# (target/spark-<line>/) and venv (.venv for the default line, .venv-<line> for the others).
SPARK_LINES   := $(call version_of,spark.lines)
SPARK_DEFAULT := $(call version_of,spark.default)
SPARK         ?= $(SPARK_DEFAULT)
ifeq ($(filter $(SPARK),$(SPARK_LINES)),)
$(error SPARK=$(SPARK) is not a supported Spark line; versions.properties lists $(SPARK_LINES))
endif
# A pin of the line (`spark.4.1`), else the shared one.
pinned        = $(or $(call version_of,$(1).$(SPARK)),$(call version_of,$(1)))
SPARK_VERSION := $(call pinned,spark)
DELTA_VERSION := $(call pinned,delta)
MOTO_VERSION  := $(call version_of,moto)
OTHER_LINES   := $(filter-out $(SPARK),$(SPARK_LINES))
NON_DEFAULT_LINES := $(filter-out $(SPARK_DEFAULT),$(SPARK_LINES))

PYTHON ?= python3
# Each step of a run timed and recorded (target/ci-phases.jsonl; .ci/report.py prints the table).
PHASE   = $(PYTHON) .ci/phase.py
VENV   := $(if $(filter $(SPARK),$(SPARK_DEFAULT)),.venv,.venv-$(SPARK))
VPY    := $(VENV)/bin/python

# Downloads live in the user cache so later runs and CI on the same machine reuse them.
HS_CACHE     ?= $(HOME)/.cache/hyperspace-build
# Exported for build.sbt, which fetches a pyspark-sourced line's Spark jars (spark.source.<line>)
# through tools/spark_patches.py into this cache, with this Python.
export HS_CACHE
export HYPERSPACE_PYTHON := $(PYTHON)
SBT_LAUNCHER := $(HS_CACHE)/sbt-launch-$(SBT_VERSION).jar
MAVEN_CENTRAL := https://repo1.maven.org/maven2
export COURSIER_CACHE := $(HS_CACHE)/coursier

SBT := java -Xms512m -Xmx2g -Xss4m \
	-Dsbt.boot.directory=$(HS_CACHE)/sbt-boot \
	-Dsbt.global.base=$(HS_CACHE)/sbt-global \
	-Dsbt.ivy.home=$(HS_CACHE)/ivy2 \
	-Dsbt.coursier.home=$(HS_CACHE)/coursier-home \
	-Dsbt.repository.config=$(CURDIR)/project/repositories \
	-Dsbt.override.build.repos=true \
	-Dsbt.supershell=false -Dsbt.server.forcestart=false -Dsbt.color=false -Dsbt.ci=true \
	-Dhyperspace.spark.line=$(SPARK) \
	-jar $(SBT_LAUNCHER)

jar_name   = hyperspace-spark$(1)_2.13-$(HS_VERSION).jar
JAR       := target/spark-$(SPARK)/scala-2.13/$(call jar_name,$(SPARK))
PKG_JAR   := python/hyperspace/jars/$(call jar_name,$(SPARK))
# The wheel carries every line's jar.
ALL_PKG_JARS := $(foreach l,$(SPARK_LINES),python/hyperspace/jars/$(call jar_name,$(l)))
SCALA_SRC := $(shell find scala/src/main -type f 2>/dev/null) build.sbt versions.properties

.PHONY: test-full help setup build publish-local publish-line jar jars wheel fmt lint lint-scala test test-quick test-scala test-python test-lines \
	test-line-scala test-scala-then-lines line-subsets test-wheel sbt fuzz chaos demo bench bench-quick bench-tpcds sql-corpus-jar sql-corpus-all docs clean

help:
	@echo "make demo   - build everything and run the end-to-end demo"
	@echo "make test   - build everything and run all tests (sbt, then pytest) on one Spark line"
	@echo "              (SPARK=4.1 picks the line: any of $(SPARK_LINES); default $(SPARK_DEFAULT))"
	@echo "make test-full - make test plus the long runs (generated suites at full size, pytest's full tests)"
	@echo "make sql-corpus-all - every file of Spark's SQL corpus run with and without Hyperspace (long)"
	@echo "make test-lines - a representative subset of the tests on every other Spark line"
	@echo "make test-quick - unit tests only (< 3 min): Scala suites without Spark, pytest's unit modules"
	@echo "make lint   - ruff (check + format --check) and mypy --strict; CI runs it before the tests"
	@echo "make docs   - the docs site into target/site/ (mkdocs, strict; the Python API from its docstrings)"
	@echo "make fmt    - apply ruff's import order and format, and scalafmt to the Scala sources"
	@echo "make setup  - create .venv, install the Python package (editable) and fetch sbt"
	@echo "make build  - build the jar and the wheel (dist/; every Spark line's jar)"
	@echo "make publish-local - every line's Maven artifacts (jar, sources, Scaladoc, POM) into dist/maven/"
	@echo "make sbt CMD='testOnly <suite>' - one sbt command (e.g. a single suite)"
	@echo "make fuzz   - long differential runs (FUZZ_QUERIES=2000, FUZZ_SEED=<now>)"
	@echo "make chaos  - more rounds of the kill/race/vacuum chaos suite (CHAOS_ROUNDS=5, CHAOS_SEED=<now>)"
	@echo "make bench  - TPC-H benchmarks at SF1 (BENCH_ARGS='--sf 2 --suite tpch' ...)"
	@echo "make bench-quick - a tiny smoke run of every benchmark suite"
	@echo "make bench-tpcds - Spark's TPC-DS queries at SF1, no index / the advisor's / hand-picked indexes"
	@echo "make check-spark-patches - the line's jar links on the patches spark.patches.<line> lists"
	@echo "make clean  - remove build outputs (keeps the download cache in $(HS_CACHE))"

# ---- setup -------------------------------------------------------------------------------

setup: $(VENV)/.installed $(SBT_LAUNCHER)

# The wheel accepts any supported pyspark; the venv of a line gets exactly the line's pyspark and
# the line's delta-spark (tests/test_delta_commands.py), when the line has a Delta release
# (`delta.<line>=none`: not yet, 4.3). delta-spark goes in without its declared
# dependencies: its pyspark bound trails Spark's patches (delta-spark 4.3.1 says pyspark<=4.1.1)
# although its jars, fetched by configure_spark_with_delta_pip, run on the line's newest patch.
#
# moto, the S3 server of the s3a:// tests (tests/s3/moto_server.py), goes into this venv and not into
# the package's test extra: the wheel's venvs (test-wheel) run no S3 test, and installing it with
# its dependencies (boto3, botocore, flask, ...) costs 8 to 16 CPU seconds a venv.
#
# --no-compile: byte-compiling every module of pyspark, pandas and pyarrow at install took a third
# of each venv's set-up; Python compiles the few modules a run imports when it imports them.
PIP_INSTALL = -m pip install --quiet --no-compile
# A new venv each time the pins change, so it holds exactly them (no distribution left from before,
# e.g. the package's own under an earlier name, whose egg-info setuptools leaves in python/).
$(VENV)/.installed: python/pyproject.toml python/setup.py versions.properties
	rm -rf $(VENV) python/*.egg-info
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(PHASE) "venv $(SPARK)" -- $(VPY) $(PIP_INSTALL) -e 'python[test,bench,dev]' pyspark==$(SPARK_VERSION) importlib_metadata \
	  'moto[s3,server]==$(MOTO_VERSION)'
	$(if $(filter none,$(DELTA_VERSION)),,$(VPY) $(PIP_INSTALL) --no-deps delta-spark==$(DELTA_VERSION))
	touch $@

$(SBT_LAUNCHER):
	mkdir -p $(HS_CACHE)
	curl -fsSL --retry 3 -o $@.part \
	  $(MAVEN_CENTRAL)/org/scala-sbt/sbt-launch/$(SBT_VERSION)/sbt-launch-$(SBT_VERSION).jar
	mv $@.part $@

# ---- build -------------------------------------------------------------------------------

jar: $(PKG_JAR)

$(JAR): $(SCALA_SRC) | $(SBT_LAUNCHER)
	$(PHASE) "jar $(SPARK)" -- $(SBT) package

# The jars ship inside the Python package (hyperspace/jars/), for the wheel and editable installs;
# hyperspace.jar_path() picks the one of the installed pyspark's line.
# Copied under another name, then renamed: a test running beside this copy (LINES_BESIDE below)
# never sees half a jar.
$(PKG_JAR): $(JAR)
	mkdir -p python/hyperspace/jars
	cp $(JAR) $@.part
	rm -f python/hyperspace/jars/hyperspace-spark$(SPARK)_*.jar
	mv $@.part $@

# Every line's jar, each compiled once (one sbt run per line, main sources only).
jars:
	$(foreach l,$(SPARK_LINES),$(MAKE) --no-print-directory jar SPARK=$(l) &&) true

# Only the jars of this version's lines go into the wheel.
wheel: jars $(VENV)/.installed
	rm -rf dist/*.whl python/build
	@for j in python/hyperspace/jars/*.jar; do \
	  case " $(ALL_PKG_JARS) " in *" $$j "*) ;; *) rm -v "$$j";; esac; done
	$(PHASE) wheel -- $(VPY) -m pip wheel --quiet --no-deps -w dist ./python
	rm -rf python/build
	$(VPY) -m twine check --strict dist/*.whl

build: setup jar wheel

# Every line's Maven artifacts (io.hyperspace:hyperspace-spark<line>_2.13:<version>: the jar, its
# sources and Scaladoc jars, the POM) in a Maven repository layout under dist/maven/, for
# `spark-submit --packages ... --repositories file://$(CURDIR)/dist/maven` and builds depending on
# them (build.sbt's publishSettings; HYPERSPACE_SCM_URL fills the POM's <scm> for a release).
# PUBLISH_LINES narrows the lines (make test publishes the default line's for its tests).
PUBLISH_LINES ?= $(SPARK_LINES)
MAVEN_REPO := dist/maven
publish-local:
	$(foreach l,$(PUBLISH_LINES),$(MAKE) --no-print-directory publish-line SPARK=$(l) &&) true
# A release is never overwritten in a Maven repository; dist/maven/ is this build's own, so the
# line's version there is replaced.
LINE_MAVEN_DIR = $(MAVEN_REPO)/io/hyperspace/hyperspace-spark$(SPARK)_2.13/$(HS_VERSION)
publish-line: | $(SBT_LAUNCHER)
	rm -rf $(LINE_MAVEN_DIR)
	$(PHASE) "publish $(SPARK)" -- $(SBT) publish

# ---- docs --------------------------------------------------------------------------------

# The docs site into target/site/ (mkdocs.yml): docs/ and the Python API reference from the
# package's docstrings, strict (a dead page, anchor or repository link, or an API name that no
# longer exists, fails it). HYPERSPACE_SCM_URL points the links to repository files at it.
docs: $(VENV)/.installed
	$(VPY) -m mkdocs build --strict

# ---- style -------------------------------------------------------------------------------
# Settings: ruff.toml (ruff), python/pyproject.toml [tool.mypy], .scalafmt.conf (scalafmt).

PY_SOURCES := python tests benchmarks .ci
PY_SOURCES += tools
RUFF := $(VENV)/bin/ruff

# `make lint LINT_SCALA=0` skips the scalafmt check (it starts sbt) for a Python-only change.
LINT_SCALA ?= 1

lint: $(VENV)/.installed
	$(PHASE) "lint ruff" -- $(RUFF) check $(PY_SOURCES)
	$(RUFF) format --check $(PY_SOURCES)
	$(PHASE) "lint mypy" -- $(VENV)/bin/mypy --config-file python/pyproject.toml python/hyperspace
ifeq ($(LINT_SCALA),1)
	$(MAKE) --no-print-directory lint-scala
endif

lint-scala: | $(SBT_LAUNCHER)
	$(PHASE) "lint scalafmt" -- $(SBT) scalafmtCheckAll scalafmtSbtCheck

fmt: $(VENV)/.installed | $(SBT_LAUNCHER)
	$(RUFF) check --select I --fix $(PY_SOURCES)
	$(RUFF) format $(PY_SOURCES)
	$(SBT) scalafmtAll scalafmtSbt

# ---- test --------------------------------------------------------------------------------

# Iceberg: on a line without an Iceberg runtime (versions.properties `iceberg.<line>=none`, Spark 4.2)
# build.sbt leaves the Iceberg suites (io.hyperspace.sources.Iceberg*Suite) out of the test sources and
# tests/test_iceberg_sources.py is skipped with that reason: they do not run there, rather than pass.
#
# Each suite's and module's wall and CPU seconds are recorded as it runs (build.sbt's SuiteTimes
# reporter, tests/conftest.py); the run ends with the slowest and those over the per-suite budget.
#
# `make test LINES_BESIDE=yes` (.ci/run) runs the work in two lanes once the line's jar is built:
# pytest in one; in the other the Scala suites, then the other lines' subsets and the wheel on every
# line (test-lines, below). pytest's modules spend much of their time waiting for JVMs, clusters and
# servers to start, and the Scala suites, which keep a core busy without a wait, fill that idle
# core; pytest needs only the jar, not the suites' verdict. Plain `make test` runs the Scala suites,
# then pytest, one after the other (a failure is easier to read in a log that does one thing).
#
# `make test SCALA_FMT_CHECK=yes` (.ci/run, whose lint then skips it) runs the scalafmt check first in
# the first sbt start instead of one of its own: a format error still fails before anything compiles.
SUITE_TIMES = target/spark-$(SPARK)/suite-times.tsv
LINES_BESIDE ?= no
SCALA_FMT_CHECK ?= no
comma := ,
fmt_check_in_test = $(if $(filter yes,$(SCALA_FMT_CHECK)),$(1))
FMT_STEPS = $(call fmt_check_in_test,scalafmt$(comma)scalafmt sbt$(comma))
FMT_CHECK = $(call fmt_check_in_test,scalafmtCheckAll scalafmtSbtCheck)
test: setup
	rm -f $(SUITE_TIMES) target/pytest-times.tsv
ifeq ($(LINES_BESIDE),yes)
	$(PHASE) "sbt $(SPARK) package" --sbt-steps "$(FMT_STEPS)package" -- $(SBT) $(FMT_CHECK) package
	$(MAKE) --no-print-directory jar
	$(MAKE) --no-print-directory -j2 test-python test-scala-then-lines
else
	rm -rf $(LINE_MAVEN_DIR)
	$(PHASE) "sbt $(SPARK)" --sbt-steps "$(FMT_STEPS)compile,tests,package,publish" -- \
	  $(SBT) $(FMT_CHECK) Test/compile test package publish
	$(MAKE) --no-print-directory jar
	$(MAKE) --no-print-directory test-python
endif
	$(PYTHON) .ci/report.py --units --line $(SPARK)

# The second lane of `make test LINES_BESIDE=yes` (above); its main classes are those the jar was
# just built from, so this sbt start compiles the tests only.
# It also publishes the line's Maven artifacts (publish-line), which the wheel's run on this line
# then resolves with spark-submit --packages (tests/test_maven_artifacts.py).
test-scala-then-lines:
	rm -rf $(LINE_MAVEN_DIR)
	$(PHASE) "sbt $(SPARK)" --sbt-steps "compile,tests,publish" -- $(SBT) Test/compile test publish
	$(MAKE) --no-print-directory test-lines MAVEN_PUBLISHED=$(SPARK)

# `make test` reaches every capability once, with generated suites sized for CI. `make test-full`
# adds the long runs: the generated suites at larger sizes, every setting of the sweeps that run one
# setting per case in CI (testing/Fuzz.scala), Spark's SQL corpus on every line with parameters
# bound both ways (SparkSqlCorpusSuite; CI runs it on the default line), the pytest tests marked
# `full` (a second path, through Python, to a capability a Scala suite already checks in CI), and the
# s3a:// tests on SeaweedFS instead of moto, so their races run too (HYPERSPACE_S3_SERVER, below).
FULL_SIZES := HYPERSPACE_FULL_SIZES=true HYPERSPACE_WHYNOT_QUERIES=500 HYPERSPACE_DELTA_FUZZ_CHECKS=4 HYPERSPACE_ALL_SETTINGS=true \
  HYPERSPACE_FUZZ_EXAMPLES=30 HYPERSPACE_SQL_CORPUS=full
SQL_CORPUS_SUITE := io.hyperspace.sql.SparkSqlCorpusSuite
# It publishes the line's Maven artifacts too, for the tests that build against them
# (tests/test_maven_artifacts.py, HYPERSPACE_REQUIRE_MAVEN=1).
test-full: setup s3-server
	rm -rf $(LINE_MAVEN_DIR)
	HYPERSPACE_S3_SERVER=seaweedfs $(FULL_SIZES) $(SBT) test package publish
	$(foreach l,$(OTHER_LINES),HYPERSPACE_SQL_CORPUS=full $(MAKE) --no-print-directory sbt SPARK=$(l) CMD="testOnly $(SQL_CORPUS_SUITE)" &&) true
	$(MAKE) --no-print-directory jar
	HYPERSPACE_S3_SERVER=seaweedfs HYPERSPACE_REQUIRE_MAVEN=1 $(FULL_SIZES) $(MAKE) --no-print-directory test-python PYTEST_MARKS=

# Every file of Spark's SQL corpus run statement by statement with and without Hyperspace (and
# again in a second plain session as the control), not only CI's sample: every file three times,
# too long for a routine target. `make sql-corpus-all SPARK=4.1` for another line.
sql-corpus-all: | $(SBT_LAUNCHER)
	HYPERSPACE_SQL_CORPUS=all $(SBT) "testOnly $(SQL_CORPUS_SUITE)"

test-scala: setup
	$(SBT) test

# Unit tests only, for the edit-test loop (< 3 minutes once the test classes are compiled; CI runs
# `make test`, which runs everything). Scala: the suites that start no SparkSession and no other
# JVM. Python: the modules that build no index over data (bindings, settings, sessions, the log
# reader, error translation, package layout) in the shared session, without the tests marked slow
# (another interpreter or JVM, a cluster, a benchmark) or chaos; tests/conftest.py registers both.
SCALA_UNIT_SUITES := io.hyperspace.log.LogEntrySuite io.hyperspace.indexed.IndexedPartitionSuite \
	io.hyperspace.index.dataskipping.BloomFilterSuite io.hyperspace.index.dataskipping.SketchSerdeSuite \
	io.hyperspace.index.BoundedCacheSuite io.hyperspace.rules.HybridScanPolicySuite io.hyperspace.index.ConfigJsonSuite
PY_UNIT_TESTS := tests/test_log_reader.py tests/test_config.py tests/test_session.py tests/test_package.py tests/test_install_name.py \
	tests/test_dataskipping_config.py tests/test_jvm_errors.py tests/test_code_layout.py
test-quick: setup jar
	$(SBT) "testOnly $(SCALA_UNIT_SUITES)"
	$(VPY) -m pytest $(PY_UNIT_TESTS) -q -ra -m "not slow and not chaos and not full"

# Two pytest-xdist workers (PYTEST_WORKERS=0 runs in this process): each module goes whole to one
# worker (tests/conftest.py), and a module's tests mostly wait on Spark, so two use CI's 2 cores;
# the units with a slow or chaos test are queued first (conftest.py says why), in that order.
PYTEST_MARKS ?= not full
PYTEST_WORKERS ?= 2
PYTEST_XDIST = $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder)
test-python: setup jar
	HYPERSPACE_PYTEST_TIMES=$(CURDIR)/target/pytest-times.tsv $(PHASE) "pytest $(SPARK)" -- $(VPY) -m pytest tests -q -ra --durations=25 $(PYTEST_XDIST) $(if $(PYTEST_MARKS),-m "$(PYTEST_MARKS)")

# The lines CI does not test in full get a representative subset (a few minutes each): the
# build, the extension and the Spark-line check, and suites spread over the lines by their shims
# (below): every rule's differential suite (covering filter/join/aggregate, data skipping), the
# index lifecycle, and Iceberg sources (the default line, 4.2, has no Iceberg runtime: this is where
# they run in CI). The Python side is then checked the way users get it (test-wheel): the one wheel,
# carrying every line's jar, installed into a fresh venv per line with exactly that line's pyspark,
# runs the package and its jar choice, and more on the other lines (below).
#
# The Scala Iceberg suites run on the newest line with an Iceberg runtime (ICEBERG_SCALA_LINES;
# `make test-lines ICEBERG_SCALA_LINES="4.0 4.1"` for every one): the Iceberg code is one source
# tree for every line, and the older runtime is still reached through tests/test_iceberg_sources.py
# in its wheel run.
iceberg_of    = $(or $(call version_of,iceberg.$(1)),$(call version_of,iceberg))
ICEBERG_LINES := $(foreach l,$(SPARK_LINES),$(if $(filter none,$(call iceberg_of,$(l))),,$(l)))
ICEBERG_SCALA_LINES ?= $(lastword $(ICEBERG_LINES))
ICEBERG_SCALA_SUITES := io.hyperspace.sources.IcebergSourceSuite io.hyperspace.sources.IcebergDeletesSuite \
	io.hyperspace.sources.IcebergDataSkippingSuite
# Every other line runs the core suites (the extension with its injected functions, the line check,
# the Parquet reader); eight more are spread over them. Data skipping's differential suite, the
# lifecycle, the rules' differential suite, the driver-side reads and the one-partition aggregates
# run on the oldest line, whose shims (Parquet files, sort aggregation, injected functions, file
# sink listings) differ most from the default line's: the middle line shares its other shims with
# the oldest or the newest, its injected functions are registered by the extension's suite, and its
# indexes are created and queried by the Iceberg suites. Bucket order and the broadcast probe, with
# no shim of their own, run on the newest other line (4.3). A suite that exists only for one line's
# shims (scala/src/test/scala-spark-<line>: 4.3's parser entry points) runs in that line's subset,
# and so do the driver-side reads on 4.3, whose planning combines a global aggregate's partial and
# final steps (AggregateSteps splits them again for the driver's read). The s3a:// suite (against
# moto) runs on the oldest line too: Spark 4.0's Hadoop (3.4.1) has no conditional create, and what
# it checks there is that an index log on s3a:// is refused naming Spark 4.1+.
# `make test-lines LINE_SPREAD=no` runs all eight on every line.
LINE_SCALA_SUITES := io.hyperspace.SparkLineSuite io.hyperspace.HyperspaceSparkSessionExtensionSuite \
	io.hyperspace.sql.SparkSqlUnchangedSuite \
	io.hyperspace.index.DriverParquetReaderSuite \
	$(if $(filter $(SPARK),$(ICEBERG_SCALA_LINES)),$(ICEBERG_SCALA_SUITES))
S3_SUITE := io.hyperspace.log.S3LogStoreSuite
OLDEST_LINE_SUITES := io.hyperspace.index.dataskipping.DataSkippingDifferentialSuite \
	io.hyperspace.actions.IndexLifecycleSuite io.hyperspace.rules.DifferentialSuite \
	io.hyperspace.execution.DriverIndexReadSuite io.hyperspace.rules.OnePartitionAggregateSuite $(S3_SUITE)
NEWEST_LINE_SUITES := io.hyperspace.execution.IndexBucketOrderSuite io.hyperspace.rules.BroadcastProbeIndexSuite
LINE_ONLY_SUITES.4.3 := io.hyperspace.sql.ParserEntryPoints43Suite io.hyperspace.execution.DriverIndexReadSuite
LINE_SCALA_SUITES += $(LINE_ONLY_SUITES.$(SPARK))
LINE_SPREAD ?= yes
spread_to = $(if $(or $(filter no,$(LINE_SPREAD)),$(filter $(SPARK),$(1))),$(2))
LINE_SCALA_SUITES += $(call spread_to,$(firstword $(NON_DEFAULT_LINES)),$(OLDEST_LINE_SUITES)) \
	$(call spread_to,$(lastword $(NON_DEFAULT_LINES)),$(NEWEST_LINE_SUITES))
# On the default line `make test` has just run every Python test from the source tree, spark-submit
# on a standalone cluster included (tests/test_cluster.py, with the very jar the wheel carries): the
# wheel needs only what installing changes, the package and its jar choice (sessions started with
# the wheel's jars). The newest other line adds the lifecycle through the Python API; the oldest the
# README's examples (which create, use and delete indexes) and Iceberg (its older runtime: the Scala
# Iceberg suites run on the newest line with one). Sessions without the jar or the extension
# (tests/test_session.py) are the package's own logic, whatever the line: `make test` runs them.
# `make test-lines LINE_SPREAD=no` runs every one of these on each line.
WHEEL_PY_TESTS := tests/test_package.py $(call spread_to,$(lastword $(NON_DEFAULT_LINES)),tests/test_lifecycle.py) \
	$(call spread_to,$(firstword $(NON_DEFAULT_LINES)),'tests/test_connect.py::test_readme_examples[classic]' \
	tests/test_iceberg_sources.py)
# A subset compiles only its own suites (HYPERSPACE_TEST_SUITES, build.sbt) beside the test support:
# the other ~100 suites' files would double the line's compile for classes no test here loads.
# The differential suites draw 20 generated queries here (DifferentialSuite 40 on the default line): the other
# lines share the rules' code, so what differs between lines is reached by the first few.
LINE_FUZZ_QUERIES ?= 20
# The s3a:// suite's server, moto, runs from the default line's venv whatever the line under test.
test-line-scala: | $(SBT_LAUNCHER)
	rm -f $(SUITE_TIMES)
	$(if $(filter $(S3_SUITE),$(LINE_SCALA_SUITES)),$(MAKE) --no-print-directory setup SPARK=$(SPARK_DEFAULT))
	HYPERSPACE_TEST_SUITES="$(LINE_SCALA_SUITES)" HYPERSPACE_FUZZ_QUERIES=$(LINE_FUZZ_QUERIES) $(PHASE) "sbt $(SPARK) subset" --sbt-steps "compile,tests,package" -- \
	  $(SBT) Test/compile "testOnly $(LINE_SCALA_SUITES)" package
	$(MAKE) --no-print-directory jar
	$(MAKE) --no-print-directory check-spark-patches

# MAVEN_PUBLISHED=<line> (test-scala-then-lines): that line's Maven artifacts were just published, and
# its wheel run resolves them with spark-submit --packages, failing if they are missing.
MAVEN_PUBLISHED ?=
maven_tests = $(if $(filter $(SPARK),$(MAVEN_PUBLISHED)),tests/test_maven_artifacts.py)
maven_test_env = $(if $(filter $(SPARK),$(MAVEN_PUBLISHED)),HYPERSPACE_REQUIRE_MAVEN=1)
# The built wheel (dist/) in a new venv of this line; pytest imports hyperspace from the venv's
# site-packages (tests/ puts nothing of python/ on the path), so the wheel's own files are tested.
WHEEL_VENV := .venv-wheel-$(SPARK)
test-wheel:
	@ls dist/*.whl >/dev/null || { echo "no wheel in dist/: run make wheel first"; exit 1; }
	rm -rf $(WHEEL_VENV)
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHASE) "wheel venv $(SPARK)" -- $(WHEEL_VENV)/bin/python $(PIP_INSTALL) "$$(ls dist/*.whl)[test]" pyspark==$(SPARK_VERSION)
	$(WHEEL_VENV)/bin/python -c 'import hyperspace, sys; sys.exit("hyperspace imported from the source tree, not the wheel: " + hyperspace.__file__ if "site-packages" not in hyperspace.__file__ else 0)'
	rm -f target/pytest-times-wheel-$(SPARK).tsv
	HYPERSPACE_PYTEST_TIMES=$(CURDIR)/target/pytest-times-wheel-$(SPARK).tsv $(maven_test_env) $(PHASE) "wheel pytest $(SPARK)" -- \
	  $(WHEEL_VENV)/bin/python -m pytest $(WHEEL_PY_TESTS) $(maven_tests) -q -ra --durations=5 $(PYTEST_XDIST)

# Each line's subset ends with check-spark-patches (below): its jar links on the patches listed.
# LINES narrows the lines whose Scala subset runs (`LINES=` none, when `make test LINES_BESIDE=yes`
# ran them); the wheel is checked on every line.
LINES ?= $(OTHER_LINES)
line-subsets:
	$(foreach l,$(LINES),$(MAKE) --no-print-directory test-line-scala SPARK=$(l) &&) true

test-lines: line-subsets
	$(MAKE) --no-print-directory wheel
	$(foreach l,$(SPARK_LINES),$(MAKE) --no-print-directory test-wheel SPARK=$(l) &&) true

# ---- Spark patches -----------------------------------------------------------------------
# The line's jar links on each patch of its line that spark.patches.<line> lists (the oldest and the
# newest on PyPI): every class and member it uses outside the JDK (Spark, Parquet, Hadoop, Jackson,
# Scala, Delta, Iceberg, ...) exists there with the same signature (tools/spark_patches.py), so a
# member one patch lacks fails here, not in the middle of a user's query. A few seconds a line once
# each patch's jars are in $(HS_CACHE)/spark-patches/ (the first run downloads each patch's pyspark
# sdist once, about a minute each). `make check-spark-patches-lines` checks every line.
.PHONY: check-spark-patches check-spark-patches-lines
check-spark-patches: $(JAR)
	$(PHASE) "spark patches $(SPARK)" -- $(PYTHON) tools/spark_patches.py --line $(SPARK) --jar $(JAR) --cache $(HS_CACHE)

check-spark-patches-lines:
	$(foreach l,$(SPARK_LINES),$(MAKE) --no-print-directory check-spark-patches SPARK=$(l) &&) true

# The line's jar run on the other patches spark.patches.<line> lists, each in a venv of its own with
# only that pyspark (kept in $(HS_CACHE)/patch-venvs/): the session starts and a lookup through an
# index, read in the driver, equals Hyperspace off; plus the check above on the jar the venv loads.
.PHONY: test-spark-patches
test-spark-patches: setup jar
	HS_CACHE=$(HS_CACHE) $(PHASE) "pytest spark patches $(SPARK)" -- $(VPY) -m pytest tests/test_spark_patches.py -q -ra --durations=5

# The S3 server the s3a:// tests (S3LogStoreSuite, tests/test_s3.py) start on 127.0.0.1, by what the
# run needs (docs/object-stores.md; testing/S3Server.scala, tests/s3_server.py):
# - moto, in `make test` (CI) and every target that does not say otherwise: a pip package of the test
#   venv (versions.properties `moto`), nothing to build. It answers a conditional PUT of an existing
#   key with 412 but does not serialise racing conditional writes, so the tests whose claim is that a
#   race has exactly one winner are skipped there with that reason;
# - seaweedfs, in `make test-s3` and `make test-full`: SeaweedFS, which evaluates If-None-Match under a
#   per-key lock, so the races run too. Built once per machine with Go into $(HS_CACHE)/seaweedfs/
#   (about 6.5 minutes and 480 CPU seconds on a clean machine: why CI does not use it); `make s3-server`
#   builds it ahead, and the tests build it themselves when it is missing.
# `make test HYPERSPACE_S3_SERVER=seaweedfs` runs CI's tests with SeaweedFS, races included.
HYPERSPACE_S3_SERVER ?= moto
export HYPERSPACE_S3_SERVER
.PHONY: s3-server
s3-server:
	HS_CACHE=$(HS_CACHE) bash tests/s3/seaweedfs.sh

# Both s3a:// test files against SeaweedFS, races included.
.PHONY: test-s3
test-s3: setup jar s3-server
	HYPERSPACE_S3_SERVER=seaweedfs $(SBT) "testOnly io.hyperspace.log.S3LogStoreSuite"
	HYPERSPACE_S3_SERVER=seaweedfs $(VPY) -m pytest tests/test_s3.py -q -ra

# One sbt command, e.g. make sbt CMD='testOnly io.hyperspace.rules.DifferentialSuite'
CMD ?= compile
sbt: | $(SBT_LAUNCHER)
	$(SBT) "$(CMD)"

# Long differential runs with fresh seeds (CI runs the same suites with a fixed seed).
FUZZ_QUERIES ?= 2000
FUZZ_SEED ?= $(shell date +%s)
fuzz: setup jar
	HYPERSPACE_FUZZ_SEED=$(FUZZ_SEED) HYPERSPACE_FUZZ_QUERIES=$(FUZZ_QUERIES) \
	  $(SBT) "testOnly io.hyperspace.rules.DifferentialSuite io.hyperspace.execution.DriverReadDifferentialSuite \
	    io.hyperspace.rules.OnePartitionAggregateSuite io.hyperspace.maintenance.HybridScanSuite \
	    io.hyperspace.dataskipping.DataSkippingEndToEndDifferentialSuite \
	    io.hyperspace.index.dataskipping.DataSkippingDifferentialSuite io.hyperspace.index.split.SplitIndexSuite \
	    io.hyperspace.index.split.SplitJoinPruningSuite io.hyperspace.index.zorder.ZOrderCoveringIndexSuite"
	HYPERSPACE_FUZZ_EXAMPLES=$(FUZZ_QUERIES) $(VPY) -m pytest tests/test_optimizer.py -q

# More rounds of the chaos suite (kills, races, queries beside vacuum) with a fresh seed; CI runs
# one round with a fixed seed as part of `make test`.
CHAOS_ROUNDS ?= 5
CHAOS_SEED ?= $(shell date +%s)
chaos: setup jar
	HYPERSPACE_CHAOS_ROUNDS=$(CHAOS_ROUNDS) HYPERSPACE_CHAOS_SEED=$(CHAOS_SEED) \
	  $(VPY) -m pytest tests/test_chaos.py -q -ra

# ---- demo / bench ------------------------------------------------------------------------

demo: setup jar
	$(VPY) -m hyperspace.demo

# TPC-H SF1 side by side (no index / Hyperspace / hand-tuned); results in benchmarks/results/
# (each run records its Spark version). `make bench SPARK=4.1` runs it on another line, with its
# results in benchmarks/results/spark-4.1/ (the default line's are not overwritten).
BENCH_ARGS ?=
BENCH_RESULTS := $(if $(filter $(SPARK),$(SPARK_DEFAULT)),,--results-dir benchmarks/results/spark-$(SPARK))
bench: setup jar
	$(VPY) -m benchmarks $(BENCH_RESULTS) $(BENCH_ARGS)

# A tiny run of every suite: checks the harness, asserts nothing about timings.
bench-quick: setup jar
	$(VPY) -m benchmarks --quick --name quick --results-dir benchmarks/data/quick-results

# TPC-DS (issue #55): Spark's own TPC-DS queries, read from the line's spark-sql test-sources jar
# (fetched by sbt's sqlCorpusJar task), over tpcgen-cli data. `make bench-tpcds BENCH_ARGS='--sf 0.1'`.
sql-corpus-jar: | $(SBT_LAUNCHER)
	$(SBT) -error 'print sqlCorpusJar'

bench-tpcds: setup jar sql-corpus-jar
	$(VPY) -m benchmarks --suite tpcds $(BENCH_RESULTS) $(BENCH_ARGS)

clean:
	rm -rf target project/target project/project dist python/build python/*.egg-info \
	  python/hyperspace/jars/*.jar .venv .venv-* .pytest_cache
