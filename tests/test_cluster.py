"""The jar on a real standalone cluster: spark-submit --jars, executors in their own JVMs; and
Indexed DataFrame fault tolerance there: a worker killed (worker and executor JVMs, SIGKILL) in
the middle of a sequence of queries, lost partitions rebuilt from lineage with the append replayed,
every answer equal to plain Spark's.

One master and two workers (one core each) serve the module's tests in file order (a start costs a
master's and two workers' JVMs): the apps that need the whole cluster first, the one that kills a
worker last. The module's fixture stops the daemons at the end, and checks that they all ended,
after an app that failed among them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import hyperspace
from cluster import SPARK_HOME, StandaloneCluster
from conftest import versions

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parent / "cluster_app.py"
INDEXED_APP = Path(__file__).resolve().parent / "indexed_cluster_app.py"
EXTENSION = "io.hyperspace.HyperspaceSparkSessionExtension"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(
        tmp_path_factory.mktemp("cluster"), workers=2, cores_per_worker=1, memory_per_worker="1g"
    ) as started:
        yield started
        processes = list(started.processes)
    # The daemons stop with the cluster, also after a failed app and a killed worker.
    assert processes and all(p.poll() is not None for p in processes)


def test_spark_submit_with_jars_runs_the_extension_in_executor_tasks(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """Also an app that fails on the same cluster (the fixture then checks that the cluster still
    stops every daemon)."""
    out = tmp_path / "result.json"
    bad_app = tmp_path / "bad_app.py"
    bad_app.write_text("raise SystemExit(3)\n")
    result = cluster.submit(
        APP,
        str(out),
        jars=[str(hyperspace.jar_path())],
        conf={
            "spark.sql.extensions": EXTENSION,
            "spark.executor.cores": "1",
            "spark.executor.memory": "768m",
            "spark.cores.max": "2",
            "spark.driver.host": "127.0.0.1",
            "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    failed = cluster.submit(bad_app, timeout=120)
    assert failed.returncode != 0
    assert result.returncode == 0, f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-6000:]}"
    found = json.loads(out.read_text())
    assert found["master"] == cluster.master_url
    assert found["version"] == versions()["hyperspace"]
    assert found["enabled"] is True
    assert found["bucket_check"] == {"True": 20000}
    assert found["plan_uses_bucket_id"] is True
    assert found["executors"] == 2


def _worker_of_executor(cluster: StandaloneCluster, executor: str) -> int:
    """Which worker launched ``executor`` of the newest app (from the workers' logs; the cluster
    ran other apps before, whose executors have the same ids)."""
    launches = [
        (app, i)
        for i in range(cluster.workers)
        for app, launched in re.findall(
            r"Asked to launch executor (app-[\w-]+)/(\w+)\b",
            (cluster.work_dir / f"worker-{i}.log").read_text(errors="replace"),
        )
        if launched == executor
    ]
    assert launches, f"no worker log mentions executor {executor}"
    return max(launches)[1]  # app ids sort by their start time


def test_killing_a_worker_rebuilds_the_lost_partitions(cluster: StandaloneCluster, tmp_path: Path) -> None:
    control = tmp_path / "control"
    control.mkdir()
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        cluster.master_url,
        "--jars",
        str(hyperspace.jar_path()),
        "--conf",
        f"spark.sql.extensions={EXTENSION}",
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.executor.memory=768m",
        "--conf",
        "spark.cores.max=2",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.ui.showConsoleProgress=false",
        "--conf",
        "spark.sql.shuffle.partitions=8",
        # Probe sides are shuffled to the index partitions unless hinted (the app does both).
        "--conf",
        "spark.sql.autoBroadcastJoinThreshold=-1",
        "--conf",
        f"spark.sql.warehouse.dir={tmp_path / 'warehouse'}",
        str(INDEXED_APP),
        str(control),
    ]
    log = open(tmp_path / "app.log", "wb")
    app = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=cluster.env)
    try:
        deadline = time.monotonic() + 300
        while not (control / "ready.json").exists():
            assert app.poll() is None, (tmp_path / "app.log").read_text()[-6000:]
            assert time.monotonic() < deadline, "the app never got ready"
            time.sleep(0.5)
        time.sleep(0.2)
        locations = json.loads((control / "ready.json").read_text())
        holders = sorted({e for es in locations.values() for e in es})
        assert holders, f"nothing cached: {locations}"
        # The victim: an executor caching partitions of the appended version.
        victim = holders[-1]
        worker = _worker_of_executor(cluster, victim)
        os.killpg(cluster.processes[1 + worker].pid, signal.SIGKILL)  # processes[0] is the master
        cluster.processes[1 + worker].wait(timeout=30)
        (control / "killed").write_text(victim)
        app.wait(timeout=400)
    finally:
        if app.poll() is None:
            app.kill()
        log.close()
    output = (tmp_path / "app.log").read_text(errors="replace")
    assert app.returncode == 0, output[-8000:]
    result = json.loads((control / "result.json").read_text())
    assert result["before"] == {"v0": True, "v1": True}
    assert len(set().union(*map(set, result["locations_before"].values()))) == 2, (
        f"both executors should cache partitions before the kill: {result['locations_before']}"
    )
    assert result["after"] == [{"v0": True, "v1": True}] * 2, output[-8000:]
    # Every partition is cached again, none on the dead executor.
    assert result["cached_after"] == 8
    assert all(es and victim not in es for es in result["locations_after"].values()), result
    assert "IndexedJoin" in result["plan_after"] and "IndexedLookup" in result["lookup_plan_after"]
