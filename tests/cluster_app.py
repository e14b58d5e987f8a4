"""The application the cluster smoke test submits with `spark-submit --jars <hyperspace jar>`.

It checks, inside a real standalone cluster, that the extension is active in the session and
that plans using Hyperspace's own expression run in executor tasks (separate JVMs that only
have the jar through --jars). Writes its findings as JSON to argv[1]; exits non-zero on failure.
"""

import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hyperspace import Hyperspace, enable_hyperspace, is_hyperspace_enabled


def main(out_path: str) -> None:
    spark = SparkSession.builder.appName("hyperspace-cluster-smoke").getOrCreate()
    sc = spark.sparkContext
    result = {"master": sc.master}

    hs = Hyperspace(spark)
    result["version"] = hs.version
    enable_hyperspace(spark)
    result["enabled"] = is_hyperspace_enabled(spark)

    # Written by executor tasks: the bucket files of Spark's own bucketed writer.
    (
        spark.range(0, 20000, numPartitions=8)
        .select(F.col("id"), (F.col("id") % 1000).cast("string").alias("k"))
        .write.bucketBy(8, "k")
        .saveAsTable("bucketed")
    )
    # hyperspace_bucket_id is evaluated by io.hyperspace.expressions.BucketId inside the tasks.
    rows = (
        spark.table("bucketed")
        .select(
            F.expr("hyperspace_bucket_id(8, k)").alias("computed"),
            F.regexp_extract(F.input_file_name(), r"_(\d{5})\.c\d+", 1).cast("int").alias("file_bucket"),
        )
        .groupBy((F.col("computed") == F.col("file_bucket")).alias("match"))
        .count()
        .collect()
    )
    result["bucket_check"] = {str(r["match"]): r["count"] for r in rows}
    result["plan_uses_bucket_id"] = "hyperspace_bucket_id" in (
        spark.table("bucketed")
        .select(F.expr("hyperspace_bucket_id(8, k)"))
        ._jdf.queryExecution()
        .executedPlan()
        .toString()
    )
    # Executors known to the driver (the driver itself is listed too).
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    result["executors"] = len(infos) - 1
    spark.stop()

    with open(out_path, "w") as f:
        json.dump(result, f)
    ok = (
        result["enabled"]
        and result["bucket_check"] == {"True": 20000}
        and result["plan_uses_bucket_id"]
        and result["executors"] >= 1
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1])
