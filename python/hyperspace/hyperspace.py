"""The ``Hyperspace`` facade: index management for one SparkSession."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload

import pyspark
from pyspark.sql import DataFrame, SparkSession

from hyperspace import exceptions
from hyperspace._backends import Backend, backend_for
from hyperspace._jvm import spark_line, translate_errors
from hyperspace.advisor import Recommendations, RecordedQuery, WorkloadItem, normalize_workload
from hyperspace.dataskipping import DataSkippingIndexConfig
from hyperspace.index_config import IndexConfig
from hyperspace.index_kinds import KindConfig
from hyperspace.progress import ProgressSetting, reporter_for, run_with_progress
from hyperspace.session import disable_hyperspace, enable_hyperspace, is_hyperspace_enabled

__all__ = ["Hyperspace", "MaintenanceResult", "RelationSkippingStats", "IndexSkips", "SketchSkips"]

R = TypeVar("R")

RefreshMode = Literal["full", "incremental", "quick"]
OptimizeMode = Literal["quick", "full"]


@dataclass(frozen=True)
class MaintenanceResult:
    """What a refresh, optimize or vacuum did.

    Attributes:
        index_name: the index.
        operation: ``"refresh"``, ``"optimize"`` or ``"vacuum"``.
        mode: the mode it ran in (empty for vacuum).
        changed: False when the index was already up to date and nothing was written.
        log_version: the id of the index's newest stable log entry afterwards.
        appended_files: source files appended (or rewritten) since the index data was built.
        deleted_files: source files deleted (or rewritten) since then.
        merged_files: index files an optimize merged.
        message: one sentence saying what happened.
    """

    index_name: str
    operation: str
    mode: str
    changed: bool
    log_version: int
    appended_files: int
    deleted_files: int
    merged_files: int
    message: str

    @classmethod
    def _from_json(cls, text: str) -> MaintenanceResult:
        d = json.loads(text)
        return cls(
            index_name=d["indexName"],
            operation=d["operation"],
            mode=d["mode"],
            changed=bool(d["changed"]),
            log_version=int(d["logVersion"]),
            appended_files=int(d["appendedFiles"]),
            deleted_files=int(d["deletedFiles"]),
            merged_files=int(d["mergedFiles"]),
            message=d["message"],
        )

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class SketchSkips:
    """Files one sketch of an index rules out on its own (sketches may overlap).

    Attributes:
        sketch: the sketch, e.g. ``"MinMax(ts)"``.
        files_skipped: source files it rules out.
        bytes_skipped: their bytes.
    """

    sketch: str
    files_skipped: int
    bytes_skipped: int


@dataclass(frozen=True)
class IndexSkips:
    """What one data skipping index did for one relation.

    Attributes:
        index: the index name.
        log_version: the index log entry (version) used.
        files_skipped: source files it ruled out.
        bytes_skipped: their bytes.
        sketches: per sketch, the files it rules out alone (empty for sketch tables too large
            to evaluate on the driver).
    """

    index: str
    log_version: int
    files_skipped: int
    bytes_skipped: int
    sketches: tuple[SketchSkips, ...]


@dataclass(frozen=True)
class FormatPruning:
    """What a table format's own file pruning did for a scan data skipping indexes also pruned.

    Delta prunes by partition values and by the per-file min/max its log keeps; the indexes'
    contribution is what they rule out among the files Delta keeps.

    Attributes:
        format: the table format (``"delta"``).
        files_pruned: files of the table the format's own pruning leaves out for the filter.
        bytes_pruned: their bytes.
        files_skipped_after: files the format keeps that the indexes rule out.
        bytes_skipped_after: their bytes.
    """

    format: str
    files_pruned: int
    bytes_pruned: int
    files_skipped_after: int
    bytes_skipped_after: int


@dataclass(frozen=True)
class RelationSkippingStats:
    """Data skipping statistics of one scanned relation of a query.

    Attributes:
        relation: the catalog table, or the relation's root paths.
        filter: the query filter the sketches were given, as SQL.
        files_total: files listed (before Spark's own partition pruning).
        bytes_total: their bytes.
        files_skipped: files some data skipping index ruled out (each counted once).
        bytes_skipped: their bytes.
        files_read: ``files_total - files_skipped`` (for a table format that prunes files
            itself: ``files_total`` minus what it pruned minus what the indexes skipped beyond it).
        bytes_read: their bytes.
        indexes: what each index skipped.
        format_pruning: for a table format's scan (Delta, Iceberg), what its own pruning did.
    """

    relation: str
    filter: str
    files_total: int
    bytes_total: int
    files_skipped: int
    bytes_skipped: int
    files_read: int
    bytes_read: int
    indexes: tuple[IndexSkips, ...]
    format_pruning: FormatPruning | None = None

    @classmethod
    def _list_from_json(cls, text: str) -> list[RelationSkippingStats]:
        return [
            cls(
                relation=d["relation"],
                filter=d["filter"],
                files_total=int(d["filesTotal"]),
                bytes_total=int(d["bytesTotal"]),
                files_skipped=int(d["filesSkipped"]),
                bytes_skipped=int(d["bytesSkipped"]),
                files_read=int(d["filesRead"]),
                bytes_read=int(d["bytesRead"]),
                indexes=tuple(
                    IndexSkips(
                        index=i["index"],
                        log_version=int(i["logVersion"]),
                        files_skipped=int(i["filesSkipped"]),
                        bytes_skipped=int(i["bytesSkipped"]),
                        sketches=tuple(
                            SketchSkips(k["sketch"], int(k["filesSkipped"]), int(k["bytesSkipped"]))
                            for k in i["sketches"]
                        ),
                    )
                    for i in d["indexes"]
                ),
                format_pruning=_format_pruning(d.get("formatPruning")),
            )
            for d in json.loads(text)
        ]

    def __str__(self) -> str:
        by = "; ".join(f"{i.index}: {i.files_skipped}" for i in self.indexes)
        f = self.format_pruning
        pruned = f"{f.format} pruned {f.files_pruned} itself, the indexes {f.files_skipped_after} more; " if f else ""
        return (
            f"{self.relation}: skipped {self.files_skipped} of {self.files_total} files "
            f"({self.bytes_skipped} of {self.bytes_total} bytes), {pruned}read {self.files_read}; by {by}"
        )


def _format_pruning(d: dict[str, Any] | None) -> FormatPruning | None:
    if not d:
        return None
    return FormatPruning(
        format=d["format"],
        files_pruned=int(d["filesPruned"]),
        bytes_pruned=int(d["bytesPruned"]),
        files_skipped_after=int(d["filesSkippedAfter"]),
        bytes_skipped_after=int(d["bytesSkippedAfter"]),
    )


def _index_name(name: object) -> str:
    """``name`` if it is a string (the JVM validates its content); a HyperspaceException otherwise."""
    if not isinstance(name, str):
        raise exceptions.HyperspaceException(f"Invalid index name {name!r}: an index name is a non-empty string.")
    return name


class _SessionSwitch(Generic[R]):
    """A session switch callable both ways the original Hyperspace's users call it.

    On the class it takes the session, as the original's static methods did:
    ``Hyperspace.enable(spark)`` returns ``spark``. On a facade it works on the facade's own
    session, ``hs.enable()`` returning ``hs``, or on a session passed to it,
    ``hs.enable(spark)`` returning ``spark`` (the original's static methods could be reached
    through an instance too).
    """

    def __init__(self, on_session: Callable[[SparkSession], R], facade_result: bool) -> None:
        self._on_session = on_session
        self._facade_result = facade_result
        self.__doc__ = on_session.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Callable[[SparkSession], R]: ...

    @overload
    def __get__(self, instance: Hyperspace, owner: type) -> Callable[[SparkSession | None], R | Hyperspace]: ...

    def __get__(
        self, instance: Hyperspace | None, owner: type
    ) -> Callable[[SparkSession], R] | Callable[[SparkSession | None], R | Hyperspace]:
        if instance is None:
            return self._on_session
        facade = instance
        on_session, facade_result = self._on_session, self._facade_result

        def bound(spark: SparkSession | None = None) -> R | Hyperspace:
            if spark is not None:
                return on_session(spark)
            result = on_session(facade._spark)
            return facade if facade_result else result

        bound.__name__ = self._name
        bound.__doc__ = self.__doc__
        return bound


class Hyperspace:
    """Manages the indexes of one SparkSession; ``hs = Hyperspace(spark)``.

    Every operation reads and appends the index's log in the lake, so any number of facades,
    sessions and processes may work on the same indexes; concurrent operations on one index
    follow the paper's Table 1 (an incompatible one raises ``HyperspaceConflictException``). The
    original Hyperspace's camelCase method names are aliases. The facade checks on construction
    that the session's JVM has the Hyperspace jar loaded, built for the session's Spark line.

    ``spark`` may be a classic session (the JVM reached through py4j) or a Spark Connect session
    whose server runs with the Hyperspace jar and extension: then every call is one of
    Hyperspace's SQL statements (docs/sql.md), with the same results and exceptions.

    Args:
        spark: the session.
        progress: how ``create_index``, ``refresh_index`` and ``optimize_index`` report progress:
            ``"auto"`` (a bar in a terminal or notebook, off otherwise and under ``CI``), ``"bar"``,
            ``None``, or a callable taking a :class:`hyperspace.Progress` (docs/notebooks.md).
            Spark Connect sessions have the Connect client's own progress instead.

    Raises:
        HyperspaceNotLoadedError: the jar is not loaded in the session's JVM.
        HyperspaceException: the jar was built for another Spark line than the session's, or
            ``progress`` is none of the above.
    """

    def __init__(self, spark: SparkSession, progress: ProgressSetting = "auto") -> None:
        reporter_for(progress)  # a bad setting fails here, not in the first build
        self._spark = spark
        self._progress = progress
        self._backend: Backend = backend_for(spark)
        built_for = self._backend.spark_version()
        if spark_line(built_for) != spark_line(spark.version):
            raise exceptions.HyperspaceException(
                f"This Hyperspace jar was built for Spark {built_for} but the session runs Spark "
                f"{spark.version}; load hyperspace-spark{spark_line(spark.version)}_2.13-*.jar "
                "instead (configure_spark_with_hyperspace picks it for the installed pyspark)."
            )

    @property
    def spark(self) -> SparkSession:
        """The session this facade manages indexes for."""
        return self._spark

    @property
    def version(self) -> str:
        """The Hyperspace version of the loaded jar."""
        return self._backend.version()

    @property
    def spark_version(self) -> str:
        """The Spark version the loaded jar was built against."""
        return self._backend.spark_version()

    @property
    @translate_errors
    def system_path(self) -> str:
        """Where this session's indexes live (``spark.hyperspace.system.path``), as an absolute,
        qualified path (``file:/...``): a relative setting resolved as the JVM resolves it."""
        return self._backend.system_path()

    # hs.enable() / hs.disable() (returning hs) and hs.is_enabled() work on this facade's
    # session; Hyperspace.enable(spark), Hyperspace.disable(spark) (returning spark) and
    # Hyperspace.isEnabled(spark) are the original Hyperspace's static forms.
    enable = _SessionSwitch(enable_hyperspace, facade_result=True)
    disable = _SessionSwitch(disable_hyperspace, facade_result=True)
    is_enabled = _SessionSwitch(is_hyperspace_enabled, facade_result=False)

    @translate_errors
    def create_index(self, df: DataFrame, config: IndexConfig | DataSkippingIndexConfig | KindConfig) -> None:
        """Builds an index over ``df``, a plain scan of files.

        ``df`` is ``spark.read.<format>(paths)`` (parquet, csv, json, orc, ...; hive-partitioned
        directories included) or ``spark.table(name)`` of a file-based table, untransformed: choose
        the index's columns (or sketches) in ``config``. An :class:`IndexConfig` builds a covering
        index; a :class:`DataSkippingIndexConfig` a data skipping index (one row of sketches per
        source file; a hive-partitioned source gets a ``PartitionSketch`` per partition column
        unless ``spark.hyperspace.index.dataskipping.autoPartitionSketch`` is false). A config of
        another kind registered in the JVM (:class:`~hyperspace.index_kinds.KindConfig`) builds an
        index of that kind. Everything is checked before anything is written.

        Raises:
            HyperspaceException: bad name, columns, sketches, types or source, or the name is taken.
            HyperspaceConflictException: another operation holds the index.
        """
        if not isinstance(config, KindConfig):
            raise exceptions.HyperspaceException(
                "create_index expects an IndexConfig or a DataSkippingIndexConfig (or another kind's config, "
                f"with name, kind_name and to_json()); got {type(config).__name__}."
            )
        self._run("create", config.name, lambda: self._backend.create_index(df, config))

    def _run(self, operation: str, name: str, call: Callable[[], R]) -> R:
        return run_with_progress(self._spark, self._progress, operation, name, call)

    @translate_errors
    def index_kinds(self) -> list[str]:
        """The names of the index kinds the JVM can build and use, sorted.

        The built-in ``CoveringIndex`` and ``DataSkippingIndex``, and every kind a jar on the
        classpath registers (``META-INF/services/io.hyperspace.index.IndexKind``).
        """
        return self._backend.index_kinds()

    @translate_errors
    def last_query_skipping_stats(self) -> list[RelationSkippingStats]:
        """Data skipping statistics of the most recent query this session ran.

        One entry per scanned relation a data skipping index pruned: files and bytes in total,
        skipped and read, and which index and sketch skipped them. Empty when the last query
        (any action: ``collect``, ``count``, ``show``, ...) skipped nothing by index.
        """
        return RelationSkippingStats._list_from_json(self._backend.last_query_skipping_stats_json())

    @translate_errors
    def skipping_stats(self, df: DataFrame) -> list[RelationSkippingStats]:
        """Data skipping statistics of ``df``'s query as it is planned (it need not have run)."""
        return RelationSkippingStats._list_from_json(self._backend.skipping_stats_json(df))

    @translate_errors
    def refresh_index(self, name: str, mode: RefreshMode = "full") -> MaintenanceResult:
        """Brings index ``name`` up to date with its source, with the index's own stored settings.

        Modes: ``"full"`` rebuilds it from the source as it is now; ``"incremental"`` indexes only
        appended files and drops the rows of deleted ones through the lineage column (deletes need
        a covering index created with lineage; a data skipping index drops deleted files' sketch
        rows by file id); ``"quick"`` records the changed files in the log only, and
        queries make up for them with hybrid scan. A file rewritten in place (same path, other
        size or time) counts as deleted and appended. An unchanged source is a no-op
        (``result.changed`` is False).

        Raises:
            HyperspaceIndexNotFoundException: no such index.
            HyperspaceException: bad mode, the index is not ACTIVE, or deletes without lineage.
            HyperspaceConflictException: an incompatible operation holds the index.
        """
        index = _index_name(name)
        return MaintenanceResult._from_json(
            self._run("refresh", index, lambda: self._backend.refresh_index_json(index, mode))
        )

    @translate_errors
    def optimize_index(self, name: str, mode: OptimizeMode = "quick") -> MaintenanceResult:
        """Compacts index ``name``'s data files within each bucket (a data skipping index: its sketch
        files into one); query results never change.

        Modes: ``"quick"`` merges, per bucket, the files smaller than
        ``spark.hyperspace.index.optimize.fileSizeThreshold``; ``"full"`` leaves one file per
        bucket. The replaced files stay until :meth:`vacuum_index`.

        Raises:
            HyperspaceIndexNotFoundException: no such index.
            HyperspaceException: bad mode or the index is not ACTIVE.
        """
        index = _index_name(name)
        return MaintenanceResult._from_json(
            self._run("optimize", index, lambda: self._backend.optimize_index_json(index, mode))
        )

    @translate_errors
    def delete_index(self, name: str) -> None:
        """Soft-deletes an ACTIVE index: queries stop using it; ``restore_index`` undoes it."""
        self._backend.delete_index(_index_name(name))

    @translate_errors
    def restore_index(self, name: str) -> None:
        """Brings a DELETED index back to ACTIVE."""
        self._backend.restore_index(_index_name(name))

    @translate_errors
    def vacuum_index(self, name: str, retain_hours: float | None = None) -> MaintenanceResult:
        """Removes the data versions index ``name`` has not used for the retention period
        (``spark.hyperspace.index.vacuum.retention``, default 168 hours, like Delta's VACUUM), so
        queries planned or running on an earlier version keep working. A DELETED index is removed
        for good, freeing the name, once its data is past the retention (counted from the
        delete); until then it stays DELETED. The result's ``message`` says what was kept.

        Args:
            retain_hours: keep unused versions this many hours instead of the configured
                retention. Shorter than configured is refused unless
                ``spark.hyperspace.index.vacuum.retentionCheck.enabled`` is false.

        Raises:
            HyperspaceIndexNotFoundException: no such index.
            HyperspaceException: the index is not ACTIVE or DELETED, or ``retain_hours`` is refused.
        """
        hours = None if retain_hours is None else float(retain_hours)
        return MaintenanceResult._from_json(self._backend.vacuum_index_json(_index_name(name), hours))

    @translate_errors
    def cancel(self, name: str, force: bool = False) -> None:
        """Rolls an index whose operation crashed or was killed back to its last stable state.

        Refused while the operation's process is still running on this host (its work would be
        deleted under it), unless ``force=True``.

        Raises:
            HyperspaceIndexNotFoundException: no such index.
            HyperspaceException: the index has no unfinished operation.
            HyperspaceConflictException: the operation's process is still running (and not ``force``).
        """
        if not isinstance(force, bool):
            raise exceptions.HyperspaceException(f"cancel's force must be True or False; got {force!r}.")
        self._backend.cancel(_index_name(name), force)

    @translate_errors
    def indexes(self) -> DataFrame:
        """One row per index: ``name``, ``kind``, ``indexedColumns``, ``includedColumns``,
        ``numBuckets``, ``state``, ``indexLocation`` (the directory holding the index data: its
        data version directory when all files lie in one, as in the original Hyperspace),
        ``sizeInBytes``, ``numIndexFiles``, ``numSourceFiles``, ``appendedFiles`` and
        ``deletedFiles`` (source files changed since the index data was built — pending for a
        refresh; null if the source cannot be listed), ``lastModified``, ``indexRoot`` (the
        index's directory: its log and every data version), ``additionalStats`` (the
        original's kind-specific properties) and ``stateReason`` (why the state is ``CORRUPT``:
        the damaged log entry and what is wrong with it; null otherwise)."""
        return self._backend.indexes()

    @translate_errors
    def list_indexes(self) -> DataFrame:
        """One row per index in words, for reading in a notebook: ``name``, ``kind``, ``source``
        (format, then table or paths), ``columns`` (indexed, then ``include`` and the included
        ones), ``state``, ``size`` (e.g. ``"1.5 MiB"``) and ``freshness`` (``"up to date"``, or
        how many source files were appended and deleted since the index data was built).
        :meth:`indexes` has every statistic, typed, as the original Hyperspace listed them."""
        return self._backend.list_indexes()

    @translate_errors
    def index(self, name: str) -> DataFrame:
        """One row for ``name``: the columns of :meth:`indexes` plus ``lineage``, ``dataVersion``,
        ``logVersion``, ``sourceFormat``, ``sourceRootPaths``, ``sourceTable``,
        ``sourceSizeInBytes``, ``schema``, ``signature`` and the original Hyperspace's
        ``kindAbbr``, ``sizeIndexFiles``, ``sizeSourceFiles``, ``numAppendedFiles``,
        ``sizeAppendedFiles``, ``numDeletedFiles``, ``sizeDeletedFiles`` (the changes a quick
        refresh recorded in the log) and ``indexContentPaths``."""
        return self._backend.index(_index_name(name))

    @translate_errors
    def explain(
        self,
        df: DataFrame,
        verbose: bool = False,
        redirect_func: Callable[[str], object] | None = None,
        *,
        display: bool = True,
        redirectFunc: Callable[[str], object] | None = None,  # noqa: N803
    ) -> str:
        """The plan of ``df`` with and without indexes, differing lines marked, indexes used.

        ``verbose`` adds operator counts compared between the plans (e.g. ``Exchange 2 → 0``) and
        bytes scanned. The markers follow ``spark.hyperspace.explain.displayMode`` (and the
        ``...displayMode.highlight.beginTag`` / ``endTag`` settings when both are set).

        Args:
            df: the query.
            verbose: add the operator comparison and bytes scanned.
            redirect_func: called with the report instead of printing it, as the original
                Hyperspace's third argument ``redirectFunc`` (also accepted by that name).
            display: print the report (when no ``redirect_func`` is given).

        Returns:
            The report.
        """
        if redirect_func is not None and redirectFunc is not None:
            raise exceptions.HyperspaceException("explain takes redirect_func or redirectFunc, not both.")
        redirect = redirect_func if redirect_func is not None else redirectFunc
        if redirect is not None and not callable(redirect):
            raise exceptions.HyperspaceException(
                f"explain's redirect function must be callable; got {type(redirect).__name__}."
            )
        text = self._backend.explain(df, verbose)
        if redirect is not None:
            redirect(text)
            return text
        return self._show(text, display)

    @translate_errors
    def why_not(self, df: DataFrame, index_name: str | None = None, display: bool = True) -> str:
        """For each index (or only ``index_name``): "used by this query" exactly when the session's
        plan for ``df`` reads it (then what join pruning will decide at run time, if anything),
        otherwise the reasons the optimizer recorded (a column not covered, no filter on the leading
        column, the source changed, rewriting off in this session, ...)."""
        return self._show(self._backend.why_not(df, index_name), display)

    @translate_errors
    def what_if(self, df: DataFrame, *configs: IndexConfig, display: bool = True) -> str:
        """Plans ``df`` as if indexes with ``configs`` existed — nothing is built or written — and
        reports which would be used, the bytes scanned and the shuffles avoided."""
        if not configs or not all(isinstance(c, IndexConfig) for c in configs):
            raise exceptions.HyperspaceException("what_if expects one or more IndexConfig objects.")
        return self._show(self._backend.what_if(df, configs), display)

    @translate_errors
    def recommend(
        self,
        workload: Sequence[WorkloadItem] | None = None,
        budget_bytes: int | None = None,
        max_indexes: int | None = None,
    ) -> Recommendations:
        """The indexes worth building for ``workload`` (DataFrames, SQL strings, or ``(query, weight)``
        tuples): covering, Z-order covering (range filters) and data skipping sketches — MinMax (filtered
        columns whose values cluster by file), BloomFilter or ValueList (equality lookups, sized from sampled
        per-file distinct counts) — from each query's filters and join keys, their benefit from
        what-if plans the rules make on hypothetical indexes (bytes read, shuffles and sorts removed,
        weighted), chosen greedily — by benefit per estimated byte within ``budget_bytes``, by benefit
        when there is no budget — up to ``max_indexes``. Each :class:`RecommendedIndex` has its
        ``kind`` and its ``config`` of that kind. A SQL string must be a query (it is analysed,
        never run; a command such as ``DROP TABLE`` is refused). Nothing is built until
        ``create_all()``. Without ``workload``, the queries this session ran while
        ``spark.hyperspace.advisor.recordQueries`` was on, each weighted by how often it ran (an error
        when recording is off or nothing was recorded). See docs/advisor.md."""
        for value, what in ((budget_bytes, "budget_bytes"), (max_indexes, "max_indexes")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise exceptions.HyperspaceException(
                    f"recommend: {what} must be a whole number of at least 0; got {value!r}."
                )
        queries = None if workload is None else normalize_workload(workload)
        payload, create_all, labels = self._backend.recommend(queries, budget_bytes, max_indexes)
        return Recommendations._from_json(payload, translate_errors(create_all), labels)

    @translate_errors
    def recorded_queries(self) -> list[RecordedQuery]:
        """The queries this session recorded for :meth:`recommend` without a workload, least recently
        run first, each with how many times it ran (empty when recording never ran)."""
        return [RecordedQuery(q, n) for q, n in self._backend.recorded_queries()]

    @translate_errors
    def clear_recorded_queries(self) -> int:
        """Forgets the queries this session recorded; returns how many distinct ones there were."""
        return self._backend.clear_recorded_queries()

    @staticmethod
    def _show(text: str, display: bool) -> str:
        if display:
            print(text)
        return text

    # The original Hyperspace's camelCase names.
    isEnabled = _SessionSwitch(is_hyperspace_enabled, facade_result=False)
    whyNot = why_not
    whatIf = what_if
    createIndex = create_index
    deleteIndex = delete_index
    restoreIndex = restore_index
    vacuumIndex = vacuum_index
    refreshIndex = refresh_index
    optimizeIndex = optimize_index
    lastQuerySkippingStats = last_query_skipping_stats
    skippingStats = skipping_stats
    recordedQueries = recorded_queries
    clearRecordedQueries = clear_recorded_queries

    def __repr__(self) -> str:
        return (
            f"Hyperspace(version={self.version!r}, spark={self.spark_version!r}, "
            f"pyspark={pyspark.__version__!r}, system_path={self.system_path!r})"
        )
