"""What every suite gets: the session, the prepared lake, sizes and where to put things."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from benchmarks.tpch_data import TpchLake


@dataclass
class BenchContext:
    spark: SparkSession
    lake: TpchLake
    work_dir: Path
    runs: int
    buckets: int
    quick: bool

    def log(self, message: str) -> None:
        print(message, flush=True)
