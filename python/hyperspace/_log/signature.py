"""The ``FileSetMD5`` fingerprint of a source file set, computed exactly as the JVM writer does."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from hyperspace._log.model import SourceFile


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
