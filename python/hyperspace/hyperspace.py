"""The ``Hyperspace`` facade: index management for one SparkSession."""

from __future__ import annotations

import pyspark
from pyspark.sql import SparkSession

from hyperspace import exceptions
from hyperspace._jvm import java_class, java_session, translate_errors

__all__ = ["Hyperspace"]


def _spark_line(version: str) -> str:
    return ".".join(version.split(".")[:2])


class Hyperspace:
    """Manages the indexes of one SparkSession; ``hs = Hyperspace(spark)``.

    Index operations (create, list, delete, ...) arrive with the covering-index lifecycle. The
    facade checks on construction that the session's JVM has the Hyperspace jar loaded and that
    the jar was built for the Spark line the session runs.

    Raises:
        HyperspaceNotLoadedError: the jar is not loaded in the session's JVM.
        HyperspaceException: the jar was built for another Spark line than the session's.
    """

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        with_jvm = java_class(spark, "Hyperspace")
        self._jhs = with_jvm.apply(java_session(spark))
        built_for = str(self._jhs.sparkVersion())
        if _spark_line(built_for) != _spark_line(spark.version):
            raise exceptions.HyperspaceException(
                f"This Hyperspace jar was built for Spark {built_for} but the session runs Spark "
                f"{spark.version}; install the hyperspace-py release built for Spark "
                f"{_spark_line(spark.version)}."
            )

    @property
    def spark(self) -> SparkSession:
        """The session this facade manages indexes for."""
        return self._spark

    @property
    def version(self) -> str:
        """The Hyperspace version of the loaded jar."""
        return str(self._jhs.version())

    @property
    def spark_version(self) -> str:
        """The Spark version the loaded jar was built against."""
        return str(self._jhs.sparkVersion())

    @property
    @translate_errors
    def system_path(self) -> str:
        """Where this session's indexes live (``spark.hyperspace.system.path``)."""
        return str(self._jhs.systemPath())

    @translate_errors
    def enable(self) -> "Hyperspace":
        """Turns index-based query rewriting on for this session; returns ``self``."""
        self._jhs.enable()
        return self

    @translate_errors
    def disable(self) -> "Hyperspace":
        """Turns index-based query rewriting off for this session; returns ``self``."""
        self._jhs.disable()
        return self

    @translate_errors
    def is_enabled(self) -> bool:
        """Whether index-based query rewriting is on for this session."""
        return bool(self._jhs.isEnabled())

    # The original Hyperspace's camelCase names.
    isEnabled = is_enabled

    def __repr__(self) -> str:
        return f"Hyperspace(version={self.version!r}, spark={self.spark_version!r}, pyspark={pyspark.__version__!r})"
