"""Loading Hyperspace into a SparkSession and switching it on and off per session."""

from __future__ import annotations

import os
from collections.abc import Callable

from pyspark.sql import SparkSession

from hyperspace._jvm import EXTENSION_CLASS, jar_path, java_hyperspace, translate_errors

__all__ = [
    "configure_spark_with_hyperspace",
    "enable_hyperspace",
    "disable_hyperspace",
    "is_hyperspace_enabled",
]


def _merge_list(current: str | None, item: str, same: Callable[[str], bool]) -> str:
    """``current`` (a comma-separated list) with ``item`` added once, replacing entries ``same`` matches."""
    entries = [e.strip() for e in (current or "").split(",") if e.strip()]
    kept = [e for e in entries if not same(e)]
    return ",".join(kept + [item])


def configure_spark_with_hyperspace(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Adds the packaged Hyperspace jar and extension to a session builder.

    The jar is the one built for the installed pyspark's Spark line (:func:`jar_path`). Sets
    ``spark.jars`` (keeping any jars already configured on the builder) and
    ``spark.sql.extensions`` (keeping other extensions, e.g. Delta's). Call it before
    ``getOrCreate()`` of the first session in the process: the JVM reads ``spark.jars`` only when
    it starts.

    Example:
        >>> spark = configure_spark_with_hyperspace(SparkSession.builder.master("local[2]")).getOrCreate()

    Args:
        builder: a ``SparkSession.builder``, possibly already configured.

    Returns:
        The same builder, for chaining.

    Raises:
        HyperspaceJarNotFoundError: the installed pyspark's Spark line is not supported, or the
            package has no jar for it.
    """
    jar = str(jar_path())
    options = getattr(builder, "_options", {})
    jars = _merge_list(
        options.get("spark.jars"),
        jar,
        lambda e: os.path.basename(e).startswith("hyperspace-spark") and e.endswith(".jar"),
    )
    extensions = _merge_list(options.get("spark.sql.extensions"), EXTENSION_CLASS, lambda e: e == EXTENSION_CLASS)
    return builder.config("spark.jars", jars).config("spark.sql.extensions", extensions)


@translate_errors
def enable_hyperspace(spark: SparkSession) -> SparkSession:
    """Turns index-based query rewriting on for ``spark`` only; returns ``spark``.

    Raises:
        HyperspaceNotLoadedError: the session's JVM has no Hyperspace classes.
        HyperspaceExtensionNotInstalledException: the session was built without the extension.
    """
    java_hyperspace(spark).enable()
    return spark


@translate_errors
def disable_hyperspace(spark: SparkSession) -> SparkSession:
    """Turns index-based query rewriting off for ``spark`` only; returns ``spark``."""
    java_hyperspace(spark).disable()
    return spark


@translate_errors
def is_hyperspace_enabled(spark: SparkSession) -> bool:
    """Whether ``spark`` has the extension installed and rewriting switched on."""
    return bool(java_hyperspace(spark).isEnabled())


# The original Hyperspace's camelCase names.
enableHyperspace = enable_hyperspace
disableHyperspace = disable_hyperspace
isHyperspaceEnabled = is_hyperspace_enabled
