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

This module is the public face and the reading policy (which entry readers use); the data
model, the entry parser, path resolution and the signature live in ``hyperspace._log``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from hyperspace.exceptions import HyperspaceCorruptedLogException, HyperspaceException

# The reader's parts are imported relatively: they are private modules of this one.
from ._log.model import (
    LATEST_STABLE_FILE,
    LOG_DIR_NAME,
    SIGNATURE_PROVIDER,
    SPEC_VERSION,
    STABLE_STATES,
    TRANSIENT_STATES,
    ColumnStats,
    Content,
    ContentFile,
    FileStats,
    IndexDefinition,
    LocationStats,
    LogEntry,
    Owner,
    Signature,
    Source,
    SourceFile,
)
from ._log.parse import parse_entry
from ._log.paths import resolve
from ._log.signature import signature_of

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
    "FileStats",
    "ColumnStats",
    "LocationStats",
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

# Entry files: a non-negative decimal integer without padding. Anything else is ignored.
_ENTRY_NAME = re.compile(r"0|[1-9][0-9]*")
_POINTER_TEXT = re.compile(r"[0-9]+")


class _Log:
    """The entry files of one index log directory, read on demand."""

    def __init__(self, index_path: str, filesystem: pafs.FileSystem | None) -> None:
        self.index_path = index_path
        self.fs, path = resolve(index_path, filesystem)
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


def history(index_path: str, filesystem: pafs.FileSystem | None = None) -> pandas.DataFrame:
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
            "timestamp": pd.to_datetime(pd.Series([e.timestamp for e in entries], dtype="int64"), unit="ms", utc=True),
            "files": pd.Series([len(e.content.files) for e in entries], dtype="int64"),
            "size": pd.Series([e.content.size_in_bytes for e in entries], dtype="int64"),
            "sourceFiles": pd.Series([len(e.source.files) for e in entries], dtype="int64"),
            "dataVersion": pd.Series([e.content.data_version for e in entries], dtype="int64"),
        },
        columns=list(HISTORY_COLUMNS),
    )
    return frame
