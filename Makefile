# Hyperspace for Spark 4 — every target installs what it needs itself, so `make demo` and
# `make test` each work as the first command on a fresh clone.
#
# Only PyPI and Maven Central are contacted: sbt is bootstrapped from the
# org.scala-sbt:sbt-launch jar on Maven Central and told (project/repositories +
# sbt.override.build.repos) to resolve everything from `local` and Maven Central alone.

SHELL := /bin/bash
.DEFAULT_GOAL := help

version_of = $(shell sed -n 's/^$(1)=//p' versions.properties)
HS_VERSION    := $(call version_of,hyperspace)
SPARK_VERSION := $(call version_of,spark)
SPARK_LINE    := $(shell echo $(SPARK_VERSION) | cut -d. -f1-2)
SBT_VERSION   := $(call version_of,sbt)

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python

# Downloads live in the user cache so later runs and CI on the same machine reuse them.
HS_CACHE     ?= $(HOME)/.cache/hyperspace-build
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
	-jar $(SBT_LAUNCHER)

JAR_NAME  := hyperspace-spark$(SPARK_LINE)_2.13-$(HS_VERSION).jar
JAR       := target/scala-2.13/$(JAR_NAME)
PKG_JAR   := python/hyperspace/jars/$(JAR_NAME)
SCALA_SRC := $(shell find scala/src/main -type f 2>/dev/null) build.sbt versions.properties

.PHONY: help setup build jar wheel fmt lint lint-scala test test-quick test-scala test-python sbt fuzz chaos demo bench \
	bench-quick clean

help:
	@echo "make demo   - build everything and run the end-to-end demo"
	@echo "make test   - build everything and run all tests (sbt, then pytest)"
	@echo "make test-quick - unit tests only (< 3 min): Scala suites without Spark, pytest's unit modules"
	@echo "make lint   - ruff (check + format --check) and mypy --strict; CI runs it before the tests"
	@echo "make fmt    - apply ruff's import order and format, and scalafmt to the Scala sources"
	@echo "make setup  - create .venv, install the Python package (editable) and fetch sbt"
	@echo "make build  - build the jar and the wheel (dist/)"
	@echo "make sbt CMD='testOnly <suite>' - one sbt command (e.g. a single suite)"
	@echo "make fuzz   - long differential runs (FUZZ_QUERIES=2000, FUZZ_SEED=<now>)"
	@echo "make chaos  - more rounds of the kill/race/vacuum chaos suite (CHAOS_ROUNDS=5, CHAOS_SEED=<now>)"
	@echo "make bench  - TPC-H benchmarks at SF1 (BENCH_ARGS='--sf 2 --suite tpch' ...)"
	@echo "make bench-quick - a tiny smoke run of every benchmark suite"
	@echo "make clean  - remove build outputs (keeps the download cache in $(HS_CACHE))"

# ---- setup -------------------------------------------------------------------------------

setup: $(VENV)/.installed $(SBT_LAUNCHER)

$(VENV)/.installed: python/pyproject.toml python/setup.py versions.properties
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e 'python[test,bench,dev]'
	touch $@

$(SBT_LAUNCHER):
	mkdir -p $(HS_CACHE)
	curl -fsSL --retry 3 -o $@.part \
	  $(MAVEN_CENTRAL)/org/scala-sbt/sbt-launch/$(SBT_VERSION)/sbt-launch-$(SBT_VERSION).jar
	mv $@.part $@

# ---- build -------------------------------------------------------------------------------

jar: $(PKG_JAR)

$(JAR): $(SCALA_SRC) | $(SBT_LAUNCHER)
	$(SBT) package

# The jar ships inside the Python package (hyperspace/jars/), for the wheel and editable installs.
$(PKG_JAR): $(JAR)
	rm -f python/hyperspace/jars/*.jar
	mkdir -p python/hyperspace/jars
	cp $(JAR) $@

wheel: $(PKG_JAR) $(VENV)/.installed
	rm -rf dist python/build
	$(VPY) -m pip wheel --quiet --no-deps -w dist ./python
	rm -rf python/build
	@ls dist/*.whl

build: setup jar wheel

# ---- style -------------------------------------------------------------------------------
# Settings: ruff.toml (ruff), python/pyproject.toml [tool.mypy], .scalafmt.conf (scalafmt).

PY_SOURCES := python tests benchmarks
RUFF := $(VENV)/bin/ruff

# `make lint LINT_SCALA=0` skips the scalafmt check (it starts sbt) for a Python-only change.
LINT_SCALA ?= 1

lint: $(VENV)/.installed
	$(RUFF) check $(PY_SOURCES)
	$(RUFF) format --check $(PY_SOURCES)
	$(VENV)/bin/mypy --config-file python/pyproject.toml python/hyperspace
ifeq ($(LINT_SCALA),1)
	$(MAKE) --no-print-directory lint-scala
endif

lint-scala: | $(SBT_LAUNCHER)
	$(SBT) scalafmtCheckAll scalafmtSbtCheck

fmt: $(VENV)/.installed | $(SBT_LAUNCHER)
	$(RUFF) check --select I --fix $(PY_SOURCES)
	$(RUFF) format $(PY_SOURCES)
	$(SBT) scalafmtAll scalafmtSbt

# ---- test --------------------------------------------------------------------------------

test: setup
	$(SBT) test package
	$(MAKE) --no-print-directory jar
	$(MAKE) --no-print-directory test-python

test-scala: setup
	$(SBT) test

# Unit tests only, for the edit-test loop (< 3 minutes once the test classes are compiled; CI runs
# `make test`, which runs everything). Scala: the suites that start no SparkSession and no other
# JVM. Python: the modules that build no index over data (bindings, settings, sessions, the log
# reader, error translation, package layout) in the shared session, without the tests marked slow
# (another interpreter or JVM, a cluster, a benchmark) or chaos; tests/conftest.py registers both.
SCALA_UNIT_SUITES := io.hyperspace.log.LogEntrySuite io.hyperspace.indexed.IndexedPartitionSuite \
	io.hyperspace.index.dataskipping.BloomFilterSuite io.hyperspace.index.dataskipping.SketchSerdeSuite \
	io.hyperspace.index.BoundedCacheSuite io.hyperspace.rules.HybridScanPolicySuite
PY_UNIT_TESTS := tests/test_log_reader.py tests/test_config.py tests/test_session.py tests/test_package.py \
	tests/test_dataskipping_config.py tests/test_jvm_errors.py tests/test_code_layout.py
test-quick: setup jar
	$(SBT) "testOnly $(SCALA_UNIT_SUITES)"
	$(VPY) -m pytest $(PY_UNIT_TESTS) -q -ra -m "not slow and not chaos"

test-python: setup jar
	$(VPY) -m pytest tests -q -ra --durations=15

# One sbt command, e.g. make sbt CMD='testOnly io.hyperspace.rules.DifferentialSuite'
CMD ?= compile
sbt: | $(SBT_LAUNCHER)
	$(SBT) "$(CMD)"

# Long differential runs with fresh seeds (CI runs the same suites with a fixed seed).
FUZZ_QUERIES ?= 2000
FUZZ_SEED ?= $(shell date +%s)
fuzz: setup jar
	HYPERSPACE_FUZZ_SEED=$(FUZZ_SEED) HYPERSPACE_FUZZ_QUERIES=$(FUZZ_QUERIES) \
	  $(SBT) "testOnly io.hyperspace.rules.DifferentialSuite"
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

# TPC-H SF1 side by side (no index / Hyperspace / hand-tuned); results in benchmarks/results/.
BENCH_ARGS ?=
bench: setup jar
	$(VPY) -m benchmarks $(BENCH_ARGS)

# A tiny run of every suite: checks the harness, asserts nothing about timings.
bench-quick: setup jar
	$(VPY) -m benchmarks --quick --name quick --results-dir benchmarks/data/quick-results

clean:
	rm -rf target project/target project/project dist python/build python/*.egg-info \
	  python/hyperspace/jars/*.jar $(VENV) .pytest_cache
