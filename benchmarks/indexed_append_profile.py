"""Where an Indexed DataFrame append's time goes: ``python -m benchmarks.indexed_append_profile``.

Appends a batch (100K rows by default, HYPERSPACE_BENCH_APPEND_ROWS) to a 10M-row index
(HYPERSPACE_BENCH_INDEXED_ROWS) and materializes it (``append_rows(batch).cache()``), timing the
driver side of ``append_rows`` and the materializing job, and splitting the job by its stages
with Spark's own task metrics (from the status store): the shuffle map stage that hashes the
batch's rows to the index partitions, and the stage that copies them into row batches and the
key tables of each partition. For scale it also times an empty job with the same shape (a shuffle
of nothing into as many partitions), and, alternating with ``cache()``, the same append
materialized as it was before cache() grouped partitions into one task per core: one task per
partition (a count of the version's RDD). Medians of the timed rounds after warm-ups; the load
average is printed with them.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.context import local_session
from benchmarks.suites.indexed import edge_table
from hyperspace import configure_spark_with_hyperspace
from hyperspace.indexed import create_index


def _stages_since(spark: SparkSession, since_ms: int) -> list[dict[str, Any]]:
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty()
    out = []
    store = sc.statusStore()
    # stageList(statuses, details, withSummaries, quantiles, taskStatuses): all stages, no details.
    gateway = spark.sparkContext._gateway
    no_quantiles = gateway.new_array(gateway.jvm.double, 0)
    stages = store.stageList(None, False, False, no_quantiles, None)
    for i in range(stages.size()):
        s = stages.apply(i)
        if s.submissionTime().isEmpty() or s.completionTime().isEmpty():
            continue
        start = int(s.submissionTime().get().getTime())
        if start < since_ms:
            continue
        out.append(
            {
                "name": str(s.name()).split(" at ")[0],
                "tasks": int(s.numTasks()),
                "wall": (int(s.completionTime().get().getTime()) - start) / 1000,
                "run": int(s.executorRunTime()) / 1000,
                "deserialize": int(s.executorDeserializeTime()) / 1000,
                "gc": int(s.jvmGcTime()) / 1000,
                "shuffleWrite": int(s.shuffleWriteTime()) / 1e9,
                "shuffleBytes": int(s.shuffleWriteBytes()) + int(s.shuffleReadBytes()),
            }
        )
    return sorted(out, key=lambda d: d["name"])


def main() -> None:
    builder = local_session("4g", 16)
    spark = configure_spark_with_hyperspace(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    n = int(os.environ.get("HYPERSPACE_BENCH_INDEXED_ROWS", 10_000_000))
    size = int(os.environ.get("HYPERSPACE_BENCH_APPEND_ROWS", 100_000))
    rounds = int(os.environ.get("HYPERSPACE_BENCH_ROUNDS", 7))
    keys = max(1, n // 4)

    def table(count: int, offset: int = 0) -> Any:
        return edge_table(spark, keys, count, offset)

    start = time.perf_counter()
    idf = create_index(table(n), "src", num_partitions=16).cache()
    print(f"{n:,} rows, {keys:,} keys, 16 partitions, built in {time.perf_counter() - start:.1f}s")
    batch = table(size, n).cache()
    batch.count()
    driver, materialize, empty, per_partition = [], [], [], []
    stages: dict[str, dict[str, list[float]]] = {}
    for r in range(rounds + 2):
        since = int(time.time() * 1000)
        s = time.perf_counter()
        version = idf.append_rows(batch)
        d = time.perf_counter() - s
        s = time.perf_counter()
        version.cache()
        m = time.perf_counter() - s
        if version.count() != n + size:
            raise AssertionError(f"append: {version.count()} rows")
        per = _stages_since(spark, since)
        version.unpersist(blocking=True)
        s = time.perf_counter()
        other = idf.append_rows(batch)
        other._jidf.data().rdd().count()  # caches each partition in a task of its own
        p = time.perf_counter() - s
        if other.count() != n + size:
            raise AssertionError(f"append: {other.count()} rows")
        other.unpersist(blocking=True)
        s = time.perf_counter()
        spark.range(0, 2, 1, 2).repartition(16)._jdf.queryExecution().toRdd().count()
        e = time.perf_counter() - s
        if r < 2:
            continue
        driver.append(d)
        materialize.append(m)
        empty.append(e)
        per_partition.append(p)
        for st in per:
            by = stages.setdefault(f"{st['name']} ({st['tasks']} tasks)", {})
            for k, v in st.items():
                if k not in ("name", "tasks"):
                    by.setdefault(k, []).append(float(v))
    med = statistics.median
    total = med([a + b for a, b in zip(driver, materialize, strict=True)])
    print(f"append {size:,} rows; load average {open('/proc/loadavg').read().split()[:3]}")
    print(f"  total (append_rows + cache)    {total * 1000:7.1f} ms  ({size / total:,.0f} rows/s)")
    print(f"  append_rows (driver)           {med(driver) * 1000:7.1f} ms")
    print(f"  cache() (the materializing job) {med(materialize) * 1000:7.1f} ms")
    for name, v in stages.items():
        print(
            f"    stage {name}: wall {med(v['wall']) * 1000:.0f} ms, task run {med(v['run']) * 1000:.0f} ms "
            f"(deserialize {med(v['deserialize']) * 1000:.0f}, GC {med(v['gc']) * 1000:.0f}, "
            f"shuffle write {med(v['shuffleWrite']) * 1000:.0f}), shuffle bytes {med(v['shuffleBytes']):,.0f}"
        )
    p = med(per_partition)
    print(f"  the same append materialized by one task per partition {p * 1000:7.1f} ms  ({size / p:,.0f} rows/s)")
    print(f"  a 2-row 2-stage job (2 -> 16 partitions) {med(empty) * 1000:7.1f} ms")
    spark.stop()


if __name__ == "__main__":
    main()
