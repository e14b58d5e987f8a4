"""Chaos: operations killed with SIGKILL at random points, two processes racing conflicting
operations, and queries running while another process refreshes and vacuums.

What must hold every time (docs/reliability.md):
- no source file and no file outside the index's own directory changes;
- every outcome is a success or a clear HyperspaceException, never anything else;
- after a kill, the index is readable at its last stable version (``cancel`` rolls a stuck
  operation back), and queries with Hyperspace give the rows they give without it;
- a query never returns a wrong row and never fails because of a concurrent refresh or vacuum.

CI runs one round with a fixed seed (a few minutes); ``make chaos`` runs more rounds with a
fresh seed (``HYPERSPACE_CHAOS_ROUNDS``, ``HYPERSPACE_CHAOS_SEED``). The seed is in every failure
message, so a failing interleaving can be replayed.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conftest import REPO
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace
from hyperspace import log as hslog

pytestmark = pytest.mark.chaos

ROUNDS = int(os.environ.get("HYPERSPACE_CHAOS_ROUNDS", "1"))
SEED = int(os.environ.get("HYPERSPACE_CHAOS_SEED", "20261123"))
WORKER = str(REPO / "tests" / "chaos_worker.py")
# How long after an operation starts the kill may land: long enough to reach the data write of a
# build on this small source, short enough that most kills interrupt something.
KILL_WINDOW_S = 2.5

STABLE = {"ACTIVE", "DELETED", "DOESNOTEXIST"}


# ---- the lake ------------------------------------------------------------------------------


class Lake:
    """A source table, the system path, and a user's directory beside the indexes."""

    def __init__(self, root: Path, spark: SparkSession) -> None:
        self.root = root
        self.source = root / "src"
        self.system_path = root / "indexes"
        # A user's directory inside the system path that is not an index: nothing may touch it.
        self.foreign = self.system_path / "not_an_index"
        self.foreign.mkdir(parents=True)
        (self.foreign / "notes.txt").write_text("user data, not Hyperspace's\n")
        self.spark = spark
        self.appended = 0
        self.write_rows(0, 6000, files=6, mode="overwrite")

    def write_rows(self, start: int, end: int, files: int, mode: str = "append") -> None:
        (
            self.spark.range(start, end, 1, files)
            .selectExpr("CAST(id % 997 AS INT) AS k", "id AS v")
            .write.mode(mode)
            .parquet(str(self.source))
        )

    def append(self) -> None:
        """Appends one file of new rows (some with keys the chaos queries read)."""
        base = 100_000 * (self.appended + 1)
        self.appended += 1
        self.write_rows(base, base + 500, files=1)

    def snapshot(self) -> dict[str, tuple[int, str]]:
        """Every file outside the indexes' own directories: relative path → (size, sha1)."""
        files = {}
        for top in (self.source, self.foreign):
            for path in sorted(top.rglob("*")):
                if path.is_file():
                    files[str(path.relative_to(self.root))] = (
                        path.stat().st_size,
                        hashlib.sha1(path.read_bytes()).hexdigest(),
                    )
        return files


@pytest.fixture()
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[Lake]:
    lake = Lake(tmp_path, spark)
    conf = HyperspaceConfig(spark)
    with conf.override(system_path=str(lake.system_path), num_buckets=4, lineage_enabled=True):
        yield lake
    disable_hyperspace(spark)


def answers(spark: SparkSession, source: Path) -> list[list[tuple]]:
    sys.path.insert(0, str(REPO / "tests"))
    from chaos_worker import answers as worker_answers

    return worker_answers(spark, str(source))


def expected_answers(spark: SparkSession, lake: Lake) -> list[list[tuple]]:
    disable_hyperspace(spark)
    try:
        return answers(spark, lake.source)
    finally:
        enable_hyperspace(spark)


# ---- worker processes ----------------------------------------------------------------------


class WorkerProcess:
    """A chaos_worker.py process in its own process group (its JVM dies with it). Its stdout
    lines arrive in ``lines`` (``None`` once the process has ended); its stderr is in ``log``."""

    def __init__(self, log: Path) -> None:
        self.log = log
        # The worker writes its stderr to the log through its own copy of the descriptor.
        with open(log, "w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=str(REPO),
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, command: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the worker died while starting: the test reads why from its log

    def alive(self) -> bool:
        return self.proc.poll() is None


class WorkerPool:
    """Worker processes started ahead of need.

    A worker spends most of its life starting its JVM, so a few are kept started and waiting
    for a command: a test takes one whose JVM is up, and a replacement starts while the test
    runs. A worker whose command ended on its own (not killed) comes back and serves another
    test. Workers never taken exit when the pool closes (their stdin ends).
    """

    WARM = 2  # a race takes two at once

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started = 0
        self.idle: list[WorkerProcess] = []

    def take(self) -> WorkerProcess:
        while len(self.idle) < self.WARM + 1:
            self.started += 1
            self.idle.append(WorkerProcess(self.log_dir / f"worker-{self.started}.log"))
        return self.idle.pop(0)

    def give_back(self, process: WorkerProcess) -> None:
        # First in line: its JVM is up, unlike a replacement that may still be starting.
        self.idle.insert(0, process)

    def close(self) -> None:
        for process in self.idle:
            assert process.proc.stdin is not None
            process.proc.stdin.close()
        for process in self.idle:
            try:
                process.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.proc.pid, signal.SIGKILL)
        self.idle = []


_pool: WorkerPool | None = None


@pytest.fixture(scope="module", autouse=True)
def worker_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerPool]:
    global _pool
    _pool = WorkerPool(tmp_path_factory.mktemp("chaos-workers"))
    yield _pool
    _pool.close()
    _pool = None


class Worker:
    """One operation run by a worker process from the pool."""

    def __init__(self, lake: Lake, op: str, name: str, **extra: object) -> None:
        assert _pool is not None
        self.process = _pool.take()
        self.proc = self.process.proc
        self.log = self.process.log
        self.lines: list[str] = []
        self.exit_code: int | None = None
        self.go = threading.Event()
        self.done = threading.Event()
        threading.Thread(target=self._follow, daemon=True).start()
        self.process.send(
            {"op": op, "name": name, "source": str(lake.source), "system_path": str(lake.system_path), **extra}
        )

    def _follow(self) -> None:
        while (line := self.process.lines.get()) is not None:
            if line == "READY":
                continue
            self.lines.append(line)
            if line.startswith("GO"):
                self.go.set()
            if line.startswith("EXIT "):
                self.exit_code = int(line.split()[1])
                break
        self.go.set()  # the operation or the process ended (before or after GO)
        self.done.set()

    def kill(self) -> None:
        """SIGKILLs the whole group and waits until its processes are gone: the JVM is a child of
        the worker, and `cancel` rightly refuses while the owning JVM is still alive."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.proc.wait()
        for _ in range(600):
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            threading.Event().wait(0.05)

    def wait(self, timeout: float = 240) -> int:
        """The operation's exit code (see chaos_worker.py), or the process's if it died first."""
        if not self.done.wait(timeout):
            self.kill()
        self.done.wait(10)
        if self.exit_code is None:
            return self.proc.wait()
        if self.exit_code in (0, 3) and self.process.alive():
            assert _pool is not None
            _pool.give_back(self.process)
        return self.exit_code

    def describe(self) -> str:
        tail = self.log.read_text()[-3000:] if self.log.exists() else ""
        return f"stdout: {self.lines}\nstderr (tail): {tail}"


def kill_during(lake: Lake, op: str, name: str, rng: random.Random, **extra: object) -> int:
    """Starts ``op`` in a worker and SIGKILLs it at a random point after it starts, unless the
    operation ends first (then the worker serves another test)."""
    worker = Worker(lake, op, name, **extra)
    assert worker.go.wait(timeout=180), f"the {op} worker never started\n{worker.describe()}"
    if not worker.done.wait(rng.uniform(0, KILL_WINDOW_S)):
        worker.kill()
    return worker.wait()


# ---- invariants ----------------------------------------------------------------------------


def latest_state(lake: Lake, name: str) -> str:
    """The state of the newest log entry (from the files, as any reader would see them)."""
    index_dir = lake.system_path / name
    if not (index_dir / "_hyperspace_log").exists():
        return "DOESNOTEXIST"
    entries = hslog.read_log(str(index_dir))
    return entries[-1].state if entries else "DOESNOTEXIST"


def recover(hs: Hyperspace, lake: Lake, name: str, context: str) -> str:
    """Rolls back an operation the kill left unfinished; returns the stable state reached."""
    state = latest_state(lake, name)
    if state not in STABLE:
        hs.cancel(name)
        state = latest_state(lake, name)
    assert state in STABLE, f"{context}: the index is still {state} after cancel"
    return state


def assert_queries_correct(spark: SparkSession, lake: Lake, context: str) -> None:
    expected = expected_answers(spark, lake)
    enable_hyperspace(spark)
    got = answers(spark, lake.source)
    assert got == expected, f"{context}: rows differ with Hyperspace on"


def assert_index_usable(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str, context: str) -> None:
    """The recovered index works: an ACTIVE one refreshes and answers queries correctly."""
    state = recover(hs, lake, name, context)
    listed = {r["name"]: r["state"] for r in hs.indexes().collect()}
    if state == "DOESNOTEXIST":
        assert name not in listed, f"{context}: a nonexistent index is listed: {listed}"
    else:
        assert listed.get(name) == state, f"{context}: indexes() says {listed}, the log {state}"
    if state == "ACTIVE":
        hs.refresh_index(name, "full")
        assert_queries_correct(spark, lake, context)


# ---- setups: bring the index to the state each operation starts from ------------------------


def setup_nothing(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str) -> None:
    pass


def setup_active(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str) -> None:
    hs.create_index(spark.read.parquet(str(lake.source)), IndexConfig(name, ["k"], ["v"]))


def setup_stale(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str) -> None:
    setup_active(spark, hs, lake, name)
    lake.append()


def setup_fragmented(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str) -> None:
    setup_stale(spark, hs, lake, name)
    hs.refresh_index(name, "incremental")


def setup_deleted(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str) -> None:
    setup_active(spark, hs, lake, name)
    hs.delete_index(name)


def setup_stuck(spark: SparkSession, hs: Hyperspace, lake: Lake, name: str) -> None:
    """An index whose refresh was killed mid-way: what cancel starts from."""
    setup_stale(spark, hs, lake, name)
    worker = Worker(lake, "refresh", name, mode="full")
    assert worker.go.wait(timeout=180), worker.describe()
    # Kill only once the REFRESHING entry is written, so there is something to cancel.
    deadline = threading.Event()
    for _ in range(600):
        if latest_state(lake, name) == "REFRESHING" or worker.done.is_set():
            break
        deadline.wait(0.05)
    worker.kill()
    worker.wait()


KILLED_OPERATIONS: list[tuple[str, str, dict, Callable]] = [
    ("create", "create", {}, setup_nothing),
    ("create-skipping", "create-skipping", {}, setup_nothing),
    ("refresh-full", "refresh", {"mode": "full"}, setup_stale),
    ("refresh-incremental", "refresh", {"mode": "incremental"}, setup_stale),
    ("refresh-quick", "refresh", {"mode": "quick"}, setup_stale),
    ("optimize-full", "optimize", {"mode": "full"}, setup_fragmented),
    ("optimize-quick", "optimize", {"mode": "quick"}, setup_fragmented),
    ("delete", "delete", {}, setup_active),
    ("restore", "restore", {}, setup_deleted),
    ("vacuum-deleted", "vacuum", {}, setup_deleted),
    ("vacuum-active", "vacuum", {}, setup_fragmented),
    ("cancel", "cancel", {}, setup_stuck),
]


@pytest.mark.parametrize("label, op, extra, setup", KILLED_OPERATIONS, ids=[k[0] for k in KILLED_OPERATIONS])
def test_kill_during_operation(
    spark: SparkSession, lake: Lake, label: str, op: str, extra: dict, setup: Callable
) -> None:
    hs = Hyperspace(spark)
    for round_no in range(ROUNDS):
        rng = random.Random(f"{SEED}-{label}-{round_no}")
        name = f"chaos_{label.replace('-', '_')}_{round_no}"
        context = f"kill during {label} (seed {SEED}, round {round_no})"
        setup(spark, hs, lake, name)
        before = lake.snapshot()
        code = kill_during(lake, op, name, rng, **extra)
        assert code in (0, 3, -signal.SIGKILL), f"{context}: worker exited {code}"
        assert lake.snapshot() == before, f"{context}: files outside the index changed"
        assert_index_usable(spark, hs, lake, name, context)
        assert lake.snapshot() == before, f"{context}: recovery changed files outside the index"


# ---- racing processes ----------------------------------------------------------------------

RACES: list[tuple[str, tuple[str, dict], tuple[str, dict], Callable]] = [
    ("create-vs-create", ("create", {}), ("create", {}), setup_nothing),
    ("refresh-vs-delete", ("refresh", {"mode": "full"}), ("delete", {}), setup_stale),
    ("optimize-vs-refresh", ("optimize", {"mode": "full"}), ("refresh", {"mode": "incremental"}), setup_fragmented),
    ("vacuum-vs-restore", ("vacuum", {}), ("restore", {}), setup_deleted),
    ("refresh-vs-refresh", ("refresh", {"mode": "incremental"}), ("refresh", {"mode": "full"}), setup_stale),
]


@pytest.mark.parametrize("label, first, second, setup", RACES, ids=[r[0] for r in RACES])
def test_racing_operations(
    spark: SparkSession, lake: Lake, label: str, first: tuple, second: tuple, setup: Callable
) -> None:
    hs = Hyperspace(spark)
    for round_no in range(ROUNDS):
        name = f"race_{label.replace('-', '_')}_{round_no}"
        context = f"race {label} (round {round_no})"
        setup(spark, hs, lake, name)
        before = lake.snapshot()
        workers = [Worker(lake, op, name, **extra) for op, extra in (first, second)]
        codes = [w.wait() for w in workers]
        for worker, code in zip(workers, codes):
            assert code in (0, 3), f"{context}: a racer failed unclearly (exit {code})\n{worker.describe()}"
        if first == second or first[0] == "create":
            assert codes.count(0) >= 1, f"{context}: no racer won\n" + "\n".join(w.describe() for w in workers)
        assert latest_state(lake, name) in STABLE, f"{context}: left {latest_state(lake, name)}"
        assert lake.snapshot() == before, f"{context}: files outside the index changed"
        assert_index_usable(spark, hs, lake, name, context)


def test_create_races_differently_cased_names(spark: SparkSession, lake: Lake) -> None:
    """`X` and `x` are one name: of two processes creating them at once, exactly one wins."""
    workers = [Worker(lake, "create", name) for name in ("Chaos_Case", "chaos_case")]
    codes = [w.wait() for w in workers]
    details = "\n".join(w.describe() for w in workers)
    assert sorted(codes) == [0, 3], f"exactly one create must win: exits {codes}\n{details}"
    hs = Hyperspace(spark)
    names = [r["name"] for r in hs.indexes().collect() if r["name"].lower() == "chaos_case"]
    assert len(names) == 1, f"both spellings exist: {names}"
    dirs = [p.name for p in lake.system_path.iterdir() if p.name.lower() == "chaos_case"]
    assert len(dirs) == 1, f"both spellings have directories: {dirs}"


# ---- queries beside refresh and vacuum ------------------------------------------------------


def test_queries_beside_refresh_and_vacuum(spark: SparkSession, lake: Lake) -> None:
    """Another process queries in a loop while this one churns the index's data versions.

    Each round appends a file whose rows no chaos query reads, refreshes incrementally (a new
    data version beside the old files), optimizes fully (one more version, replacing the others)
    and vacuums. The answers never change, so every query in the loop must return exactly the
    expected rows. (Source files are only ever added here: a file deleted between a query's
    listing and its read would fail that query with or without Hyperspace.)
    """
    hs = Hyperspace(spark)
    name = "chaos_loop"
    setup_active(spark, hs, lake, name)
    expected = expected_answers(spark, lake)
    before = lake.snapshot()
    # 8 s of queries in CI's single round (about three refresh/optimize/vacuum rounds beside them
    # on CI's two cores: each round puts a new data version under the queries and vacuums the old
    # one); 10 s more per round with `make chaos`.
    worker = Worker(
        lake, "query-loop", name, seconds=10 * ROUNDS - 2, expected=[[list(r) for r in rows] for rows in expected]
    )
    assert worker.go.wait(timeout=180), worker.describe()
    rounds = 0
    while not worker.done.is_set() and rounds < 6 + 6 * ROUNDS:
        (
            spark.range(0, 50, 1, 1)
            .selectExpr(f"CAST(-1 - id - {50 * rounds} AS INT) AS k", "id AS v")
            .write.mode("append")
            .parquet(str(lake.source))
        )
        hs.refresh_index(name, "incremental")
        hs.optimize_index(name, "full")
        hs.vacuum_index(name)
        rounds += 1
    code = worker.wait()
    assert code == 0, f"a query beside vacuum failed or returned wrong rows (exit {code})\n{worker.describe()}"
    assert any(line.startswith("ROUNDS") for line in worker.lines), worker.describe()
    assert rounds > 0, "the index never changed while the queries ran"
    after = lake.snapshot()
    assert {k: after.get(k) for k in before} == before, "a file outside the index changed or was lost"
    assert_queries_correct(spark, lake, "after the query loop")
