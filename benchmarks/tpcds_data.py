"""TPC-DS data for the tpcds suite: generated once with ``tpcgen-cli`` (PyPI, pinned in
versions.properties), then the seven fact tables rewritten into 16 Parquet files each in random row
order (so Parquet min/max statistics cannot help, as in a lake no one tuned); the dimension tables
are read as generated (one Parquet file each). Cached under the data directory, by scale factor."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

FACTS = ("store_sales", "catalog_sales", "web_sales", "store_returns", "catalog_returns", "web_returns", "inventory")
DIMENSIONS = (
    "call_center",
    "catalog_page",
    "customer",
    "customer_address",
    "customer_demographics",
    "date_dim",
    "household_demographics",
    "income_band",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "time_dim",
    "warehouse",
    "web_page",
    "web_site",
)
TABLES = FACTS + DIMENSIONS
FACT_FILES = 16  # files each fact table is spread over (issue #55)


@dataclass(frozen=True)
class TpcdsLake:
    """Where the prepared TPC-DS tables are."""

    root: Path
    sf: float

    def path(self, table: str) -> str:
        """The Parquet directory (a fact table) or file (a dimension, as generated) of ``table``."""
        if table in FACTS:
            return str(self.root / "lake" / table)
        return str(self.root / "raw" / f"{table}.parquet")

    def source_bytes(self) -> int:
        """Bytes of every table's Parquet files (what the advisor's default budget is a multiple of)."""
        total = 0
        for table in TABLES:
            p = Path(self.path(table))
            total += sum(f.stat().st_size for f in p.rglob("*.parquet")) if p.is_dir() else p.stat().st_size
        return total


def _tpcgen() -> str:
    exe = Path(sys.executable).parent / "tpcgen-cli"
    found = exe if exe.exists() else shutil.which("tpcgen-cli")
    if not found:
        raise RuntimeError("tpcgen-cli is not installed: pip install tpcgen-cli (make setup does it)")
    return str(found)


def prepare(spark: SparkSession, data_dir: Path, sf: float) -> TpcdsLake:
    """The lake for scale factor ``sf``, generated and laid out only when missing; runs sharing a
    data directory take turns on a lock (as ``tpch_data.prepare``)."""
    root = data_dir / f"tpcds-sf{sf:g}"
    lake = TpcdsLake(root, sf)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".prepare.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _generate_and_lay_out(spark, lake)
    return lake


def _generate_and_lay_out(spark: SparkSession, lake: TpcdsLake) -> None:
    raw = lake.root / "raw"
    if not (raw / "_READY").exists():
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
        subprocess.run(
            [_tpcgen(), "tpcds", "parquet", "-s", f"{lake.sf:g}", "--output-dir", str(raw)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        missing = [t for t in TABLES if not (raw / f"{t}.parquet").is_file()]
        if missing:
            raise RuntimeError(f"tpcgen-cli tpcds wrote no {', '.join(missing)} under {raw}")
        (raw / "_READY").touch()
    ready = lake.root / "lake" / "_READY"
    if not ready.exists():
        shutil.rmtree(lake.root / "lake", ignore_errors=True)
        for table in FACTS:
            df = spark.read.parquet(str(raw / f"{table}.parquet"))
            df.orderBy(F.rand(seed=17)).repartition(FACT_FILES).write.parquet(lake.path(table))
        ready.touch()
