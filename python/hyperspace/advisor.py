"""The index advisor's answer in Python: :meth:`Hyperspace.recommend` returns :class:`Recommendations`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from hyperspace import exceptions, index_kinds
from hyperspace.dataskipping import DataSkippingIndexConfig
from hyperspace.index_config import IndexConfig, ZOrderCoveringIndexConfig
from hyperspace.split_index import SplitIndexConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "QueryEvidence",
    "RecordedQuery",
    "RecommendedConfig",
    "RecommendedIndex",
    "Recommendations",
    "RejectedCandidate",
    "WorkloadItem",
    "normalize_workload",
]

#: A workload query: a DataFrame, a SQL string, or either with a weight (its relative frequency).
WorkloadItem = Union["DataFrame", str, tuple[Union["DataFrame", str], float]]


@dataclass(frozen=True)
class WorkloadQuery:
    """One normalized workload query: a DataFrame or SQL text, its label and weight."""

    query: Any  # DataFrame | str
    label: str
    weight: float


def normalize_workload(workload: object) -> list[WorkloadQuery]:
    """``workload`` as a list of queries, or an error saying what is accepted."""
    from pyspark.sql import DataFrame

    def is_dataframe(q: object) -> bool:
        # A Spark Connect DataFrame is another class with the same name.
        return isinstance(q, DataFrame) or type(q).__name__ == "DataFrame"

    if isinstance(workload, (str, bytes)) or is_dataframe(workload) or not isinstance(workload, Sequence):
        raise exceptions.HyperspaceException(
            "recommend expects a list of queries (DataFrames, SQL strings, or (query, weight) tuples)."
        )
    if not workload:
        raise exceptions.HyperspaceException(
            "Cannot recommend indexes: the workload is empty (give one or more queries)."
        )
    out = []
    for i, item in enumerate(workload, start=1):
        query, weight = item if isinstance(item, tuple) and len(item) == 2 else (item, 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
            raise exceptions.HyperspaceException(
                f"Workload query {i}: the weight must be a positive number; got {weight!r}."
            )
        if isinstance(query, str):
            if not query.strip():
                raise exceptions.HyperspaceException(f"Workload query {i}: the SQL text is empty.")
            out.append(WorkloadQuery(query, query.strip(), float(weight)))
        elif is_dataframe(query):
            out.append(WorkloadQuery(query, f"query {i}", float(weight)))
        else:
            raise exceptions.HyperspaceException(
                f"Workload query {i} must be a DataFrame, a SQL string or a (query, weight) tuple; "
                f"got {type(item).__name__}."
            )
    return out


@dataclass(frozen=True)
class RecordedQuery:
    """A query the session recorded: its label (the SQL text, or ``recorded query <n> (reads ...)``)
    and how many times it ran, its weight in :meth:`Hyperspace.recommend` without a workload."""

    query: str
    frequency: int


@dataclass(frozen=True)
class QueryEvidence:
    """What a recommended index does for one query, planned without indexes vs with all recommended ones."""

    query: str
    weight: float
    bytes_before: int
    bytes_after: int
    exchanges_before: int
    exchanges_after: int
    sorts_before: int
    sorts_after: int

    def __str__(self) -> str:
        return (
            f"{self.query!r} (weight {self.weight:g}): bytes read {self.bytes_before} → {self.bytes_after}, "
            f"Exchange {self.exchanges_before} → {self.exchanges_after}, Sort {self.sorts_before} → {self.sorts_after}"
        )


#: The configs the advisor recommends: covering, Z-order covering, data skipping (a MinMax, BloomFilter or
#: ValueList sketch) and split.
RecommendedConfig = IndexConfig | ZOrderCoveringIndexConfig | DataSkippingIndexConfig | SplitIndexConfig


def recommended_config(
    kind: str | None, config_json: str | None, name: str, indexed: Sequence[str], included: Sequence[str]
) -> RecommendedConfig:
    """The config of a recommended index from the JVM's answer (its kind and the kind's config JSON).

    An answer without a kind (an older JVM) is a covering index, as the advisor only recommended those.
    """
    if kind in (None, index_kinds.COVERING):
        return IndexConfig(name, list(indexed), list(included))
    if kind == index_kinds.ZORDER_COVERING:
        return ZOrderCoveringIndexConfig(name, list(indexed), list(included))
    if kind == index_kinds.DATA_SKIPPING and config_json is not None:
        return DataSkippingIndexConfig.from_json(config_json)
    if kind == index_kinds.SPLIT:
        return SplitIndexConfig(name, list(indexed))
    raise exceptions.HyperspaceException(f"Recommended index '{name}' is of kind {kind!r}, unknown to this package.")


@dataclass(frozen=True)
class RecommendedIndex:
    """One recommended index (covering, Z-order covering or data skipping), its estimates and the
    queries whose plans use it.

    ``indexed_columns`` are the columns it is keyed on (for a data skipping index, its sketches,
    e.g. ``MinMax(ts)``), ``included_columns`` those it stores besides.
    """

    rank: int
    config: RecommendedConfig
    source: str
    source_sql: str | None
    estimated_size_bytes: int
    estimated_build_bytes: int
    benefit: int
    queries: tuple[QueryEvidence, ...]
    indexed_columns: tuple[str, ...] = ()
    included_columns: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """The index kind's name in the index log (``CoveringIndex``, ``ZOrderCoveringIndex``, ...)."""
        return self.config.kind_name

    def __str__(self) -> str:
        c = self.config
        if isinstance(c, DataSkippingIndexConfig):
            what = f"data skipping with {', '.join(self.indexed_columns)}"
        elif isinstance(c, SplitIndexConfig):
            what = f"split on ({', '.join(self.indexed_columns)})"
        else:
            kind = "Z-order covering" if isinstance(c, ZOrderCoveringIndexConfig) else "covering"
            what = f"{kind} on ({', '.join(self.indexed_columns)}) incl. ({', '.join(self.included_columns)})"
        head = (
            f"{self.rank}. {c.name}: {what} over {self.source}; ~{self.estimated_size_bytes} bytes, "
            f"build reads+writes ~{self.estimated_build_bytes} bytes, benefit {self.benefit}"
        )
        return "\n".join([head] + [f"   serves {q}" for q in self.queries])


@dataclass(frozen=True)
class RejectedCandidate:
    """A candidate the advisor considered but did not recommend, and why.

    ``reason`` is one of ``over_budget`` (it did not fit in what was left of the budget), ``max_indexes``
    (the count was reached while it still had a benefit), ``superseded`` (chosen indexes came to serve the
    queries it served), ``no_benefit`` (no query's plan used it to advantage) and ``unused`` (chosen during
    the search, then no plan used it once all chosen indexes were in place); ``detail`` says it in words.
    """

    config: RecommendedConfig
    source: str
    estimated_size_bytes: int
    reason: str
    detail: str

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def kind(self) -> str:
        return self.config.kind_name

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, ~{self.estimated_size_bytes} bytes): {self.reason} — {self.detail}"


@dataclass(frozen=True)
class Recommendations:
    """The advisor's answer: indexes ranked in the order chosen; :meth:`create_all` builds them."""

    indexes: tuple[RecommendedIndex, ...]
    budget_bytes: int | None
    max_indexes: int | None
    workload_cost_before: int | None
    workload_cost_after: int | None
    elapsed_ms: int | None
    _create_all: Callable[[], None] = field(repr=False, compare=False)
    #: The candidates considered and not recommended, each with its reason.
    rejected: tuple[RejectedCandidate, ...] = ()

    @classmethod
    def _from_json(
        cls, text: str, create_all: Callable[[], None], labels: dict[str, str] | None = None
    ) -> Recommendations:
        d = json.loads(text)
        relabel = labels or {}

        def evidence(q: dict[str, Any]) -> QueryEvidence:
            return QueryEvidence(
                relabel.get(q["query"], q["query"]),
                float(q["weight"]),
                int(q["bytesBefore"]),
                int(q["bytesAfter"]),
                int(q["exchangesBefore"]),
                int(q["exchangesAfter"]),
                int(q["sortsBefore"]),
                int(q["sortsAfter"]),
            )

        indexes = tuple(
            RecommendedIndex(
                int(i["rank"]),
                recommended_config(
                    i.get("kind"), i.get("config"), i["name"], i["indexedColumns"], i["includedColumns"]
                ),
                str(i["source"]),
                i.get("sourceSql"),
                int(i["estimatedSizeBytes"]),
                int(i["estimatedBuildBytes"]),
                int(i["benefit"]),
                tuple(evidence(q) for q in i["queries"]),
                tuple(i["indexedColumns"]),
                tuple(i["includedColumns"]),
            )
            for i in d["indexes"]
        )
        rejected = tuple(
            RejectedCandidate(
                recommended_config(
                    r.get("kind"), r.get("config"), r["name"], r["indexedColumns"], r["includedColumns"]
                ),
                str(r["source"]),
                int(r["estimatedSizeBytes"]),
                str(r["reason"]),
                str(r["detail"]),
            )
            for r in d.get("rejected", [])
        )
        return cls(
            indexes,
            d.get("budgetBytes"),
            d.get("maxIndexes"),
            d.get("workloadCostBefore"),
            d.get("workloadCostAfter"),
            d.get("elapsedMs"),
            create_all,
            rejected,
        )

    @property
    def configs(self) -> list[RecommendedConfig]:
        """The recommended index configs, in rank order."""
        return [r.config for r in self.indexes]

    @property
    def total_size_bytes(self) -> int:
        return sum(r.estimated_size_bytes for r in self.indexes)

    def create_all(self) -> list[str]:
        """Builds every recommended index in rank order; returns their names. A failure names the index."""
        self._create_all()
        return [r.config.name for r in self.indexes]

    createAll = create_all

    def __len__(self) -> int:
        return len(self.indexes)

    def __str__(self) -> str:
        budget = "none" if self.budget_bytes is None else f"{self.budget_bytes} bytes"
        most = "any number" if self.max_indexes is None else str(self.max_indexes)
        head = (
            f"{len(self.indexes)} index(es) recommended (budget {budget}, at most {most}; "
            f"~{self.total_size_bytes} bytes in total"
        )
        if self.workload_cost_before is not None:
            head += (
                f"; workload cost {self.workload_cost_before} → {self.workload_cost_after} bytes; {self.elapsed_ms} ms"
            )
        rejected = (
            [f"not recommended ({len(self.rejected)}):"] + [f"   {r}" for r in self.rejected] if self.rejected else []
        )
        return "\n".join([head + ")"] + [str(r) for r in self.indexes] + rejected)

    def show(self) -> None:
        """Prints the recommendations (readable in a notebook cell)."""
        print(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))
