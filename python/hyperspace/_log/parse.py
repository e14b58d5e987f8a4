"""Parsing one log entry: JSON text to a :class:`LogEntry`, every field type- and range-checked
with errors that name the entry's file and the field."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NoReturn, TypeVar

from hyperspace._log.model import (
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
from hyperspace.exceptions import HyperspaceCorruptedLogException

_MISSING = object()
T = TypeVar("T")
K = TypeVar("K")


class _Invalid(Exception):
    """A field-level problem; turned into a HyperspaceException naming the file."""


def _type_name(value: object) -> str:
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

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise _Invalid(f"'{where or '<entry>'}' must be an object, got {_type_name(data)}")
        self.data: dict[str, object] = data
        self.where = where

    def _loc(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, optional: bool) -> object:
        value = self.data.get(key, _MISSING)
        if value is _MISSING and not optional:
            raise _Invalid(f"missing required field '{self._loc(key)}'")
        return value

    def _typed(self, key: str, value: object, kind: type[K], expected: str) -> K:
        """``value`` if it is a ``kind`` (a JSON boolean is never taken for a number)."""
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise _Invalid(f"field '{self._loc(key)}' must be {expected}, got {_type_name(value)}")
        return value

    def integer(self, key: str, bits: int = 64, minimum: int | None = None) -> int:
        """A JSON integer that fits the JVM's type of the field (``bits``: 32 for an Int, 64 for a
        Long), and is at least ``minimum`` when given."""
        v = self._typed(key, self._get(key, optional=False), int, "an integer")
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if minimum is not None:
            low = max(low, minimum)
        if not low <= v <= high:
            shown = str(v) if len(str(v)) <= 40 else f"a {len(str(v))}-digit number"
            raise _Invalid(f"field '{self._loc(key)}' must be an integer from {low} to {high}, got {shown}")
        return v

    def boolean(self, key: str) -> bool:
        return self._typed(key, self._get(key, optional=False), bool, "a boolean")

    def string(self, key: str) -> str:
        return self._typed(key, self._get(key, optional=False), str, "a string")

    def opt_str(self, key: str) -> str | None:
        v = self._get(key, optional=True)
        if v is _MISSING or v is None:
            return None
        return self._typed(key, v, str, "a string or null")

    def str_list(self, key: str) -> tuple[str, ...]:
        v = self._typed(key, self._get(key, optional=False), list, "an array of strings")
        out: list[str] = []
        for i, item in enumerate(v):
            if not isinstance(item, str):
                raise _Invalid(f"field '{self._loc(key)}[{i}]' must be a string, got {_type_name(item)}")
            out.append(item)
        return tuple(out)

    def str_map(self, key: str, optional: bool = False) -> dict[str, str]:
        v = self._get(key, optional=optional)
        if v is _MISSING:
            return {}
        out: dict[str, str] = {}
        for k, item in self._typed(key, v, dict, "an object of strings").items():
            if not isinstance(item, str):
                raise _Invalid(f"field '{self._loc(key)}.{k}' must be a string, got {_type_name(item)}")
            out[str(k)] = item
        return out

    def obj(self, key: str) -> _Obj:
        return _Obj(self._typed(key, self._get(key, optional=False), dict, "an object"), self._loc(key))

    def opt_obj(self, key: str) -> _Obj | None:
        v = self._get(key, optional=True)
        if v is _MISSING or v is None:
            return None
        return _Obj(self._typed(key, v, dict, "an object or null"), self._loc(key))

    def obj_map(self, key: str, build: Callable[[_Obj], T]) -> dict[str, T]:
        v = self._typed(key, self._get(key, optional=False), dict, "an object")
        out: dict[str, T] = {}
        for k, item in v.items():
            loc = f"{self._loc(key)}.{k}"
            if not isinstance(item, dict):
                raise _Invalid(f"field '{loc}' must be an object, got {_type_name(item)}")
            out[str(k)] = build(_Obj(item, loc))
        return out

    def objs(self, key: str, build: Callable[[_Obj], T]) -> tuple[T, ...]:
        v = self._typed(key, self._get(key, optional=False), list, "an array of objects")
        out = []
        for i, item in enumerate(v):
            loc = f"{self._loc(key)}[{i}]"
            if not isinstance(item, dict):
                raise _Invalid(f"field '{loc}' must be an object, got {_type_name(item)}")
            out.append(build(_Obj(item, loc)))
        return tuple(out)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _file_stats(s: _Obj | None) -> FileStats | None:
    if s is None:
        return None
    return FileStats(
        row_count=s.integer("rowCount", minimum=0),
        columns=s.obj_map(
            "columns",
            lambda c: ColumnStats(
                min=c.opt_str("min"), max=c.opt_str("max"), null_count=c.integer("nullCount", minimum=0)
            ),
        ),
        locations=_location_stats(s.opt_obj("locations")),
    )


def _location_stats(s: _Obj | None) -> LocationStats | None:
    if s is None:
        return None
    return LocationStats(
        keys=s.integer("keys", minimum=0),
        key_row_groups=s.integer("keyRowGroups", minimum=0),
        row_group_bytes=s.integer("rowGroupBytes", minimum=0),
    )


def _source_file(f: _Obj) -> SourceFile:
    return SourceFile(
        path=f.string("path"),
        size=f.integer("size", minimum=0),
        modification_time=f.integer("modificationTime"),
        id=f.integer("id", minimum=0),
        deletion_vector=f.opt_str("deletionVector"),
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
        owner=Owner(host=owner.string("host"), pid=owner.integer("pid"), started_at=owner.integer("startedAt")),
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
                    stats=_file_stats(f.opt_obj("stats")),
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
            f"Corrupted index log entry {where}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})."
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
