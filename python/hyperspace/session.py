"""Loading Hyperspace into a SparkSession and switching it on and off per session."""

from __future__ import annotations

import os
from collections.abc import Callable

from pyspark.sql import SparkSession

from hyperspace import exceptions
from hyperspace._backends import backend_for
from hyperspace._jvm import (
    EXTENSION_CLASS,
    add_jar,
    has_jvm,
    jar_path,
    java_class,
    java_session,
    translate_errors,
    translated_errors,
)

__all__ = [
    "attach",
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
        HyperspaceJarNotFoundError: the installed pyspark's Spark line, or its patch of the line,
            is not supported (the message names the supported ones), or the package has no jar for it.
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
    backend_for(spark).enable()
    return spark


def attach(spark: SparkSession) -> SparkSession:
    """Makes Hyperspace work in ``spark``, a session that already exists without it — a
    notebook's — and switches rewriting on; returns ``spark``.

    When the session's JVM does not have the Hyperspace classes, the jar shipped in this package
    is added to it (driver and executors, as SQL ``ADD JAR`` does). Then the rules are installed
    into this session. Nothing changes for a session built with the extension but the switch.

    Only ``spark`` gets the rules: a session made later (``spark.newSession()``, another notebook
    on the cluster) needs the cluster setting ``spark.sql.extensions`` (see docs/notebooks.md).

    Raises:
        HyperspaceException: ``spark`` is a Spark Connect session (the server, not the client,
            must load Hyperspace), or the JVM cannot be reached (e.g. a shared-access cluster
            that blocks py4j); the message names the cluster settings that work instead.
    """
    if not has_jvm(spark):
        raise exceptions.HyperspaceException(
            "hyperspace.attach needs a classic SparkSession; this is a Spark Connect session, whose "
            "queries are planned by the Connect server. Start the server with the Hyperspace jar and "
            f"extension: --jars {_jar_hint()} --conf spark.sql.extensions={EXTENSION_CLASS} "
            "(on Databricks: install the jar as a cluster library and add the spark.sql.extensions "
            "setting to the cluster's Spark config)."
        )
    with translated_errors():
        try:
            java_session(spark).sparkContext()
        except Exception as error:
            raise exceptions.HyperspaceException(
                f"hyperspace.attach cannot reach this session's JVM ({type(error).__name__}: {error}); the "
                "environment blocks JVM access from Python (e.g. a Databricks shared-access cluster). "
                f"Install the jar as a cluster library and set spark.sql.extensions={EXTENSION_CLASS} "
                "in the cluster's Spark config."
            ) from None
        try:
            extension = java_class(spark, "HyperspaceSparkSessionExtension")
        except exceptions.HyperspaceNotLoadedError:
            add_jar(spark, jar_path())
            extension = java_class(spark, "HyperspaceSparkSessionExtension")
        extension.attach(java_session(spark))
    return enable_hyperspace(spark)


def _jar_hint() -> str:
    try:
        return str(jar_path())
    except exceptions.HyperspaceJarNotFoundError:
        return "hyperspace-spark<line>_2.13-<version>.jar"


@translate_errors
def disable_hyperspace(spark: SparkSession) -> SparkSession:
    """Turns index-based query rewriting off for ``spark`` only; returns ``spark``."""
    backend_for(spark).disable()
    return spark


@translate_errors
def is_hyperspace_enabled(spark: SparkSession) -> bool:
    """Whether ``spark`` has the extension installed and rewriting switched on (False in a
    session whose JVM has no Hyperspace classes)."""
    try:
        backend = backend_for(spark)
    except exceptions.HyperspaceNotLoadedError:
        return False
    return backend.is_enabled()


# The original Hyperspace's camelCase names.
enableHyperspace = enable_hyperspace
disableHyperspace = disable_hyperspace
isHyperspaceEnabled = is_hyperspace_enabled
