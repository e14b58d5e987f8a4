"""What every suite gets: the session, the prepared lake, sizes and where to put things."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from benchmarks.tpch_data import TpchLake

T = TypeVar("T")


@dataclass
class BenchContext:
    spark: SparkSession
    lake: TpchLake | None  # None when only suites with data of their own run (tpcds)
    work_dir: Path
    runs: int
    buckets: int
    quick: bool
    only: frozenset[str] | None = None  # query names to run (--queries); None: all
    sf: float = 1.0
    data_dir: Path = Path("benchmarks/data")
    options: dict[str, Any] = field(default_factory=dict)  # suite options (--budget, --index-sets)

    def selected(self, queries: dict[str, T]) -> dict[str, T]:
        """``queries`` restricted to the names chosen with ``--queries`` (all by default)."""
        return queries if self.only is None else {k: v for k, v in queries.items() if k in self.only}

    def log(self, message: str) -> None:
        print(message, flush=True)


def local_session(
    driver_memory: str, shuffle_partitions: int, name: str | None = None, warehouse: Path | None = None
) -> SparkSession.Builder:
    """A local session builder as every benchmark runs it: no UI or progress bars to cost time,
    the driver on the loopback address (the machines have no resolvable host name)."""
    builder = (
        SparkSession.builder.master("local[*]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.driver.host", "127.0.0.1")
    )
    if name is not None:
        builder = builder.appName(name)
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", str(warehouse))
    return builder
