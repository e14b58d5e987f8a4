"""The jar on a real standalone cluster: spark-submit --jars, executors in their own JVMs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hyperspace
from cluster import StandaloneCluster
from conftest import versions

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parent / "cluster_app.py"
EXTENSION = "io.hyperspace.HyperspaceSparkSessionExtension"


def test_spark_submit_with_jars_runs_the_extension_in_executor_tasks(tmp_path: Path) -> None:
    """Also, in the same cluster (one start, not two: each costs a master's and a worker's JVM), an
    app that fails: the cluster still stops its daemons when the app fails."""
    out = tmp_path / "result.json"
    bad_app = tmp_path / "bad_app.py"
    bad_app.write_text("raise SystemExit(3)\n")
    with StandaloneCluster(tmp_path / "cluster", workers=1, cores_per_worker=2) as cluster:
        result = cluster.submit(
            APP,
            str(out),
            jars=[str(hyperspace.jar_path())],
            conf={
                "spark.sql.extensions": EXTENSION,
                "spark.executor.cores": "1",
                "spark.executor.memory": "1g",
                "spark.cores.max": "2",
                "spark.driver.host": "127.0.0.1",
                "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
            },
        )
        failed = cluster.submit(bad_app, timeout=120)
        processes = list(cluster.processes)
    assert failed.returncode != 0
    assert processes and all(p.poll() is not None for p in processes)
    assert result.returncode == 0, f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-6000:]}"
    found = json.loads(out.read_text())
    assert found["master"] == cluster.master_url
    assert found["version"] == versions()["hyperspace"]
    assert found["enabled"] is True
    assert found["bucket_check"] == {"True": 20000}
    assert found["plan_uses_bucket_id"] is True
    assert found["executors"] == 2
