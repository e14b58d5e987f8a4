"""The application the Indexed DataFrame recovery test submits to a two-worker standalone cluster.

It builds an Indexed DataFrame and an appended version in the executors' memory, runs a sequence
of lookups and joins, then tells the test (``<control>/ready.json``: which executor caches which
partition) and waits until the test has killed one worker (``<control>/killed``). It runs the
same queries again: lost partitions must be rebuilt from lineage (the append replayed) and every
result must equal the one computed from plain DataFrames. Findings go to ``<control>/result.json``.
"""

import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hyperspace.indexed import create_index

PARTITIONS = 8


def main(control: Path) -> None:
    spark = SparkSession.builder.appName("hyperspace-indexed-recovery").getOrCreate()
    sc = spark.sparkContext
    deadline = time.monotonic() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() < 3:  # the driver and two executors
        if time.monotonic() > deadline:
            raise SystemExit("two executors never registered")
        time.sleep(0.5)

    # Deterministic sources: lineage can recompute them anywhere.
    source = spark.range(0, 120000, numPartitions=6).selectExpr("id % 4000 AS k", "id AS v", "concat('s', id) AS s")
    appended = spark.range(0, 3000, numPartitions=2).selectExpr("id % 5000 AS k", "-id AS v", "'appended' AS s")
    probe = spark.range(0, 9000, 7, numPartitions=3).selectExpr("id % 4600 AS pk", "id AS pv")
    plain = source.union(appended)

    idf = create_index(source, "k", num_partitions=PARTITIONS).cache()
    v1 = idf.append_rows(appended).cache()

    lookup_keys = [1, 3999, 4500]

    def run(version, data):
        answers = {}
        for key in lookup_keys:
            answers[f"lookup {key}"] = sorted(tuple(r) for r in version.get_rows(key).collect())
        joined = version.join(probe, version["k"] == probe["pk"], "left_outer").agg(
            F.count("*"), F.sum("v"), F.sum("pv"), F.count("s")
        )
        answers["left join"] = [tuple(r) for r in joined.collect()]
        # The probe side broadcast to the index partitions instead of shuffled to them.
        semi = version.join(F.broadcast(probe), version["k"] == probe["pk"], "left_semi").agg(F.count("*"), F.sum("v"))
        answers["semi join"] = [tuple(r) for r in semi.collect()]
        answers["count"] = version.count()
        return answers

    def expected(data):
        answers = {}
        for key in lookup_keys:
            answers[f"lookup {key}"] = sorted(tuple(r) for r in data.filter(F.col("k") == key).collect())
        joined = data.join(probe, data["k"] == probe["pk"], "left_outer").agg(
            F.count("*"), F.sum("v"), F.sum("pv"), F.count("s")
        )
        answers["left join"] = [tuple(r) for r in joined.collect()]
        semi = data.join(probe, data["k"] == probe["pk"], "left_semi").agg(F.count("*"), F.sum("v"))
        answers["semi join"] = [tuple(r) for r in semi.collect()]
        answers["count"] = data.count()
        return answers

    want_v0, want_v1 = expected(source), expected(plain)
    result = {"before": {"v0": run(idf, source) == want_v0, "v1": run(v1, plain) == want_v1}}
    result["locations_before"] = {str(p): e for p, e in v1.cached_partition_executors().items()}
    result["base_locations_before"] = {str(p): e for p, e in idf.cached_partition_executors().items()}
    (control / "ready.json").write_text(json.dumps(result["locations_before"]))

    deadline = time.monotonic() + 180
    while not (control / "killed").exists():
        if time.monotonic() > deadline:
            raise SystemExit("the test never killed a worker")
        time.sleep(0.2)
    victim = (control / "killed").read_text().strip()
    # Wait until the driver has noticed the loss, so the next queries really run without it.
    deadline = time.monotonic() + 120
    while any(e == victim for e in _executors(sc)):
        if time.monotonic() > deadline:
            raise SystemExit(f"the driver never noticed that executor {victim} was lost")
        time.sleep(0.2)

    started = time.monotonic()
    rounds = []
    for _ in range(2):
        rounds.append({"v1": run(v1, plain) == want_v1, "v0": run(idf, source) == want_v0})
    result["after"] = rounds
    result["recovery_seconds"] = time.monotonic() - started
    result["victim"] = victim
    result["locations_after"] = {str(p): e for p, e in v1.cached_partition_executors().items()}
    result["cached_after"] = v1.memory_stats()["cachedPartitions"]
    result["plan_after"] = str(v1.join(probe, v1["k"] == probe["pk"])._jdf.queryExecution().executedPlan().toString())
    result["lookup_plan_after"] = str(v1.get_rows(1)._jdf.queryExecution().executedPlan().toString())
    (control / "result.json").write_text(json.dumps(result))
    spark.stop()


def _executors(sc):
    """The ids of the executors the driver currently has."""
    ids = str(sc._jsc.sc().getExecutorIds().mkString(","))
    return [e for e in ids.split(",") if e]


if __name__ == "__main__":
    main(Path(sys.argv[1]))
