"""Hyperspace operations in a process of its own, for tests/test_chaos.py to kill or race.

Run as ``python tests/chaos_worker.py``: it starts its Spark session, then serves commands, one
JSON line each on stdin with the keys ``op``, ``name``, ``source``, ``system_path`` and, per
operation, ``mode`` / ``seconds`` / ``expected``. Before reading a command it prints ``READY``; it
prints ``GO`` just before the operation starts (the killer's cue) and ``EXIT <code>`` when it ends:

- 0: the operation succeeded (``query-loop``: every query returned the expected rows);
- 3: it failed with a HyperspaceException, the clear error a losing racer should get;
- 4: anything else (a stack of Spark internals, a wrong row): always a test failure, and the
  process exits with 4 rather than serve another command from a state nobody understands.

Starting the JVM before a command is known lets the tests keep warm workers waiting, and a worker
nobody killed serves the next test, so the module starts few JVMs. The process ends when stdin
does. ``python tests/chaos_worker.py '<json>'`` runs one operation and exits with its code.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

from hyperspace import (  # noqa: E402
    DataSkippingIndexConfig,
    Hyperspace,
    HyperspaceException,
    IndexConfig,
    MinMaxSketch,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    enable_hyperspace,
)

# The query the chaos tests compare, with and without indexes: a point lookup the covering
# index `k` answers, and a range the data skipping index prunes.
QUERIES = [
    "SELECT k, v FROM src WHERE k = 17",
    "SELECT count(*), sum(v) FROM src WHERE k BETWEEN 100 AND 300",
]


def session() -> SparkSession:
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("hyperspace-chaos")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.hyperspace.index.numBuckets", "4")
        .config("spark.hyperspace.index.lineage.enabled", "true")
        # A worker lives for a few small operations or is killed within seconds: the C2 compiler
        # and parallel GC threads would spend half of its CPU on a warm-up that never pays, and
        # on CI's two cores that CPU is taken from the test it runs beside.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    )
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


def answers(spark: SparkSession, source: str) -> list[list[tuple]]:
    """Every chaos query's rows, sorted, over ``source`` as the session reads it now."""
    spark.read.parquet(source).createOrReplaceTempView("src")
    return [sorted(tuple(r) for r in spark.sql(q).collect()) for q in QUERIES]


def run(spark: SparkSession, args: dict) -> None:
    # Set per command: a warm worker is started before the test's lake exists.
    spark.conf.set("spark.hyperspace.system.path", args["system_path"])
    hs = Hyperspace(spark)
    name, source, op = args["name"], args["source"], args["op"]
    # A worker serves several commands: only the query loop runs with rewriting on.
    if op == "query-loop":
        enable_hyperspace(spark)
    else:
        disable_hyperspace(spark)
    df = spark.read.parquet(source)
    print("GO", flush=True)
    if op == "create":
        hs.create_index(df, IndexConfig(name, ["k"], ["v"]))
    elif op == "create-skipping":
        hs.create_index(df, DataSkippingIndexConfig(name, MinMaxSketch("k")))
    elif op == "refresh":
        hs.refresh_index(name, args["mode"])
    elif op == "optimize":
        hs.optimize_index(name, args["mode"])
    elif op == "delete":
        hs.delete_index(name)
    elif op == "restore":
        hs.restore_index(name)
    elif op == "vacuum":
        hs.vacuum_index(name)
    elif op == "cancel":
        hs.cancel(name)
    elif op == "query-loop":
        # Queries with Hyperspace on while another process refreshes and vacuums the index:
        # every answer must be the expected one, and no query may fail.
        expected = [[tuple(r) for r in rows] for rows in args["expected"]]
        deadline = time.monotonic() + float(args["seconds"])
        rounds = 0
        while time.monotonic() < deadline:
            got = answers(spark, source)
            if got != expected:
                print(f"WRONG ROWS in round {rounds}: {got} != {expected}", flush=True)
                raise WrongRows()
            rounds += 1
        print(f"ROUNDS {rounds}", flush=True)
    else:
        raise ValueError(f"unknown chaos op {op!r}")
    print("DONE", flush=True)


class WrongRows(Exception):
    """A query gave other rows than expected (already printed)."""


def serve(spark: SparkSession, command: str) -> int:
    """Runs one command; returns its exit code (see the module's docstring)."""
    try:
        run(spark, json.loads(command))
        return 0
    except HyperspaceException as error:
        print(f"HYPERSPACE-ERROR {type(error).__name__}: {error}", flush=True)
        return 3
    except Exception:  # noqa: BLE001 - any other failure is what the test looks for
        print("OTHER-ERROR", flush=True)
        traceback.print_exc()
        return 4


if __name__ == "__main__":
    spark = session()
    if len(sys.argv) > 1:
        sys.exit(serve(spark, sys.argv[1]))
    while True:
        print("READY", flush=True)
        command = sys.stdin.readline()
        if not command:  # the test run ended
            sys.exit(0)
        code = serve(spark, command)
        print(f"EXIT {code}", flush=True)
        if code == 4:
            sys.exit(4)
