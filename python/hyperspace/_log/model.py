"""The index log's data model (``docs/log-format.md``, spec version 1): constants and the
immutable records an entry is read into."""

from __future__ import annotations

from dataclasses import dataclass, field

SPEC_VERSION: int = 1
"""The only log spec version this reader knows; entries of another version are refused."""

STABLE_STATES: frozenset[str] = frozenset({"ACTIVE", "DELETED", "DOESNOTEXIST"})
"""States readers may use (the final state of every operation)."""

TRANSIENT_STATES: frozenset[str] = frozenset(
    {"CREATING", "REFRESHING", "OPTIMIZING", "DELETING", "RESTORING", "VACUUMING"}
)
"""States of an operation in progress (or crashed): the entry is the operation's lock."""

LOG_DIR_NAME: str = "_hyperspace_log"
"""Name of the log directory inside an index directory."""

LATEST_STABLE_FILE: str = "latestStable"
"""Name of the file in the log directory holding the id of the newest stable entry."""

SIGNATURE_PROVIDER: str = "FileSetMD5"
"""The signature provider :func:`signature_of` implements."""


@dataclass(frozen=True)
class Owner:
    """Who wrote an entry: lets a later operation tell whether a transient entry's process lives.

    Attributes:
        host: host name of the writing process.
        pid: process id of the writing process.
        started_at: when that process started, milliseconds since the epoch (UTC).
    """

    host: str
    pid: int
    started_at: int


@dataclass(frozen=True)
class IndexDefinition:
    """What the index is: its kind and kind-specific definition.

    Attributes:
        kind: the index kind, ``CoveringIndex``.
        kind_version: version of the kind's definition, ``1``.
        indexed_columns: the indexed columns, in order (data is bucketed and sorted on them).
        included_columns: further columns stored in the index.
        num_buckets: number of hash buckets.
        lineage: whether the data has the lineage column ``_data_file_id``.
        schema: the index data's schema, as Spark's JSON schema string.
        properties: kind-specific extras.
    """

    kind: str
    kind_version: int
    indexed_columns: tuple[str, ...]
    included_columns: tuple[str, ...]
    num_buckets: int
    lineage: bool
    schema: str
    properties: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ColumnStats:
    """A column's values in one index data file.

    Attributes:
        min: the smallest non-null value, as text in the column's type (``docs/log-format.md``,
            "content"); None when every value is NULL.
        max: the largest non-null value, likewise.
        null_count: the number of NULLs.
    """

    min: str | None
    max: str | None
    null_count: int


@dataclass(frozen=True)
class LocationStats:
    """What a split index data file holds of source locations (approximate distinct counts), so a
    seek can estimate the row groups a filter reaches before reading the index.

    Attributes:
        keys: distinct key values (tuples, for several key columns) in the file.
        key_row_groups: distinct (key, source file, row group) triples in the file.
        row_group_bytes: the sum over the file's rows of the compressed bytes of each row's row
            group (divided by the row count: the row-weighted mean row group size).
    """

    keys: int
    key_row_groups: int
    row_group_bytes: int


@dataclass(frozen=True)
class FileStats:
    """What the index's kind recorded of one data file (covering and Z-order covering indexes:
    their indexed columns).

    Attributes:
        row_count: the file's number of rows.
        columns: per stored column name (as in the index's schema), its range in the file; a
            column missing here has no range recorded for the file.
        locations: a split index file's location counts (absent for other kinds and in logs
            written before they were recorded).
    """

    row_count: int
    columns: dict[str, ColumnStats] = field(default_factory=dict, hash=False)
    locations: LocationStats | None = None


@dataclass(frozen=True)
class ContentFile:
    """One index data file.

    Attributes:
        path: path relative to the index root, starting with its data version directory
            (``v__=2/part-...parquet``): refresh and optimize keep using earlier versions' files.
        size: size in bytes.
        modification_time: last modification, milliseconds since the epoch (UTC).
        stats: the file's row count and ranges of its indexed columns, when its kind recorded
            them (absent in older logs: then the file may hold any value).
    """

    path: str
    size: int
    modification_time: int
    stats: FileStats | None = field(default=None, hash=False)


@dataclass(frozen=True)
class Content:
    """The index data: its files under ``root``.

    Attributes:
        root: fully qualified URI of the index directory.
        data_version: the data version directory the operation that wrote the entry wrote into.
        files: every data file of the index, in any of its version directories.
    """

    root: str
    data_version: int
    files: tuple[ContentFile, ...]

    @property
    def size_in_bytes(self) -> int:
        """Total bytes of the index data files."""
        return sum(f.size for f in self.files)

    @property
    def data_path(self) -> str:
        """The directory the entry's operation wrote into: ``<root>/v__=<data_version>``."""
        return f"{self.root}/v__={self.data_version}"

    def path_of(self, file: ContentFile) -> str:
        """The fully qualified path of ``file``."""
        return f"{self.root}/{file.path}"

    @property
    def versions_used(self) -> frozenset[int]:
        """The data versions whose directories hold the files (and the one the entry wrote)."""
        versions = {self.data_version}
        for f in self.files:
            head = f.path.split("/", 1)[0]
            if head.startswith("v__=") and head[4:].isdigit():
                versions.add(int(head[4:]))
        return frozenset(versions)


@dataclass(frozen=True)
class SourceFile:
    """One source file the index was built from; identity is (path, size, modification_time,
    deletion_vector).

    Attributes:
        path: fully qualified URI of the file.
        size: size in bytes.
        modification_time: last modification, milliseconds since the epoch (UTC).
        id: the file's id, unique within the index and stable across versions (the value of
            the lineage column ``_data_file_id`` for its rows).
        deletion_vector: for a Delta file read with a deletion vector, the vector's unique id
            (the index holds the rows it leaves); None otherwise.
    """

    path: str
    size: int
    modification_time: int
    id: int
    deletion_vector: str | None = None


@dataclass(frozen=True)
class Source:
    """The data an index was built from.

    Attributes:
        format: Spark data source short name (``parquet``, ``csv``, ...).
        root_paths: the fully qualified paths the source was read from.
        options: the read options.
        schema: the source's data schema (Spark JSON schema string).
        partition_schema: the hive partition columns' schema (Spark JSON schema string).
        table: the catalog table name when the index was created from ``spark.table(...)``.
        files: every source file the index data covers.
        appended_files: files a quick refresh recorded as appended since (not yet indexed).
        deleted_files: files a quick refresh recorded as deleted since (rows still indexed).
    """

    format: str
    root_paths: tuple[str, ...]
    options: dict[str, str] = field(hash=False)
    schema: str
    partition_schema: str
    table: str | None
    files: tuple[SourceFile, ...]
    appended_files: tuple[SourceFile, ...] = ()
    deleted_files: tuple[SourceFile, ...] = ()

    @property
    def size_in_bytes(self) -> int:
        """Total bytes of the source files the index data covers."""
        return sum(f.size for f in self.files)

    @property
    def current_files(self) -> tuple[SourceFile, ...]:
        """The source as of the newest refresh: indexed files minus recorded deletes, plus appends."""
        deleted = {(f.path, f.size, f.modification_time) for f in self.deleted_files}
        kept = tuple(f for f in self.files if (f.path, f.size, f.modification_time) not in deleted)
        return kept + self.appended_files


@dataclass(frozen=True)
class Signature:
    """A fingerprint of the source file set.

    Attributes:
        provider: how ``value`` was computed; ``FileSetMD5`` (see :func:`signature_of`).
        value: the fingerprint.
    """

    provider: str
    value: str


@dataclass(frozen=True)
class LogEntry:
    """One immutable entry of an index log (``docs/log-format.md``, "Entry").

    Attributes:
        spec_version: the log spec version, ``1``.
        id: the entry's id (equals its file name).
        name: the index name, as the user wrote it.
        state: one of :data:`STABLE_STATES` or :data:`TRANSIENT_STATES`.
        operation: the operation that wrote the entry (``CREATE``, ``DELETE``, ...).
        timestamp: when the entry was written, milliseconds since the epoch (UTC).
        enabled: whether queries may use the index.
        owner: the process that wrote the entry.
        index: the index definition.
        content: the index data.
        source: the data the index was built from.
        signature: the fingerprint of the source files.
        extra: free string pairs for extensions.
        incarnation: the random id the create of this index chose, kept by every later entry: an
            index deleted, vacuumed and created again under the same name has another one
            (None in logs written before it existed).
    """

    spec_version: int
    id: int
    name: str
    state: str
    operation: str
    timestamp: int
    enabled: bool
    owner: Owner
    index: IndexDefinition
    content: Content
    source: Source
    signature: Signature
    extra: dict[str, str] = field(default_factory=dict, hash=False)
    incarnation: str | None = None

    @property
    def is_stable(self) -> bool:
        """Whether the entry is in a stable state (the only entries readers use)."""
        return self.state in STABLE_STATES

    @property
    def data_path(self) -> str:
        """The directory holding this entry's index data: ``<content.root>/v__=<dataVersion>``."""
        return self.content.data_path
