"""A real Spark standalone cluster on 127.0.0.1 (master + workers), started and stopped by tests.

The daemons come from the pyspark installation (`spark-class`), so executors are separate JVMs
that get the Hyperspace jar only through `--jars`, exactly as in production.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pyspark

from conftest import short_jvm_env

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """A master and ``workers`` workers; use as a context manager so they always stop."""

    def __init__(
        self,
        work_dir: Path,
        workers: int = 1,
        cores_per_worker: int = 2,
        memory_per_worker: str = "2g",
        start_timeout: float = 90.0,
    ) -> None:
        self.work_dir = work_dir
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.memory_per_worker = memory_per_worker
        self.start_timeout = start_timeout
        self.port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        # Daemons, driver and executors of a test's few short apps over tiny data: sized for
        # a short run (conftest.short_jvm_env says why).
        self.env = {
            **short_jvm_env(),
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(work_dir / "logs"),
            "SPARK_WORKER_DIR": str(work_dir / "worker"),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }

    def _start(self, name: str, args: Sequence[str], ready: str) -> None:
        log = self.work_dir / f"{name}.log"
        self.logs.append(log)
        handle = open(log, "wb")
        proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,  # its own process group, killed as a whole
        )
        self.processes.append(proc)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if ready in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                break
            time.sleep(0.25)
        raise RuntimeError(f"{name} did not start; its log:\n{log.read_text(errors='replace')[-4000:]}")

    def __enter__(self) -> StandaloneCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start(
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--webui-port",
                    str(free_port()),
                ],
                "I have been elected leader",
            )
            for i in range(self.workers):
                self._start(
                    f"worker-{i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        self.master_url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        str(self.cores_per_worker),
                        "--memory",
                        self.memory_per_worker,
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(self.work_dir / f"worker-{i}"),
                    ],
                    "Successfully registered with master",
                )
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops every daemon: SIGTERM to its process group, SIGKILL after 15 s."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        self.processes.clear()

    def submit(
        self,
        app: Path,
        *app_args: str,
        jars: Sequence[str] = (),
        conf: dict[str, str] | None = None,
        timeout: float = 300.0,
    ) -> subprocess.CompletedProcess[str]:
        """``spark-submit --master <this cluster>`` in client mode; output captured."""
        command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.master_url]
        if jars:
            command += ["--jars", ",".join(jars)]
        for key, value in (conf or {}).items():
            command += ["--conf", f"{key}={value}"]
        command += [str(app), *app_args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=self.env)
