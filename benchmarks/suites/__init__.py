"""The benchmark suites, by name. A suite is ``run(ctx) -> dict`` (JSON-able results, with a
``markdown`` entry for the report); later suites (maintenance, data skipping, Indexed DataFrame)
register here and run through the same CLI and report (``--suite NAME``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.context import BenchContext
from benchmarks.suites import (
    broadcast,
    dataskipping,
    indexed,
    lakehouse,
    maintenance,
    onepart,
    overhead,
    seek,
    split,
    tpcds,
    tpch,
)

Suite = Callable[[BenchContext], dict[str, Any]]

SUITES: dict[str, Suite] = {
    "tpch": tpch.run,
    "overhead": overhead.run,
    "maintenance": maintenance.run,
    "indexed": indexed.run,
    "dataskipping": dataskipping.run,
    "broadcast": broadcast.run,
    "lakehouse": lakehouse.run,
    "seek": seek.run,
    "split": split.run,
    "onepart": onepart.run,
    "tpcds": tpcds.run,
}
# Suites with data of their own (no TPC-H lake needed), run only when named: `all` leaves them out
# (the TPC-DS suite at SF1 runs longer than every other suite together).
OWN_DATA = frozenset({"tpcds"})
