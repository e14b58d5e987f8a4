"""Point lookups from a Spark Connect client: ``python -m benchmarks.indexed_connect_lookup``.

Starts pyspark's Spark Connect server (``local[*]``, the Hyperspace jar and extension), caches
the indexed suite's edge table as an indexed table (``CACHE INDEXED TABLE``) and as Spark's
columnar cache (``CACHE TABLE``), and times, interleaved, one key per round: ``LOOKUP INDEXED
TABLE edges KEYS (k)``, ``SELECT * FROM edges WHERE src = k`` (a one-task job over the index) and
the same filter over the cached table. Medians of the timed rounds after warm-ups, with the load
average; every round's rows are compared. HYPERSPACE_BENCH_INDEXED_ROWS sets the size (10M).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyspark

import hyperspace

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    n = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 10_000_000))
    rounds = int(os.environ.get("HYPERSPACE_BENCH_ROUNDS", 15))
    keys = max(1, n // 4)
    work = Path(tempfile.mkdtemp(prefix="hyperspace-connect-bench-"))
    spark_home = Path(pyspark.__file__).resolve().parent
    port = _free_port()
    command = [
        str(spark_home / "bin" / "spark-submit"),
        "--class", SERVER_CLASS,
        "--master", "local[*]",
        "--driver-memory", "4g",
        "--jars", str(hyperspace.jar_path()),
        "--conf", "spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=16",
        "--conf", f"spark.sql.warehouse.dir={work / 'warehouse'}",
    ]  # fmt: skip
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable}
    with open(work / "server.log", "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Connect server did not start; see {work / 'server.log'}") from None
                time.sleep(1)
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        spark = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        source = (
            f"SELECT id % {keys} AS src, id AS dst, CAST(id % 1000 AS DOUBLE) / 7 AS weight, "
            f"concat('edge-', id % 1000) AS label FROM range({n})"
        )
        spark.sql(f"CACHE TABLE plain AS {source}")
        spark.sql(f"CACHE INDEXED TABLE edges ON (src) PARTITIONS 16 AS {source}")
        variants = {
            "LOOKUP INDEXED TABLE": "LOOKUP INDEXED TABLE edges KEYS ({k})",
            "SELECT over the index": "SELECT * FROM edges WHERE src = {k}",
            "SELECT over CACHE TABLE": "SELECT * FROM plain WHERE src = {k}",
        }
        times: dict[str, list[float]] = {v: [] for v in variants}
        rng = random.Random(7)
        names = list(variants)
        for r in range(rounds + 3):
            k = rng.randrange(keys)
            expected = None
            for v in names[r % len(names) :] + names[: r % len(names)]:
                start = time.perf_counter()
                rows = spark.sql(variants[v].format(k=k)).collect()
                elapsed = time.perf_counter() - start
                got = sorted(tuple(x) for x in rows)
                if expected is None:
                    expected = got
                elif got != expected or len(got) != 4:
                    raise AssertionError(f"{v}, key {k}: {got} vs {expected}")
                if r >= 3:
                    times[v].append(elapsed)
        load = open("/proc/loadavg").read().split()[:3]
        base = statistics.median(times["SELECT over CACHE TABLE"])
        print(f"{n:,} rows, {keys:,} keys, 16 partitions, over Spark Connect; load average {load}")
        for v, t in times.items():
            m = statistics.median(t)
            print(f"  {v:26s} {m * 1000:8.1f} ms  ({base / m:.1f}x the cached table's filter)")
        spark.stop()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
