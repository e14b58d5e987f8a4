"""``SplitIndexConfig``: a split index, keys and row locations only (docs/split-index.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar

from hyperspace import index_kinds
from hyperspace.exceptions import HyperspaceException

__all__ = ["SplitIndexConfig"]


class SplitIndexConfig:
    """A split index: ``SplitIndexConfig("idx", ["k"])``.

    The index holds only the key columns and where each row lives in the source (file, Parquet row
    group, row), hash-bucketed and sorted by key. A selective filter on the keys (``=``, ``IN``, a
    small range) reads the matching locations and then only those row groups of the source, with
    every column the query asks for. Over CSV and JSON sources the index is file-level: it keeps
    each distinct (keys, file) pair and a seek reads only the files holding the keys. Other
    formats, and Delta Lake or Iceberg tables, are refused.

    Args:
        name: the index name (a directory under ``spark.hyperspace.system.path``).
        indexed_columns: the key columns (top-level columns of the source).
    """

    __slots__ = ("name", "indexed_columns")

    kind_name: ClassVar[str] = index_kinds.SPLIT

    def __init__(self, name: str, indexed_columns: Sequence[str]) -> None:
        if not isinstance(name, str):
            raise HyperspaceException(f"SplitIndexConfig name must be a string; got {name!r}.")
        if isinstance(indexed_columns, str) or not isinstance(indexed_columns, Sequence):
            raise HyperspaceException(
                f"SplitIndexConfig '{name}' indexed columns must be a list of column names; got {indexed_columns!r}."
            )
        for column in indexed_columns:
            if not isinstance(column, str):
                raise HyperspaceException(f"SplitIndexConfig '{name}' column names must be str; got {column!r}.")
        self.name: str = name
        self.indexed_columns: tuple[str, ...] = tuple(indexed_columns)

    def to_json(self) -> str:
        """The JSON form the JVM's ``SplitIndexConfig.fromJson`` reads."""
        return json.dumps({"name": self.name, "indexedColumns": list(self.indexed_columns)})

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SplitIndexConfig)
            and self.name == other.name
            and self.indexed_columns == other.indexed_columns
        )

    def __hash__(self) -> int:
        return hash((self.name, self.indexed_columns))

    def __repr__(self) -> str:
        return f"SplitIndexConfig({self.name!r}, {list(self.indexed_columns)!r})"
