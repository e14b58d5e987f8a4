"""TPC-H data for the benchmarks: generated once with ``tpchgen-cli``, then laid out the way a
lake usually is — lineitem and orders spread over many files in random row order (so Parquet
min/max statistics cannot help) — plus a CSV copy of lineitem. Cached under the data directory."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

TABLES = ("lineitem", "orders", "customer", "part", "supplier", "partsupp", "nation", "region")
SPREAD = ("lineitem", "orders")  # rewritten into many random-order files


@dataclass(frozen=True)
class TpchLake:
    """Where the prepared TPC-H tables are."""

    root: Path
    sf: float
    files: int

    def path(self, table: str) -> str:
        """The Parquet directory of ``table``."""
        return str(self.root / "lake" / table)

    @property
    def lineitem_csv(self) -> str:
        """The CSV copy of lineitem (with a header)."""
        return str(self.root / "lake" / "lineitem_csv")


def _tpchgen() -> str:
    exe = Path(sys.executable).parent / "tpchgen-cli"
    found = exe if exe.exists() else shutil.which("tpchgen-cli")
    if not found:
        raise RuntimeError("tpchgen-cli is not installed: pip install tpchgen-cli (make setup does it)")
    return str(found)


def prepare(spark: SparkSession, data_dir: Path, sf: float, files: int) -> TpchLake:
    """The lake for scale factor ``sf``, generated and laid out only when missing. Runs that share a
    data directory (two benchmark processes, the smoke tests side by side) take turns: one lays the
    lake out while the others wait on its lock, then find it ready."""
    root = data_dir / f"tpch-sf{sf:g}-{files}files"
    lake = TpchLake(root, sf, files)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".prepare.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _generate_and_lay_out(spark, lake)
    return lake


def _generate_and_lay_out(spark: SparkSession, lake: TpchLake) -> None:
    raw = lake.root / "raw"
    if not (raw / "_READY").exists():
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
        subprocess.run([_tpchgen(), "parquet", "-s", f"{lake.sf:g}", "--output-dir", str(raw)], check=True)
        (raw / "_READY").touch()
    ready = lake.root / "lake" / "_READY"
    if not ready.exists():
        shutil.rmtree(lake.root / "lake", ignore_errors=True)
        for table in TABLES:
            df = spark.read.parquet(str(raw / f"{table}.parquet"))
            if table in SPREAD:
                df = df.orderBy(F.rand(seed=17)).repartition(lake.files)
            else:
                df = df.coalesce(1)
            df.write.parquet(lake.path(table))
        spark.read.parquet(lake.path("lineitem")).write.option("header", "true").csv(lake.lineitem_csv)
        ready.touch()
