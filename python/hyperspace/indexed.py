"""The Indexed DataFrame: an in-memory indexed cache with appends, point lookups and indexed joins.

Example::

    from hyperspace.indexed import create_index

    idf = create_index(df, "user_id").cache()      # built in the executors' memory
    idf.get_rows(42).show()                         # reads only the key's partition
    idf2 = idf.append_rows(new_rows)                # a new version; idf keeps its own rows
    idf2.join(clicks, idf2["user_id"] == clicks["uid"], "left_outer")   # indexed join
    idf2.create_or_replace_temp_view("users")       # SQL: WHERE user_id = 42, JOIN ... ON user_id

Queries over :meth:`IndexedDataFrame.to_df` (DataFrame API or SQL through a temp view) use the
index for ``key = value``, ``key IN (...)`` and equi-joins on the key; anything else scans the
cached rows. The session needs the Hyperspace extension (``configure_spark_with_hyperspace``).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql.types import StructType

from hyperspace import exceptions
from hyperspace._jvm import (
    JavaObject,
    java_class,
    java_dataframe,
    java_storage_level,
    python_dataframe,
    translate_errors,
)

__all__ = ["IndexedDataFrame", "create_index", "createIndex", "join_decisions"]

_LEVELS = {
    "MEMORY_ONLY",
    "MEMORY_ONLY_2",
    "MEMORY_ONLY_SER",
    "MEMORY_ONLY_SER_2",
    "MEMORY_AND_DISK",
    "MEMORY_AND_DISK_2",
    "MEMORY_AND_DISK_SER",
    "MEMORY_AND_DISK_SER_2",
    "DISK_ONLY",
}


@translate_errors
def create_index(df: DataFrame, column: str, num_partitions: int | None = None) -> IndexedDataFrame:
    """An Indexed DataFrame over ``df`` keyed on ``column``.

    Rows are hash-partitioned on the key into ``num_partitions`` partitions (default
    ``spark.hyperspace.indexed.numPartitions``, itself defaulting to
    ``spark.sql.shuffle.partitions``). Nothing runs until it is cached or queried: call
    :meth:`IndexedDataFrame.cache` to build it in memory.

    Raises:
        HyperspaceException: unknown column, a key type that cannot be indexed (maps, arrays,
            structs, strings with a non-binary collation), or duplicate column names.
    """
    spark = df.sparkSession
    factory = java_class(spark, "indexed.IndexedDataFrame")
    if num_partitions is None:
        jidf = factory.create(java_dataframe(df), column)
    else:
        if isinstance(num_partitions, bool) or not isinstance(num_partitions, int):
            raise exceptions.HyperspaceException(f"num_partitions must be an int, got {type(num_partitions).__name__}.")
        jidf = factory.create(java_dataframe(df), column, num_partitions)
    return IndexedDataFrame(jidf, spark)


createIndex = create_index


@translate_errors
def join_decisions(df: DataFrame) -> list[str]:
    """For each equi-join on an Indexed DataFrame's key in ``df``, whether the planner probes the
    index (``"index: ..."``) or leaves the join to Spark (``"spark: ..."``), and why, with the
    sizes it decided on (``spark.hyperspace.indexed.joinSelection``)."""
    found = java_class(df.sparkSession, "indexed.IndexedDataFrame").joinDecisionsAsJava(java_dataframe(df))
    return [str(d) for d in found]


class IndexedDataFrame:
    """One version of an in-memory indexed cache of a DataFrame (see :func:`create_index`).

    Every operation that changes the data returns a new version; a version never changes, so
    divergent appends to one parent coexist and share the parent's rows. The original
    Indexed DataFrame's camelCase names (``getRows``, ``appendRows``, ``toDF``, ...) are aliases.
    """

    def __init__(self, jidf: JavaObject, spark: SparkSession) -> None:
        self._jidf: JavaObject = jidf
        self._spark = spark
        self._df: DataFrame | None = None

    @property
    def spark(self) -> SparkSession:
        """The session the index lives in."""
        return self._spark

    @property
    def key_column(self) -> str:
        """The indexed column."""
        return str(self._jidf.keyColumn())

    @property
    def num_partitions(self) -> int:
        """Hash partitions of the index (fixed for all its versions)."""
        return int(self._jidf.numPartitions())

    @property
    def version(self) -> int:
        """0 as created; n after n appends along this version's ancestry."""
        return int(self._jidf.version())

    @property
    def schema(self) -> StructType:
        """The schema of the rows (every column nullable)."""
        return StructType.fromJson(json.loads(str(self._jidf.schema().json())))

    @property
    def is_cached(self) -> bool:
        """Whether this version is persisted."""
        return bool(self._jidf.isCached())

    def to_df(self) -> DataFrame:
        """The DataFrame over this version; filters and joins on the key use the index."""
        if self._df is None:
            self._df = python_dataframe(self._jidf.toDF(), self._spark)
        return self._df

    def __getitem__(self, name: str) -> Column:
        """The column ``name`` of :meth:`to_df`, for join conditions: ``idf["id"]``."""
        return self.to_df()[name]

    @translate_errors
    def cache(self) -> IndexedDataFrame:
        """Caches this version in memory (MEMORY_ONLY) and builds it now; returns ``self``."""
        self._jidf.cache()
        return self

    @translate_errors
    def persist(self, storage_level: str = "MEMORY_ONLY") -> IndexedDataFrame:
        """Persists at a storage level given by name (e.g. ``"MEMORY_AND_DISK_SER"``) and builds it."""
        level = storage_level.upper()
        if level not in _LEVELS:
            raise exceptions.HyperspaceException(
                f"Unknown storage level '{storage_level}'; use one of {', '.join(sorted(_LEVELS))}."
            )
        self._jidf.persist(java_storage_level(self._spark, level))
        return self

    @translate_errors
    def unpersist(self, blocking: bool = False) -> IndexedDataFrame:
        """Frees this version's memory on the executors. Versions appended to it keep working."""
        self._jidf.unpersist(blocking)
        return self

    @translate_errors
    def get_rows(self, key: object) -> DataFrame:
        """The rows whose key equals ``key`` (only the key's partition is read).

        ``key`` is a Python value of the key's type (int, float, str, bytes, bool,
        ``decimal.Decimal``, ``datetime.date``, ``datetime.datetime``). ``None`` matches nothing,
        as in SQL.

        Raises:
            HyperspaceException: the value cannot be compared with the key column.
        """
        if isinstance(key, (bytes, bytearray)):
            key = bytearray(key)
        return python_dataframe(self._jidf.getRows(key), self._spark)

    @translate_errors
    def lookup(self, keys: object) -> list[Row]:
        """The rows whose key is ``keys`` (one value) or one of ``keys`` (a list or tuple), fetched now.

        The eager counterpart of :meth:`get_rows` for a few keys: no query is planned, only the
        partitions the keys hash to are read (in place when this process's driver holds them, as
        in local mode; else by one Spark job on just those partitions), and the rows come back
        in one transfer. Each matching row comes once, in no particular order; ``None`` matches
        nothing. Values are taken as by :meth:`get_rows`.

        Raises:
            HyperspaceException: a value cannot be compared with the key column.
        """
        values = list(keys) if isinstance(keys, (list, tuple)) else [keys]
        values = [bytearray(v) if isinstance(v, (bytes, bytearray)) else v for v in values]
        pickled = bytes(self._jidf.lookupForPython(values))
        # PySpark's own unpickling of collected rows (its serializer module is untyped).
        rows: list[Row] = pickle.loads(pickled, encoding="bytes")
        return rows

    @translate_errors
    def append_rows(self, rows: DataFrame) -> IndexedDataFrame:
        """A new version with ``rows`` appended; this version keeps answering with its own rows.

        Columns are matched by name; a column whose type safely up-casts to the index's is cast.
        The new version is persisted like this one and built on first use (or by :meth:`cache`).

        Raises:
            HyperspaceException: a column is missing, unknown, or of an incompatible type.
        """
        return IndexedDataFrame(self._jidf.appendRows(java_dataframe(rows)), self._spark)

    @translate_errors
    def join(self, other: DataFrame, on: str | Sequence[str] | Column | None = None, how: str = "inner") -> DataFrame:
        """``to_df().join(other, on, how)``; an equi-join on the key uses the index.

        ``on`` is a column name, a list of names (present on both sides), or a Column condition
        built from ``idf["col"]`` and ``other["col"]``. Inner, left/right/full outer, semi and
        anti joins use the index; other conditions are applied after the probe.
        """
        if on is None or isinstance(on, (str, Column)):
            return self.to_df().join(other, on, how)
        return self.to_df().join(other, list(on), how)

    def create_or_replace_temp_view(self, name: str) -> None:
        """Registers :meth:`to_df` as a temp view; SQL over it uses the index."""
        self.to_df().createOrReplaceTempView(name)

    @translate_errors
    def count(self) -> int:
        """Number of rows of this version."""
        return int(self._jidf.count())

    @translate_errors
    def memory_stats(self) -> dict[str, int]:
        """Rows, keys, partitions (cached / total) and bytes: what the block manager holds in
        memory (``blockManagerBytes``) and on disk (``blockManagerDiskBytes``), row batches this
        version allocated (``ownBatchBytes``) or reads (``totalBatchBytes``, ``usedBatchBytes``)
        and its own part of the key index (``ownTrieBytes``: measured primitive tables for keys
        that are one long, an estimate for a trie of other keys), and the broadcasts of its rows
        kept for joins (``keptBroadcastBytes``, see ``spark.hyperspace.indexed.keptBroadcasts.maxBytes``).
        """
        stats = self._jidf.memoryStatsAsJava()
        return {str(k): int(stats.get(k)) for k in stats.keySet()}

    @translate_errors
    def cached_partition_executors(self) -> dict[int, list[str]]:
        """For each partition, the executor ids caching it (empty when not cached)."""
        found = self._jidf.cachedPartitionExecutorsAsJava()
        return {int(k): [str(e) for e in found.get(k)] for k in found.keySet()}

    # The original Indexed DataFrame's names.
    getRows = get_rows
    appendRows = append_rows
    createOrReplaceTempView = create_or_replace_temp_view

    def toDF(self) -> DataFrame:
        """Alias of :meth:`to_df`."""
        return self.to_df()

    def __repr__(self) -> str:
        return str(self._jidf.toString())
