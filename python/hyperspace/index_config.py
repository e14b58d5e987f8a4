"""``IndexConfig``: what a covering index holds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar

from hyperspace import index_kinds
from hyperspace.exceptions import HyperspaceException

__all__ = ["IndexConfig", "CoveringIndexConfig", "ZOrderCoveringIndexConfig"]


def _names(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise HyperspaceException(f"IndexConfig {what} must be a list of column names; got {value!r}.")
    for item in value:
        if not isinstance(item, str):
            raise HyperspaceException(f"IndexConfig {what} must be column names (str); got {item!r}.")
    return tuple(value)


class _CoveredColumnsConfig:
    """What the covering and Z-order covering configs share: a name, indexed and included
    columns, lineage, the original Hyperspace's camelCase keyword and attribute names, and
    equality by value. Each config class adds its own fields and JSON form."""

    __slots__ = ("name", "indexed_columns", "included_columns", "lineage")

    kind_name: ClassVar[str]
    _CAMEL: ClassVar[dict[str, str]] = {
        "indexName": "name",
        "indexedColumns": "indexed_columns",
        "includedColumns": "included_columns",
    }
    #: The fields equality, hashing and ``repr`` go by, in order.
    _FIELDS: ClassVar[tuple[str, ...]] = ("name", "indexed_columns", "included_columns", "lineage")

    def _take(self, given: dict[str, object], lineage: bool | None, camel_case: dict[str, object]) -> None:
        """Checks and sets the shared fields from ``given`` and the camelCase keywords (checked
        at run time: callers pass anything, and the camelCase names arrive untyped)."""
        kind = type(self).__name__
        for key, value in camel_case.items():
            if key not in self._CAMEL:
                raise TypeError(f"{kind}() got an unexpected keyword argument {key!r}")
            given[self._CAMEL[key]] = value
        index_name, indexed = given["name"], given["indexed_columns"]
        if not isinstance(index_name, str):
            raise HyperspaceException(f"{kind} name must be a string; got {index_name!r}.")
        if indexed is None:
            raise HyperspaceException(f"{kind} '{index_name}' needs indexed columns.")
        self._check(given)
        if lineage is not None and not isinstance(lineage, bool):
            raise HyperspaceException(f"{kind} lineage must be a bool; got {lineage!r}.")
        self.name: str = index_name
        self.indexed_columns: tuple[str, ...] = _names(indexed, "indexed columns")
        self.included_columns: tuple[str, ...] = _names(given["included_columns"], "included columns")
        self.lineage: bool | None = lineage

    def _check(self, given: dict[str, object]) -> None:
        """Checks a config class's own fields in ``given`` (before ``lineage``)."""

    # The original Hyperspace's attribute names.
    @property
    def indexName(self) -> str:  # noqa: N802
        """Alias of ``name``."""
        return self.name

    @property
    def indexedColumns(self) -> tuple[str, ...]:  # noqa: N802
        """Alias of ``indexed_columns``."""
        return self.indexed_columns

    @property
    def includedColumns(self) -> tuple[str, ...]:  # noqa: N802
        """Alias of ``included_columns``."""
        return self.included_columns

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in self._FIELDS))

    def _repr_extra(self) -> list[str]:
        """A config class's own fields in ``repr``, between the columns and ``lineage``."""
        return []

    def __repr__(self) -> str:
        parts = [repr(self.name), repr(list(self.indexed_columns))]
        if self.included_columns:
            parts.append(repr(list(self.included_columns)))
        parts += self._repr_extra()
        if self.lineage is not None:
            parts.append(f"lineage={self.lineage}")
        return f"{type(self).__name__}({', '.join(parts)})"


class IndexConfig(_CoveredColumnsConfig):
    """A covering index: ``IndexConfig("idx", ["a"], ["b"])`` indexes ``a`` and includes ``b``.

    Args:
        name: the index name (a directory under ``spark.hyperspace.system.path``).
        indexed_columns: the columns the data is bucketed and sorted by, in order.
        included_columns: further columns stored in the index.
        num_buckets: bucket count; ``None`` takes ``spark.hyperspace.index.numBuckets`` at creation.
        lineage: record each row's source file; ``None`` takes
            ``spark.hyperspace.index.lineage.enabled`` at creation.

    Both defaults are resolved when the index is created and stored in it: later operations use
    the index's own values. The original Hyperspace's keyword names (``indexName``,
    ``indexedColumns``, ``includedColumns``, ``numBuckets``) are accepted too.
    """

    __slots__ = ("num_buckets",)

    kind_name: ClassVar[str] = index_kinds.COVERING

    _CAMEL = {**_CoveredColumnsConfig._CAMEL, "numBuckets": "num_buckets"}
    _FIELDS = ("name", "indexed_columns", "included_columns", "num_buckets", "lineage")

    def __init__(
        self,
        name: str | None = None,
        indexed_columns: Sequence[str] | None = None,
        included_columns: Sequence[str] = (),
        num_buckets: int | None = None,
        lineage: bool | None = None,
        **camel_case: object,
    ) -> None:
        given: dict[str, object] = {
            "name": name,
            "indexed_columns": indexed_columns,
            "included_columns": included_columns,
            "num_buckets": num_buckets,
        }
        self._take(given, lineage, camel_case)
        buckets = given["num_buckets"]
        self.num_buckets: int | None = buckets if isinstance(buckets, int) else None

    def _check(self, given: dict[str, object]) -> None:
        buckets = given["num_buckets"]
        if buckets is not None and (isinstance(buckets, bool) or not isinstance(buckets, int)):
            raise HyperspaceException(f"IndexConfig num_buckets must be an int; got {buckets!r}.")

    @property
    def numBuckets(self) -> int | None:  # noqa: N802
        """Alias of ``num_buckets``."""
        return self.num_buckets

    def to_json(self) -> str:
        """The JSON form the JVM's ``IndexConfig.fromJson`` reads."""
        return json.dumps(
            {
                "name": self.name,
                "indexedColumns": list(self.indexed_columns),
                "includedColumns": list(self.included_columns),
                "numBuckets": self.num_buckets,
                "lineage": self.lineage,
            }
        )

    def _repr_extra(self) -> list[str]:
        return [] if self.num_buckets is None else [f"num_buckets={self.num_buckets}"]


#: The original Hyperspace's later name for :class:`IndexConfig` (the same class, so
#: ``isinstance`` checks and ``create_index`` accept either spelling).
CoveringIndexConfig = IndexConfig


class ZOrderCoveringIndexConfig(_CoveredColumnsConfig):
    """A Z-order covering index: ``ZOrderCoveringIndexConfig("idx", ["a", "b"], ["c"])``.

    The rows of the indexed and included columns, laid out along a Z-order curve over the indexed
    columns (ranked by sampled quantiles, so skewed columns spread evenly) in files of about
    ``spark.hyperspace.index.zorder.targetFileSize``. The index log keeps each file's range of every
    indexed column, so a filter with ranges or equalities on any of them reads only the files whose
    ranges can match. Filters only: joins and aggregations read hash-bucketed covering indexes.

    Args:
        name: the index name (a directory under ``spark.hyperspace.system.path``).
        indexed_columns: the columns of the Z-order curve (one or more).
        included_columns: further columns stored in the index.
        lineage: record each row's source file (so deleted source files are handled from the index);
            ``None`` takes ``spark.hyperspace.index.lineage.enabled`` at creation.

    The original Hyperspace's keyword names (``indexName``, ``indexedColumns``, ``includedColumns``)
    are accepted too.
    """

    __slots__ = ()

    kind_name: ClassVar[str] = index_kinds.ZORDER_COVERING

    def __init__(
        self,
        name: str | None = None,
        indexed_columns: Sequence[str] | None = None,
        included_columns: Sequence[str] = (),
        lineage: bool | None = None,
        **camel_case: object,
    ) -> None:
        given: dict[str, object] = {
            "name": name,
            "indexed_columns": indexed_columns,
            "included_columns": included_columns,
        }
        self._take(given, lineage, camel_case)

    def to_json(self) -> str:
        """The JSON form the JVM's ``ZOrderCoveringIndexConfig.fromJson`` reads."""
        return json.dumps(
            {
                "name": self.name,
                "indexedColumns": list(self.indexed_columns),
                "includedColumns": list(self.included_columns),
                "lineage": self.lineage,
            }
        )
