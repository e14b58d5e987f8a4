"""Python exceptions of Hyperspace, mirroring the JVM ones by class name."""

from __future__ import annotations

__all__ = [
    "HyperspaceConflictException",
    "HyperspaceCorruptedLogException",
    "HyperspaceException",
    "HyperspaceIndexNotFoundException",
    "HyperspaceExtensionNotInstalledException",
    "HyperspaceJarNotFoundError",
    "HyperspaceNotLoadedError",
]


class HyperspaceException(Exception):
    """Any error Hyperspace reports: bad input, unknown index, invalid setting, bad state.

    Errors raised on the JVM side arrive as this class (or the subclass of the same name) with
    the JVM message unchanged.

    Attributes:
        java_class: fully qualified name of the JVM exception, when it came from the JVM.
    """

    def __init__(self, message: str, java_class: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.java_class = java_class


class HyperspaceExtensionNotInstalledException(HyperspaceException):
    """The session was built without ``spark.sql.extensions=io.hyperspace.HyperspaceSparkSessionExtension``."""


class HyperspaceJarNotFoundError(HyperspaceException):
    """The Hyperspace jar is missing from the installed package."""


class HyperspaceNotLoadedError(HyperspaceException):
    """The session's JVM has no Hyperspace classes: the jar was not loaded."""


class HyperspaceConflictException(HyperspaceException):
    """Another operation holds the index and the two cannot run together (the paper's Table 1),
    or this one lost the race to write the next log entry. Nothing of it was kept; retry later."""


class HyperspaceIndexNotFoundException(HyperspaceException):
    """No index of that name exists."""


class HyperspaceCorruptedLogException(HyperspaceException, ValueError):
    """An index log entry cannot be read: not valid JSON, hostile JSON (NaN, huge numbers, deep
    nesting), a field missing, of the wrong type or out of range, or an unknown state or spec
    version. The message names the entry's file. Also a :class:`ValueError`, so code that treats
    malformed input generically catches it. An index whose newest entry is damaged is listed as
    ``CORRUPT`` by ``indexes()``."""
