"""TPC-H data for the benchmarks: generated once with ``tpchgen-cli``, then laid out the way a
lake usually is — lineitem and orders spread over many files in random row order (so Parquet
min/max statistics cannot help) — plus a CSV copy of lineitem. Cached under the data directory."""

from __future__ import annotations

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
    """The lake for scale factor ``sf``, generated and laid out only when missing."""
    root = data_dir / f"tpch-sf{sf:g}-{files}files"
    lake = TpchLake(root, sf, files)
    raw = root / "raw"
    if not (raw / "_READY").exists():
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
        subprocess.run([_tpchgen(), "parquet", "-s", f"{sf:g}", "--output-dir", str(raw)], check=True)
        (raw / "_READY").touch()
    ready = root / "lake" / "_READY"
    if not ready.exists():
        shutil.rmtree(root / "lake", ignore_errors=True)
        for table in TABLES:
            df = spark.read.parquet(str(raw / f"{table}.parquet"))
            if table in SPREAD:
                df = df.orderBy(F.rand(seed=17)).repartition(files)
            else:
                df = df.coalesce(1)
            df.write.parquet(lake.path(table))
        spark.read.parquet(lake.path("lineitem")).write.option("header", "true").csv(lake.lineitem_csv)
        ready.touch()
    return lake
