"""Indexed DataFrame fault tolerance on a real standalone cluster: two workers, one killed
(worker and executor JVMs, SIGKILL) in the middle of a sequence of queries. Lost partitions are
rebuilt from lineage with the append replayed, and every answer stays equal to plain Spark's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import hyperspace
from cluster import SPARK_HOME, StandaloneCluster

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parent / "indexed_cluster_app.py"
EXTENSION = "io.hyperspace.HyperspaceSparkSessionExtension"


def _worker_of_executor(cluster: StandaloneCluster, executor: str) -> int:
    """Which worker launched ``executor`` (from the workers' logs)."""
    for i in range(cluster.workers):
        log = (cluster.work_dir / f"worker-{i}.log").read_text(errors="replace")
        if re.search(rf"Asked to launch executor app-[\w-]+/{re.escape(executor)}\b", log):
            return i
    raise AssertionError(f"no worker log mentions executor {executor}")


def test_killing_a_worker_rebuilds_the_lost_partitions(tmp_path: Path) -> None:
    control = tmp_path / "control"
    control.mkdir()
    with StandaloneCluster(tmp_path / "cluster", workers=2, cores_per_worker=1, memory_per_worker="1g") as cluster:
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
            str(APP),
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
