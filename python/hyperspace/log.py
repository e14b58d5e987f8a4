"""A pure-Python reader of the Hyperspace index log (no JVM, no Spark).

An index directory holds ``_hyperspace_log/`` with one immutable JSON entry per operation step,
named by its id, plus a ``latestStable`` pointer. The format is specified in
``docs/log-format.md`` (spec version 1); this module follows it and reads through
:mod:`pyarrow.fs`, so it works on any filesystem pyarrow supports (local, S3, GCS, HDFS, ...).

Example::

    from hyperspace.log import history, latest_stable

    entry = latest_stable("/lake/indexes/orders_by_customer")
    print(entry.state, entry.index.indexed_columns, entry.data_path)
    print(history("file:/lake/indexes/orders_by_customer"))

Paths may be plain local paths or ``file:`` URIs in any of the forms Spark and Python write
(``file:/x``, ``file:///x``, ``file://localhost/x``); other URIs (``s3://...``) are resolved with
:meth:`pyarrow.fs.FileSystem.from_uri`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar
from urllib.parse import unquote

import pyarrow.fs as pafs

from hyperspace.exceptions import HyperspaceCorruptedLogException, HyperspaceException

if TYPE_CHECKING:
    import pandas

__all__ = [
    "SPEC_VERSION",
    "STABLE_STATES",
    "TRANSIENT_STATES",
    "LOG_DIR_NAME",
    "LATEST_STABLE_FILE",
    "SIGNATURE_PROVIDER",
    "Owner",
    "IndexDefinition",
    "ContentFile",
    "Content",
    "SourceFile",
    "Source",
    "Signature",
    "LogEntry",
    "parse_entry",
    "read_log",
    "latest_stable",
    "history",
    "HISTORY_COLUMNS",
    "signature_of",
]

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

# Entry files: a non-negative decimal integer without padding. Anything else is ignored.
_ENTRY_NAME = re.compile(r"0|[1-9][0-9]*")
_POINTER_TEXT = re.compile(r"[0-9]+")


# ---------------------------------------------------------------------------------------------
# Data model
# ---------------------------------------------------------------------------------------------


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
class ContentFile:
    """One index data file.

    Attributes:
        path: path relative to the index root, starting with its data version directory
            (``v__=2/part-...parquet``): refresh and optimize keep using earlier versions' files.
        size: size in bytes.
        modification_time: last modification, milliseconds since the epoch (UTC).
    """

    path: str
    size: int
    modification_time: int


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
    """One source file the index was built from; identity is (path, size, modification_time).

    Attributes:
        path: fully qualified URI of the file.
        size: size in bytes.
        modification_time: last modification, milliseconds since the epoch (UTC).
        id: the file's id, unique within the index and stable across versions (the value of
            the lineage column ``_data_file_id`` for its rows).
    """

    path: str
    size: int
    modification_time: int
    id: int


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


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

_MISSING = object()
T = TypeVar("T")


class _Invalid(Exception):
    """A field-level problem; turned into a HyperspaceException naming the file."""


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class _Obj:
    """Typed access to one JSON object, tracking its location for error messages."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise _Invalid(f"'{where or '<entry>'}' must be an object, got {_type_name(data)}")
        self.data: dict[str, Any] = data
        self.where = where

    def _loc(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, optional: bool) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            if optional:
                return _MISSING
            raise _Invalid(f"missing required field '{self._loc(key)}'")
        return value

    def _check(self, key: str, value: Any, ok: bool, expected: str) -> None:
        if not ok:
            raise _Invalid(f"field '{self._loc(key)}' must be {expected}, got {_type_name(value)}")

    def integer(self, key: str, bits: int = 64, minimum: int | None = None) -> int:
        """A JSON integer that fits the JVM's type of the field (``bits``: 32 for an Int, 64 for a
        Long), and is at least ``minimum`` when given."""
        v = self._get(key, optional=False)
        self._check(key, v, isinstance(v, int) and not isinstance(v, bool), "an integer")
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if minimum is not None:
            low = max(low, minimum)
        if not low <= v <= high:
            shown = str(v) if len(str(v)) <= 40 else f"a {len(str(v))}-digit number"
            raise _Invalid(f"field '{self._loc(key)}' must be an integer from {low} to {high}, got {shown}")
        return int(v)

    def boolean(self, key: str) -> bool:
        v = self._get(key, optional=False)
        self._check(key, v, isinstance(v, bool), "a boolean")
        return bool(v)

    def string(self, key: str) -> str:
        v = self._get(key, optional=False)
        self._check(key, v, isinstance(v, str), "a string")
        return str(v)

    def opt_str(self, key: str) -> str | None:
        v = self._get(key, optional=True)
        if v is _MISSING or v is None:
            return None
        self._check(key, v, isinstance(v, str), "a string or null")
        return str(v)

    def str_list(self, key: str) -> tuple[str, ...]:
        v = self._get(key, optional=False)
        self._check(key, v, isinstance(v, list), "an array of strings")
        for i, item in enumerate(v):
            if not isinstance(item, str):
                raise _Invalid(f"field '{self._loc(key)}[{i}]' must be a string, got {_type_name(item)}")
        return tuple(v)

    def str_map(self, key: str, optional: bool = False) -> dict[str, str]:
        v = self._get(key, optional=optional)
        if v is _MISSING:
            return {}
        self._check(key, v, isinstance(v, dict), "an object of strings")
        for k, item in v.items():
            if not isinstance(item, str):
                raise _Invalid(f"field '{self._loc(key)}.{k}' must be a string, got {_type_name(item)}")
        return dict(v)

    def obj(self, key: str) -> _Obj:
        v = self._get(key, optional=False)
        self._check(key, v, isinstance(v, dict), "an object")
        return _Obj(v, self._loc(key))

    def objs(self, key: str, build: Callable[[_Obj], T]) -> tuple[T, ...]:
        v = self._get(key, optional=False)
        self._check(key, v, isinstance(v, list), "an array of objects")
        out = []
        for i, item in enumerate(v):
            loc = f"{self._loc(key)}[{i}]"
            if not isinstance(item, dict):
                raise _Invalid(f"field '{loc}' must be an object, got {_type_name(item)}")
            out.append(build(_Obj(item, loc)))
        return tuple(out)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _source_file(f: _Obj) -> SourceFile:
    return SourceFile(
        path=f.string("path"),
        size=f.integer("size", minimum=0),
        modification_time=f.integer("modificationTime"),
        id=f.integer("id", minimum=0),
    )


def _build_entry(root: _Obj) -> LogEntry:
    state = root.string("state")
    if state not in STABLE_STATES and state not in TRANSIENT_STATES:
        raise _Invalid(f"unknown state '{state}'")
    owner = root.obj("owner")
    index = root.obj("index")
    content = root.obj("content")
    source = root.obj("source")
    signature = root.obj("signature")
    return LogEntry(
        spec_version=root.integer("specVersion", bits=32),
        id=root.integer("id", minimum=0),
        name=root.string("name"),
        state=state,
        operation=root.string("operation"),
        timestamp=root.integer("timestamp"),
        enabled=root.boolean("enabled"),
        owner=Owner(
            host=owner.string("host"), pid=owner.integer("pid"), started_at=owner.integer("startedAt")
        ),
        index=IndexDefinition(
            kind=index.string("kind"),
            kind_version=index.integer("kindVersion", bits=32),
            indexed_columns=index.str_list("indexedColumns"),
            included_columns=index.str_list("includedColumns"),
            num_buckets=index.integer("numBuckets", bits=32, minimum=0),
            lineage=index.boolean("lineage"),
            schema=index.string("schema"),
            properties=index.str_map("properties", optional=True),
        ),
        content=Content(
            root=content.string("root"),
            data_version=content.integer("dataVersion", bits=32, minimum=0),
            files=content.objs(
                "files",
                lambda f: ContentFile(
                    path=f.string("path"),
                    size=f.integer("size", minimum=0),
                    modification_time=f.integer("modificationTime"),
                ),
            ),
        ),
        source=Source(
            format=source.string("format"),
            root_paths=source.str_list("rootPaths"),
            options=source.str_map("options"),
            schema=source.string("schema"),
            partition_schema=source.string("partitionSchema"),
            table=source.opt_str("table"),
            files=source.objs("files", _source_file),
            appended_files=source.objs("appendedFiles", _source_file),
            deleted_files=source.objs("deletedFiles", _source_file),
        ),
        signature=Signature(provider=signature.string("provider"), value=signature.string("value")),
        extra=root.str_map("extra", optional=True),
        incarnation=root.opt_str("incarnation"),
    )


def parse_entry(text: str, where: str) -> LogEntry:
    """Parses the JSON text of one log entry.

    Unknown fields are ignored (they may be added within spec version 1). The nullable
    ``source.table`` and the free maps ``index.properties`` and ``extra`` may be absent; every
    other field of the spec is required and type-checked.

    Args:
        text: the entry's JSON text.
        where: the entry's file, named in error messages.

    Returns:
        The entry.

    Raises:
        HyperspaceCorruptedLogException: (a :class:`HyperspaceException` and a :class:`ValueError`)
            the text is not valid JSON (NaN and Infinity included, or nested too deeply), misses a
            required field, has a field of the wrong type, an integer out of the range of its JVM
            type (or negative where it cannot be), an unknown state, or a ``specVersion`` other
            than :data:`SPEC_VERSION`. The message names ``where``.
    """
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise HyperspaceCorruptedLogException(
            f"Corrupted index log entry {where}: not valid JSON "
            f"({e.msg} at line {e.lineno} column {e.colno})."
        ) from None
    except (ValueError, RecursionError) as e:
        raise HyperspaceCorruptedLogException(f"Corrupted index log entry {where}: not valid JSON ({e}).") from None
    try:
        root = _Obj(data, "")
        # Check the version first: an entry of another version may have other fields.
        version = root.integer("specVersion", bits=32)
        if version != SPEC_VERSION:
            raise HyperspaceCorruptedLogException(
                f"Index log entry {where} has specVersion {version}; this reader knows version "
                f"{SPEC_VERSION} only. Upgrade Hyperspace to read this index."
            )
        return _build_entry(root)
    except _Invalid as e:
        raise HyperspaceCorruptedLogException(f"Corrupted index log entry {where}: {e}.") from None


# ---------------------------------------------------------------------------------------------
# Reading from a filesystem
# ---------------------------------------------------------------------------------------------


def _file_uri_to_path(uri: str) -> str:
    """``file:/x``, ``file:///x``, ``file://localhost/x`` -> ``/x`` (percent-escapes decoded)."""
    rest = uri[len("file:") :]
    if rest.startswith("//"):
        authority, sep, path = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise HyperspaceException(
                f"Cannot read {uri}: a file: URI with host '{authority}' is not a local path."
            )
        rest = sep + path
    path = unquote(rest)
    if os.name == "nt" and re.match(r"/[A-Za-z]:", path):  # file:///C:/x -> C:/x
        path = path[1:]
    return path or "/"


def _resolve(index_path: str, filesystem: pafs.FileSystem | None) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path on it of the index directory (no trailing slash)."""
    if index_path.startswith("file:"):
        fs: pafs.FileSystem = filesystem if filesystem is not None else pafs.LocalFileSystem()
        path = _file_uri_to_path(index_path)
        if fs.type_name == "local":
            path = os.path.abspath(path)
    elif filesystem is not None:
        fs, path = filesystem, index_path
        if fs.type_name == "local":
            path = os.path.abspath(path)
    elif "://" in index_path:
        try:
            fs, path = pafs.FileSystem.from_uri(index_path)
        except (ValueError, OSError) as e:
            raise HyperspaceException(f"Cannot open the filesystem of {index_path}: {e}") from e
    else:  # a plain local path, possibly relative
        fs, path = pafs.LocalFileSystem(), os.path.abspath(index_path)
    stripped = path.rstrip("/")
    return fs, stripped if stripped else path


class _Log:
    """The entry files of one index log directory, read on demand."""

    def __init__(self, index_path: str, filesystem: pafs.FileSystem | None) -> None:
        self.index_path = index_path
        self.fs, path = _resolve(index_path, filesystem)
        self.dir = f"{path.rstrip('/')}/{LOG_DIR_NAME}" if path else LOG_DIR_NAME
        # How files are named in messages: the way the caller wrote the index path.
        self.display_dir = f"{index_path.rstrip('/')}/{LOG_DIR_NAME}"
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.dir, allow_not_found=True))
        except NotADirectoryError:
            infos = []
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
            raise HyperspaceException(f"Cannot list the index log of {index_path}: {e}") from e
        files = {i.base_name for i in infos if i.type == pafs.FileType.File}
        self.ids: list[int] = sorted(int(n) for n in files if _ENTRY_NAME.fullmatch(n))
        self.has_pointer = LATEST_STABLE_FILE in files
        if not self.ids:
            raise HyperspaceException(
                f"No index log at {index_path}: {self.display_dir} holds no log entries. "
                "Is this the directory of a Hyperspace index?"
            )

    def _read_text(self, name: str) -> str:
        where = f"{self.display_dir}/{name}"
        try:
            with self.fs.open_input_stream(f"{self.dir}/{name}") as stream:
                raw = stream.read()
        except (OSError, ValueError) as e:
            raise HyperspaceException(f"Cannot read index log file {where}: {e}") from e
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise HyperspaceCorruptedLogException(f"Corrupted index log entry {where}: not UTF-8 text ({e}).") from None

    def entry(self, entry_id: int) -> LogEntry:
        where = f"{self.display_dir}/{entry_id}"
        entry = parse_entry(self._read_text(str(entry_id)), where)
        if entry.id != entry_id:
            raise HyperspaceCorruptedLogException(
                f"Corrupted index log entry {where}: its id is {entry.id} but its file name is "
                f"{entry_id}; the id of an entry must equal its file name."
            )
        return entry

    def pointer(self) -> int | None:
        """The id ``latestStable`` names, or None if it is missing or unparsable."""
        if not self.has_pointer:
            return None
        try:
            with self.fs.open_input_stream(f"{self.dir}/{LATEST_STABLE_FILE}") as stream:
                raw = bytes(stream.read())
            text = raw.decode("utf-8").strip()
        except (OSError, ValueError):  # includes UnicodeDecodeError
            return None  # a hint only: fall back to scanning
        return int(text) if _POINTER_TEXT.fullmatch(text) else None


def read_log(index_path: str, filesystem: pafs.FileSystem | None = None) -> list[LogEntry]:
    """Reads every entry of an index log, sorted by id.

    Args:
        index_path: the index directory (the one holding ``_hyperspace_log/``): a local path, a
            ``file:`` URI (``file:/x``, ``file:///x``), or any URI pyarrow understands.
        filesystem: the filesystem to read through; ``index_path`` is then a path on it (a
            ``file:`` URI is still accepted). By default it is derived from ``index_path``.

    Returns:
        All entries, oldest first. Files of the log directory that are not named by a decimal
        integer (``latestStable``, temporary files) are ignored.

    Raises:
        HyperspaceException: the directory has no log (message names ``index_path``), or an
            entry is invalid (message names the entry's file).
    """
    log = _Log(index_path, filesystem)
    return [log.entry(i) for i in log.ids]


def latest_stable(index_path: str, filesystem: pafs.FileSystem | None = None) -> LogEntry | None:
    """The entry readers use: the newest stable one, as ``latestStable`` names it.

    The entry ``latestStable`` names is returned if that file exists and holds an integer, that
    entry exists and is stable, and no newer entry is stable (the pointer is updated just after
    an operation's final entry is written, so a crash in between leaves it one step behind).
    Otherwise the entries are scanned from the highest id down and the first stable one is
    returned — the same rule as the JVM's ``IndexLogManager.latestStable``.

    Args:
        index_path: the index directory, as for :func:`read_log`.
        filesystem: as for :func:`read_log`.

    Returns:
        The entry, or None if the log has no stable entry (e.g. only a crashed ``CREATING``).

    Raises:
        HyperspaceException: the directory has no log, or an entry read is invalid.
    """
    log = _Log(index_path, filesystem)
    pointed = log.pointer()
    if pointed is not None and pointed in log.ids:
        entry = log.entry(pointed)
        newer_stable = any(log.entry(i).is_stable for i in log.ids if i > pointed)
        if entry.is_stable and not newer_stable:
            return entry
    for entry_id in reversed(log.ids):
        entry = log.entry(entry_id)
        if entry.is_stable:
            return entry
    return None


HISTORY_COLUMNS: tuple[str, ...] = (
    "id",
    "state",
    "operation",
    "timestamp",
    "files",
    "size",
    "sourceFiles",
    "dataVersion",
)
"""The columns of :func:`history`, in order."""


def history(index_path: str, filesystem: pafs.FileSystem | None = None) -> "pandas.DataFrame":
    """The log of an index as a table, one row per entry, sorted by id.

    Columns: ``id`` (int64), ``state`` and ``operation`` (str), ``timestamp`` (datetime64, UTC),
    ``files`` (number of index data files), ``size`` (their total bytes), ``sourceFiles``
    (number of source files) and ``dataVersion`` (all int64).

    Args:
        index_path: the index directory, as for :func:`read_log`.
        filesystem: as for :func:`read_log`.

    Raises:
        HyperspaceException: as :func:`read_log`.
    """
    import pandas as pd

    entries = read_log(index_path, filesystem)
    frame = pd.DataFrame(
        {
            "id": pd.Series([e.id for e in entries], dtype="int64"),
            "state": pd.Series([e.state for e in entries], dtype="object"),
            "operation": pd.Series([e.operation for e in entries], dtype="object"),
            "timestamp": pd.to_datetime(
                pd.Series([e.timestamp for e in entries], dtype="int64"), unit="ms", utc=True
            ),
            "files": pd.Series([len(e.content.files) for e in entries], dtype="int64"),
            "size": pd.Series([e.content.size_in_bytes for e in entries], dtype="int64"),
            "sourceFiles": pd.Series([len(e.source.files) for e in entries], dtype="int64"),
            "dataVersion": pd.Series([e.content.data_version for e in entries], dtype="int64"),
        },
        columns=list(HISTORY_COLUMNS),
    )
    return frame


def _java_string_order(path: str) -> bytes:
    # Java's String.compareTo compares UTF-16 code units; big-endian UTF-16 bytes sort the same.
    return path.encode("utf-16-be", "surrogatepass")


def signature_of(files: Iterable[SourceFile]) -> str:
    """The ``FileSetMD5`` signature of a set of source files (``docs/log-format.md``).

    The lower-case hex MD5 of the UTF-8 text made by sorting the files by path (in the JVM's
    string order, as the writer does) and joining ``path + "\\t" + size + "\\t" +
    modificationTime`` lines with ``"\\n"``.

    Args:
        files: the source files.

    Returns:
        The signature value, comparable with :attr:`Signature.value` of an entry whose
        provider is :data:`SIGNATURE_PROVIDER`.
    """
    ordered = sorted(files, key=lambda f: _java_string_order(f.path))
    text = "\n".join(f"{f.path}\t{f.size}\t{f.modification_time}" for f in ordered)
    return hashlib.md5(text.encode("utf-8", "replace")).hexdigest()  # lone surrogates: "?" as on the JVM
