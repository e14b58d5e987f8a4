"""Running queries as variants, interleaved, with results compared and plan facts collected."""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from hyperspace import _jvm


@dataclass
class Variant:
    """One way of running the queries: ``prepare(query_name)`` sets views and switches."""

    name: str
    prepare: Callable[[str], None]


@dataclass
class Measurement:
    """The runs of one query under one variant."""

    seconds: list[float] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def low(self) -> float:
        return min(self.seconds)

    @property
    def high(self) -> float:
        return max(self.seconds)


def _canonical(value: Any) -> Any:
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else float(f"{value:.9g}")
    if isinstance(value, Decimal):
        return str(value.normalize())
    return value


def canonical_rows(rows: Sequence[Any]) -> list[str]:
    """Rows as sorted strings, floats to 9 significant digits: equal results compare equal."""
    return sorted(json.dumps([_canonical(v) for v in r], default=str) for r in rows)


def plan_facts(spark: SparkSession, df: DataFrame) -> dict[str, Any]:
    """Files/bytes read, Exchanges and indexes of ``df``'s last run (from the Hyperspace jar)."""
    return _jvm.plan_facts(df)


def run_queries(
    spark: SparkSession,
    queries: dict[str, str],
    variants: Sequence[Variant],
    runs: int,
    log: Callable[[str], None] = print,
) -> dict[str, dict[str, Measurement]]:
    """Runs every query under every variant: a warm-up each, then ``runs`` rounds in which the
    variants take turns (the order rotates every round, so drift hits all of them). Fails if
    any run of any variant returns rows different from the first variant's. ``runs=0`` (the quick
    smoke run) times the warm-ups instead: each query once per variant, figures of a cold run."""
    results: dict[str, dict[str, Measurement]] = {}
    for name, sql in queries.items():
        per_variant = {v.name: Measurement() for v in variants}
        expected: list[str] | None = None
        for v in variants:  # warm-up, result check and plan facts
            v.prepare(name)
            start = time.perf_counter()  # as the timed rounds: from spark.sql to the collected rows
            df = spark.sql(sql)
            collected = df.collect()
            if runs == 0:
                per_variant[v.name].seconds.append(time.perf_counter() - start)
            rows = canonical_rows(collected)
            per_variant[v.name].facts = plan_facts(spark, df)
            if expected is None:
                expected = rows
            elif rows != expected:
                raise AssertionError(f"{name}: variant {v.name} returned different rows")
        for r in range(runs):
            order = list(variants[r % len(variants) :]) + list(variants[: r % len(variants)])
            for v in order:
                v.prepare(name)
                start = time.perf_counter()
                rows = spark.sql(sql).collect()
                per_variant[v.name].seconds.append(time.perf_counter() - start)
                if canonical_rows(rows) != expected:
                    raise AssertionError(f"{name}: variant {v.name} returned different rows in run {r + 1}")
        log(f"  {name}: " + ", ".join(f"{k} {m.median:.3f}s" for k, m in per_variant.items()))
        results[name] = per_variant
    return results
