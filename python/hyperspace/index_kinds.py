"""The index kinds as the Python layer knows them: the one place kind names appear.

The JVM decides everything that differs by kind (``io.hyperspace.index.IndexKind``); Python only
passes a config to the kind it names. A config of any kind registered in the JVM (including kinds
added by a jar) is a :class:`KindConfig`: it names its kind and serializes itself as that kind's
``configFromJson`` reads. Log entries keep their kind as a plain string, so reading a log with a
kind this package has never heard of works.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["COVERING", "DATA_SKIPPING", "SPLIT", "ZORDER_COVERING", "KindConfig"]

COVERING = "CoveringIndex"
"""The covering index kind's name in the index log."""

DATA_SKIPPING = "DataSkippingIndex"
"""The data skipping index kind's name in the index log."""

ZORDER_COVERING = "ZOrderCoveringIndex"
"""The Z-order covering index kind's name in the index log."""

SPLIT = "SplitIndex"
"""The split index kind's name in the index log."""


@runtime_checkable
class KindConfig(Protocol):
    """What ``Hyperspace.create_index`` takes: a config that names its index kind.

    Attributes:
        name: the index name.
        kind_name: the kind's name in the index log (``IndexKind.name`` in the JVM).
    """

    name: str
    kind_name: str

    def to_json(self) -> str:
        """The config as the JSON text its JVM kind's ``configFromJson`` reads."""
        ...
