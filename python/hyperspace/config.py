"""Typed access to the ``spark.hyperspace.*`` settings of a session."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar, overload

from pyspark.sql import SparkSession

from hyperspace import exceptions
from hyperspace._jvm import java_class, java_session, translated_errors

__all__ = ["HyperspaceConfig"]

T = TypeVar("T")

_SENTINEL = object()


def _to_bool(raw: str) -> bool:
    return raw.strip().lower() == "true"


def _from_bool(value: object) -> str:
    if not isinstance(value, bool):
        raise TypeError(f"expected a bool, got {type(value).__name__}")
    return "true" if value else "false"


def _from_int(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    return str(value)


def _from_float(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return repr(float(value))


def _from_size(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"expected a byte count or a size string such as '256m', got {type(value).__name__}")
    return str(value)


def _from_duration(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"expected milliseconds or a duration string such as '60s', got {type(value).__name__}")
    return f"{value}ms" if isinstance(value, int) else value


def _ms(raw: str) -> int:
    return int(raw[:-2]) if raw.endswith("ms") else int(raw)


def _from_str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a str, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class _Setting(Generic[T]):
    """A descriptor for one setting: reads the effective value, writes a validated one."""

    key: str
    parse: Callable[[str], T]
    render: Callable[[object], str]
    doc: str
    #: Older names read while ``key`` is unset (the original Hyperspace's), as on the JVM side.
    aliases: tuple[str, ...] = ()

    def __set_name__(self, owner: type, name: str) -> None:
        object.__setattr__(self, "name", name)

    @overload
    def __get__(self, instance: None, owner: type) -> _Setting[T]: ...

    @overload
    def __get__(self, instance: HyperspaceConfig, owner: type) -> T: ...

    def __get__(self, instance: HyperspaceConfig | None, owner: type) -> T | _Setting[T]:
        if instance is None:
            return self
        return self.parse(instance.get(self.key))

    def __set__(self, instance: HyperspaceConfig, value: T) -> None:
        instance.set(self.key, value)


class HyperspaceConfig:
    """The Hyperspace settings of one SparkSession, as typed attributes.

    Reading an attribute returns the effective value (the default when unset); assigning one
    validates it on the JVM side and sets it in the session. ``override`` sets several for the
    duration of a ``with`` block and restores the previous values afterwards, even on error.

    Example:
        >>> conf = HyperspaceConfig(spark)
        >>> conf.num_buckets
        200
        >>> with conf.override(num_buckets=8, lineage_enabled=True):
        ...     hs.create_index(df, IndexConfig("idx", ["id"]))
    """

    system_path = _Setting(
        "spark.hyperspace.system.path",
        str,
        _from_str,
        "Root directory under which every index lives (default <warehouse>/indexes).",
    )
    apply_enabled = _Setting(
        "spark.hyperspace.apply.enabled",
        _to_bool,
        _from_bool,
        "Whether query rewriting is on in this session (see enable_hyperspace).",
    )
    num_buckets = _Setting(
        "spark.hyperspace.index.numBuckets",
        int,
        _from_int,
        "Buckets of a new covering index (stored in the index). Default 200.",
        aliases=("spark.hyperspace.index.num.buckets",),
    )
    lineage_enabled = _Setting(
        "spark.hyperspace.index.lineage.enabled",
        _to_bool,
        _from_bool,
        "Whether new indexes record each row's source file (stored in the index). Default False.",
    )
    hybrid_scan_enabled = _Setting(
        "spark.hyperspace.index.hybridscan.enabled",
        _to_bool,
        _from_bool,
        "Whether stale indexes may be used through hybrid scan. Default False.",
    )
    hybrid_scan_max_appended_ratio = _Setting(
        "spark.hyperspace.index.hybridscan.maxAppendedRatio",
        float,
        _from_float,
        "Largest appended bytes / source bytes for hybrid scan. Default 0.3.",
    )
    hybrid_scan_max_deleted_ratio = _Setting(
        "spark.hyperspace.index.hybridscan.maxDeletedRatio",
        float,
        _from_float,
        "Largest deleted bytes / indexed source bytes for hybrid scan. Default 0.2.",
    )
    optimize_file_size_threshold = _Setting(
        "spark.hyperspace.index.optimize.fileSizeThreshold",
        int,
        _from_size,
        "Index files smaller than this many bytes are merged by quick optimize (default 256m).",
    )
    zorder_target_file_size = _Setting(
        "spark.hyperspace.index.zorder.targetFileSize",
        int,
        _from_size,
        "Largest index file a Z-order covering index build aims for, in bytes (default 128m).",
    )
    zorder_page_rows = _Setting(
        "spark.hyperspace.index.zorder.pageRows",
        int,
        _from_int,
        "Most rows in one Parquet page of a Z-order covering index's files; a range reads only the "
        "pages whose min/max can match (default 20000, Parquet's own).",
    )
    explain_display_mode = _Setting(
        "spark.hyperspace.explain.displayMode",
        str,
        _from_str,
        "How explain marks differences: 'plaintext', 'console' or 'html'.",
    )
    explain_highlight_begin_tag = _Setting(
        "spark.hyperspace.explain.displayMode.highlight.beginTag",
        str,
        _from_str,
        "Text before each line explain marks; with the end tag, replaces the mode's markers.",
    )
    explain_highlight_end_tag = _Setting(
        "spark.hyperspace.explain.displayMode.highlight.endTag",
        str,
        _from_str,
        "Text after each line explain marks (used only when both tags are set).",
    )
    dataskipping_auto_partition_sketch = _Setting(
        "spark.hyperspace.index.dataskipping.autoPartitionSketch",
        _to_bool,
        _from_bool,
        "Whether data skipping indexes of partitioned sources get a partition sketch.",
    )

    concurrency_wait_timeout = _Setting(
        "spark.hyperspace.concurrency.waitTimeout",
        _ms,
        _from_duration,
        "Milliseconds an operation waits for a compatible running one (set e.g. '60s', '2min').",
    )
    vacuum_retention = _Setting(
        "spark.hyperspace.index.vacuum.retention",
        _ms,
        _from_duration,
        "Milliseconds vacuum keeps a data version the index no longer uses (set e.g. '168h').",
    )
    vacuum_retention_check_enabled = _Setting(
        "spark.hyperspace.index.vacuum.retentionCheck.enabled",
        _to_bool,
        _from_bool,
        "Whether vacuum refuses a retain_hours below the retention. Default True.",
    )

    driver_read_max_bytes = _Setting(
        "spark.hyperspace.index.driverRead.maxBytes",
        int,
        _from_size,
        "Index bytes (after bucket and range pruning) up to which a query collected to the driver is read "
        "there, without a Spark job; 0 turns it off (default 16m).",
    )
    driver_read_max_rows = _Setting(
        "spark.hyperspace.index.driverRead.maxRows",
        int,
        _from_int,
        "Rows a driver-side read may hold (matching rows, or a grouped aggregate's input) beyond which it "
        "gives way to a Spark job (default 10000).",
    )
    driver_read_threads = _Setting(
        "spark.hyperspace.index.driverRead.threads",
        int,
        _from_int,
        "Threads a driver-side read of several index files reads them on; 0: the driver's processors, at "
        "most 8 (default 0). With more than one, a global aggregate over at most driver_read_max_bytes of "
        "index files is planned as one partition, answered in the driver when collected.",
    )

    one_partition_max_bytes = _Setting(
        "spark.hyperspace.index.onePartition.maxBytes",
        int,
        _from_size,
        "Index bytes (after bucket and range pruning) up to which an aggregate over an index scan that "
        "Spark reads as one input partition is planned with no shuffle; 0 turns it off (default 8m).",
    )

    broadcast_probe_enabled = _Setting(
        "spark.hyperspace.index.broadcastProbe.enabled",
        _to_bool,
        _from_bool,
        "Whether the streamed side of a join Spark broadcasts, reading its whole table, reads a covering "
        "index led by the join key so its probes arrive in key order (default True).",
    )

    decimals_on_longs_enabled = _Setting(
        "spark.hyperspace.index.decimalsOnLongs.enabled",
        _to_bool,
        _from_bool,
        "Whether, over an index scan, sums of DECIMALs of 9 to 18 digits (or of exact products of two) add "
        "unscaled longs while they fit, with Spark's result, nulls and overflow, and filters compare such "
        "columns with literals as longs (default True).",
    )

    indexed_num_partitions = _Setting(
        "spark.hyperspace.indexed.numPartitions",
        int,
        _from_int,
        "Partitions of a new Indexed DataFrame (default spark.sql.shuffle.partitions).",
    )
    indexed_batch_size = _Setting(
        "spark.hyperspace.indexed.batchSize",
        int,
        _from_size,
        "Largest row batch of an Indexed DataFrame partition in bytes (default 4m).",
    )
    indexed_compression = _Setting(
        "spark.hyperspace.indexed.compression",
        str,
        _from_str,
        "How an Indexed DataFrame with a key of one long value keeps its row batches once written: "
        "'none' (the default) keeps them as written; 'lz4' or 'zstd' (smaller, slower to decode) "
        "compress them in blocks: less memory, slower joins.",
    )
    indexed_compression_block_size = _Setting(
        "spark.hyperspace.indexed.compression.blockSize",
        int,
        _from_size,
        "Uncompressed bytes of a compressed block of an Indexed DataFrame's row batches: what a "
        "lookup decodes to read one row (default 4k).",
    )
    indexed_row_format = _Setting(
        "spark.hyperspace.indexed.rowFormat",
        str,
        _from_str,
        "How an Indexed DataFrame stores its rows: 'compact' (the default) encodes each row on its "
        "own (varints, a per-partition dictionary of short strings) and decodes only the rows a "
        "query reads; 'unsafe' stores Spark's UnsafeRows. Compact applies to keys of one long "
        "value, atomic columns and no compression; other indexes store UnsafeRows.",
    )
    indexed_join_selection = _Setting(
        "spark.hyperspace.indexed.joinSelection",
        str,
        _from_str,
        "How equi-joins on an Indexed DataFrame's key are planned: 'cost' (the index only when "
        "Spark's own join is not cheaper by size, the default) or 'index' (always the index).",
    )
    indexed_join_one_task_probe_rows = _Setting(
        "spark.hyperspace.indexed.join.oneTaskProbeRows",
        int,
        _from_int,
        "Probe sides of an indexed join broadcast to the index partitions with at most this many "
        "rows are joined in one task when one executor caches the whole index: the output is one "
        "partition, so an aggregate above it needs no exchange (default 20000; 0 turns it off).",
    )
    indexed_join_count_probe_rows = _Setting(
        "spark.hyperspace.indexed.join.countProbeRows",
        _to_bool,
        _from_bool,
        "Whether the cost-based join selection counts a small probe side's rows (a job reading it "
        "under a limit) when only an estimate from its size, which no filter lowers, would leave "
        "the join to Spark; false decides on that estimate (default true).",
    )
    indexed_join_probe_in_place = _Setting(
        "spark.hyperspace.indexed.join.probeInPlace",
        _to_bool,
        _from_bool,
        "In local mode, whether an indexed join with a small probe side reads the probe rows where "
        "they are and joins them with the index partitions in place, instead of broadcasting the "
        "probe side first (inner, probe-side outer, semi and anti joins; default true).",
    )
    indexed_lookup_read_in_place = _Setting(
        "spark.hyperspace.indexed.lookup.readInPlace",
        _to_bool,
        _from_bool,
        "Whether a collected key lookup on an Indexed DataFrame reads a partition the driver's own "
        "block manager holds (local mode) in place, without a Spark job (default true).",
    )
    indexed_kept_broadcasts_max_bytes = _Setting(
        "spark.hyperspace.indexed.keptBroadcasts.maxBytes",
        int,
        _from_size,
        "Bytes of Spark's broadcasts of a cached Indexed DataFrame version's rows (a small index side "
        "of a join) kept with the version, so later queries reuse them instead of broadcasting the "
        "rows again; released by unpersist(); 0 turns it off (default 64m).",
    )
    split_max_read_fraction = _Setting(
        "spark.hyperspace.index.split.maxReadFraction",
        float,
        _from_float,
        "Largest fraction of a scan's bytes a split index seek may read (default 0.25).",
    )
    split_max_locations = _Setting(
        "spark.hyperspace.index.split.maxLocations",
        int,
        _from_int,
        "Most matching index rows a split index seek collects while planning (default 100000).",
    )
    split_driver_read_max_bytes = _Setting(
        "spark.hyperspace.index.split.driverRead.maxBytes",
        int,
        _from_size,
        "Bytes of source row groups (plus files the index does not cover) up to which a split index seek "
        "collected to the driver is read there, without a Spark job; 0 turns it off (default 32m).",
    )
    split_join_pruning_enabled = _Setting(
        "spark.hyperspace.index.split.joinPruning.enabled",
        _to_bool,
        _from_bool,
        "Whether the keys of a broadcast join side, read at run time from the broadcast, prune the row "
        "groups a split index's source reads (default True).",
    )
    split_join_pruning_max_keys = _Setting(
        "spark.hyperspace.index.split.joinPruning.maxKeys",
        int,
        _from_int,
        "Most distinct broadcast join keys join pruning seeks for (default 1000).",
    )
    dataskipping_join_pruning_enabled = _Setting(
        "spark.hyperspace.index.dataskipping.joinPruning.enabled",
        _to_bool,
        _from_bool,
        "Whether the keys of a broadcast join side, read at run time from the broadcast, prune the files "
        "of a source whose data skipping index has a sketch on the join key (default True).",
    )
    dataskipping_join_pruning_max_keys = _Setting(
        "spark.hyperspace.index.dataskipping.joinPruning.maxKeys",
        int,
        _from_int,
        "Most distinct broadcast join keys data skipping's join pruning checks the sketches against (default 1000).",
    )
    dataskipping_join_pruning_table_formats_enabled = _Setting(
        "spark.hyperspace.index.dataskipping.joinPruning.tableFormats.enabled",
        _to_bool,
        _from_bool,
        "Whether data skipping's join pruning also narrows Delta tables (and Iceberg scans the sketches "
        "pruned while planning) through the format's scan (default False: measured slower than no index).",
    )
    covering_join_pruning_enabled = _Setting(
        "spark.hyperspace.index.covering.joinPruning.enabled",
        _to_bool,
        _from_bool,
        "Whether the keys of a broadcast join side, read at run time from the broadcast, prune the files "
        "of a source whose covering index (with lineage, led by the join key) does not cover the query: "
        "only the files its buckets name for the keys are read (default True).",
    )
    covering_join_pruning_max_keys = _Setting(
        "spark.hyperspace.index.covering.joinPruning.maxKeys",
        int,
        _from_int,
        "Most distinct broadcast join keys a covering index's join pruning looks up in its buckets (default 1000).",
    )
    covering_join_pruning_max_read_fraction = _Setting(
        "spark.hyperspace.index.covering.joinPruning.maxReadFraction",
        float,
        _from_float,
        "A covering index's join pruning looks up at most the keys expected to keep this fraction of the "
        "scan's files, and reads index files of at most this fraction of its bytes (default 0.25).",
    )
    audit_sample_rate = _Setting(
        "spark.hyperspace.audit.sampleRate",
        float,
        _from_float,
        "Fraction of the files an index pruned (a split index seek; data skipping, for a filter or a "
        "join's keys) that planning re-scans to check it; a skipped matching row fails the query (0: off).",
    )
    advisor_record_queries = _Setting(
        "spark.hyperspace.advisor.recordQueries",
        _to_bool,
        _from_bool,
        "Whether the session records the queries it runs for recommend() without a workload (default False).",
    )
    advisor_max_recorded_queries = _Setting(
        "spark.hyperspace.advisor.maxRecordedQueries",
        int,
        _from_int,
        "Most distinct recorded queries a session keeps; the least recently run goes first (default 200).",
    )
    advisor_bloom_filter_fpp = _Setting(
        "spark.hyperspace.advisor.bloomFilterFpp",
        float,
        _from_float,
        "False positive probability of the BloomFilter sketches the advisor recommends (default 0.01).",
    )

    # No instance dictionary: a misspelt setting (conf.num_bucket = 8) must fail, not quietly
    # become a Python attribute that changes nothing.
    __slots__ = ("_spark", "_java_conf")

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._java_conf = java_class(spark, "config.HyperspaceConf")

    def __setattr__(self, name: str, value: object) -> None:
        if name in self.__slots__ or isinstance(getattr(type(self), name, None), _Setting):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(self._unknown(name))

    def __getattr__(self, name: str) -> object:
        # Called only for names that are not settings, methods or slots.
        raise AttributeError(self._unknown(name))

    @classmethod
    def _unknown(cls, name: str) -> str:
        close = difflib.get_close_matches(name, list(cls.settings()), n=3)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        return f"HyperspaceConfig has no setting '{name}'.{hint} Settings: {', '.join(cls.settings())}."

    @classmethod
    def settings(cls) -> dict[str, str]:
        """Attribute name → ``spark.hyperspace.*`` key, for every setting."""
        return {name: s.key for name, s in vars(cls).items() if isinstance(s, _Setting)}

    @classmethod
    def aliases(cls) -> dict[str, str]:
        """Older key (the original Hyperspace's name) → the key it is an alias of."""
        return {alias: s.key for s in vars(cls).values() if isinstance(s, _Setting) for alias in s.aliases}

    def _setting(self, name_or_key: str) -> _Setting[object]:
        for name, setting in vars(type(self)).items():
            if isinstance(setting, _Setting) and (name_or_key in (name, setting.key) or name_or_key in setting.aliases):
                return setting
        raise exceptions.HyperspaceException(
            f"Unknown Hyperspace setting '{name_or_key}'. Known settings: "
            + ", ".join(f"{n} ({k})" for n, k in self.settings().items())
        )

    def get(self, key: str) -> str:
        """The effective value of ``key`` (an attribute name, a full key or an older alias of one)
        as a string; an alias key set in the session is read while the main key is unset."""
        setting = self._setting(key)
        with translated_errors():
            return str(self._java_conf.effectiveValue(java_session(self._spark), setting.key))

    def _validated(self, key: str, value: object) -> tuple[str, str]:
        setting = self._setting(key)
        try:
            raw = setting.render(value)
        except TypeError as e:
            raise exceptions.HyperspaceException(f"Invalid value {value!r} for {setting.key}: {e}.") from None
        with translated_errors():
            return setting.key, str(self._java_conf.validate(setting.key, raw))

    def set(self, key: str, value: object) -> None:
        """Validates ``value`` and sets ``key`` (an attribute name or a full key) in the session.
        Given an older alias key, the setting's own key is set (it wins over the alias)."""
        full_key, raw = self._validated(key, value)
        self._spark.conf.set(full_key, raw)

    def unset(self, key: str) -> None:
        """Removes ``key`` (and any older alias of it) from the session, so its default applies again."""
        setting = self._setting(key)
        for k in (setting.key, *setting.aliases):
            self._spark.conf.unset(k)

    def to_dict(self) -> dict[str, object]:
        """Every setting's effective typed value, by attribute name."""
        return {name: getattr(self, name) for name in self.settings()}

    @contextmanager
    def override(self, **settings: object) -> Iterator[HyperspaceConfig]:
        """Sets ``settings`` (attribute names) for the ``with`` block, then restores them.

        All values are validated before any is set, so an invalid one changes nothing.
        """
        validated = [self._validated(name, value) for name, value in settings.items()]
        previous = {key: self._spark.conf.get(key, None) for key, _ in validated}
        try:
            for key, raw in validated:
                self._spark.conf.set(key, raw)
            yield self
        finally:
            for key, old in previous.items():
                if old is None:
                    self._spark.conf.unset(key)
                else:
                    self._spark.conf.set(key, old)

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"HyperspaceConfig({values})"
