"""Where an index's log lives: a user's path or URI resolved to a pyarrow filesystem and a path
on it."""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

import pyarrow.fs as pafs

from hyperspace.exceptions import HyperspaceException


def file_uri_to_path(uri: str) -> str:
    """``file:/x``, ``file:///x``, ``file://localhost/x`` -> ``/x`` (percent-escapes decoded)."""
    rest = uri[len("file:") :]
    if rest.startswith("//"):
        authority, sep, path = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise HyperspaceException(f"Cannot read {uri}: a file: URI with host '{authority}' is not a local path.")
        rest = sep + path
    path = unquote(rest)
    if os.name == "nt" and re.match(r"/[A-Za-z]:", path):  # file:///C:/x -> C:/x
        path = path[1:]
    return path or "/"


def resolve(index_path: str, filesystem: pafs.FileSystem | None) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path on it of the index directory (no trailing slash)."""
    if index_path.startswith("file:"):
        fs: pafs.FileSystem = filesystem if filesystem is not None else pafs.LocalFileSystem()
        path = file_uri_to_path(index_path)
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
