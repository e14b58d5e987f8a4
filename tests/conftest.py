"""Shared fixtures: one SparkSession for the whole pytest run, built the way a user builds one."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from hyperspace import configure_spark_with_hyperspace

REPO = Path(__file__).resolve().parent.parent

# Everything on one machine: bind Spark to loopback, and let executors use this interpreter.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: kills and races real processes (tests/test_chaos.py; `make chaos` runs more rounds)"
    )
    config.addinivalue_line(
        "markers",
        "slow: starts a standalone cluster, a whole benchmark or demo run, or another interpreter "
        "or JVM of its own (left out by `make test-quick`; `make test` runs it)",
    )
    config.addinivalue_line(
        "markers",
        "ivy: resolves Maven packages through Spark's Ivy (spark.jars.packages), whose cache does not "
        "take two resolutions at once: these modules run one after another in one pytest-xdist worker",
    )
    config.addinivalue_line(
        "markers",
        "full: a second path, through Python, to a capability a Scala suite checks in every CI run "
        "(the test names it); only `make test-full` runs it",
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist's ``--dist loadgroup`` (``make test-python``) a module is the unit a worker
    takes: its module-scoped fixtures (a table, a JVM) are built once, and its tests run in file
    order (test_optimizer.py checks after its property what the property saw). The modules marked
    ``ivy`` are one unit. A test that names its own ``xdist_group`` (independent processes, no
    module fixture, e.g. the benchmark smoke runs) keeps it, so such tests can go to both workers.

    The units holding a test marked ``slow`` or ``chaos`` (another JVM, process or cluster: minutes
    each) are queued first, in file order, the rest after them (``make test-python`` passes
    ``--no-loadscope-reorder``, so xdist keeps this order rather than putting the units of many tests
    first): the long units start while the short ones remain to even out the two workers, instead of
    one long unit ending the run on one worker while the other idles."""
    group_of: dict[str, str] = {}
    for item in items:
        if item.get_closest_marker("ivy"):
            group = "ivy"
        elif (own := item.get_closest_marker("xdist_group")) is not None:
            group_of[item.nodeid] = own.args[0] if own.args else own.kwargs.get("name", "default")
            continue
        else:
            group = item.nodeid.split("::", 1)[0]
        group_of[item.nodeid] = group
        item.add_marker(pytest.mark.xdist_group(group))
    long_units = {
        group_of[item.nodeid] for item in items if item.get_closest_marker("slow") or item.get_closest_marker("chaos")
    }
    items.sort(key=lambda item: group_of[item.nodeid] not in long_units)  # stable: file order kept


def _tree_cpu_seconds() -> float:
    """CPU seconds of this process, of the children it has waited for, and of every live
    descendant (the session's JVM, a test's interpreter or cluster, and what they waited for)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while being read
            continue
        pid = int(stat.parent.name)
        children.setdefault(int(fields[1]), []).append(pid)  # fields[1]: ppid
        ticks[pid] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    pending, live = list(children.get(os.getpid(), [])), 0
    while pending:
        pid = pending.pop()
        live += ticks.get(pid, 0)
        pending.extend(children.get(pid, []))
    return total + live / os.sysconf("SC_CLK_TCK")


# HYPERSPACE_PYTEST_TIMES (the Makefile sets it): each test's module, wall and CPU seconds appended
# to that file, which .ci/report.py sums per module. Linux's /proc gives the descendants' CPU.
_TIMES_FILE = os.environ.get("HYPERSPACE_PYTEST_TIMES") if sys.platform == "linux" else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _TIMES_FILE:
        yield
        return
    wall, cpu = time.monotonic(), _tree_cpu_seconds()
    yield
    line = f"{item.nodeid.split('::', 1)[0]}\t{time.monotonic() - wall:.2f}\t{_tree_cpu_seconds() - cpu:.2f}\n"
    with open(_TIMES_FILE, "a") as f:  # one short append per test: both xdist workers write here
        f.write(line)


def versions() -> dict[str, str]:
    """The pins of versions.properties, with those of the installed pyspark's Spark line
    (``spark.4.1``, ``delta.4.1``, ...) also under their plain key (``spark``, ``delta``)."""
    pairs = (
        line.split("=", 1)
        for line in (REPO / "versions.properties").read_text().splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    )
    pins = {k.strip(): v.strip() for k, v in pairs}
    suffix = "." + ".".join(pyspark.__version__.split(".")[:2])
    return {**pins, **{k.removesuffix(suffix): v for k, v in pins.items() if k.endswith(suffix)}}


@pytest.fixture(scope="session")
def work_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hyperspace-sparktest-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(work_dir: Path) -> Iterator[SparkSession]:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hyperspace-sparktest")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(work_dir / "warehouse"))
        .config("spark.driver.host", "127.0.0.1")
    )
    session = configure_spark_with_hyperspace(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# For a test's subprocess whose JVMs (spark-submit's launcher, the driver) live for one short run
# over tiny data, as tests/chaos_worker.py sets for its own: the C2 compiler and the parallel GC's
# threads would spend much of their CPU on a warm-up that never pays, CPU taken on CI's two cores
# from the tests beside them. The java launcher reads JDK_JAVA_OPTIONS (it says so on stderr).
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def short_jvm_env(**extra: str) -> dict[str, str]:
    """This process's environment for such a subprocess, plus ``extra``."""
    options = f"{os.environ.get('JDK_JAVA_OPTIONS', '')} {SHORT_JVM_OPTIONS}".strip()
    return {**os.environ, "JDK_JAVA_OPTIONS": options, **extra}


def run_python(code: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter (its own JVM, sized for a short run), capturing output."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(REPO),
        env=short_jvm_env(PYTHONUNBUFFERED="1"),
    )
