"""The one place that touches py4j: class lookup and translation of JVM errors."""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from py4j.java_gateway import JavaClass, JavaObject
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from hyperspace import exceptions

EXTENSION_CLASS = "io.hyperspace.HyperspaceSparkSessionExtension"
JARS_DIR = Path(__file__).resolve().parent / "jars"

F = TypeVar("F", bound=Callable[..., Any])


def jar_path() -> Path:
    """The Hyperspace jar shipped inside this package.

    Raises:
        HyperspaceJarNotFoundError: the package has no jar (e.g. a source checkout not built yet).
    """
    jars = sorted(JARS_DIR.glob("hyperspace-spark*.jar"))
    if not jars:
        raise exceptions.HyperspaceJarNotFoundError(
            f"The Hyperspace jar is missing from the hyperspace package ({JARS_DIR}). "
            "In a source checkout run `make build` (or `make jar`) first; otherwise reinstall "
            "the wheel: pip install --force-reinstall hyperspace-py."
        )
    if len(jars) > 1:
        names = ", ".join(j.name for j in jars)
        raise exceptions.HyperspaceJarNotFoundError(
            f"More than one Hyperspace jar in {JARS_DIR} ({names}); remove all but one "
            "(a source checkout: `make clean jar`)."
        )
    return jars[0]


def _not_loaded_message() -> str:
    try:
        jar = str(jar_path())
    except exceptions.HyperspaceJarNotFoundError:
        jar = "<path to hyperspace-spark4.0_2.13-*.jar>"
    return (
        "The Hyperspace classes are not loaded in this SparkSession's JVM. Build the session "
        "with `configure_spark_with_hyperspace(SparkSession.builder).getOrCreate()` before any "
        "other SparkSession is created in this process (spark.jars is read only when the JVM "
        "starts; call spark.stop() first if one is running), or launch with "
        f"`spark-submit --jars {jar} --conf spark.sql.extensions={EXTENSION_CLASS} app.py`."
    )


def java_session(spark: SparkSession) -> JavaObject:
    """The JVM ``SparkSession`` behind ``spark``; fails clearly for Spark Connect sessions."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise exceptions.HyperspaceException(
            "Hyperspace needs a classic SparkSession with a local JVM; Spark Connect sessions "
            "are not supported (install the jar on the Spark Connect server instead)."
        )
    return jsession


def java_class(spark: SparkSession, name: str) -> JavaClass:
    """The JVM class ``io.hyperspace.<name>``, or a clear error if the jar was not loaded."""
    java_session(spark)
    node: Any = spark.sparkContext._jvm
    for part in f"io.hyperspace.{name}".split("."):
        node = getattr(node, part)
    if not isinstance(node, JavaClass):
        raise exceptions.HyperspaceNotLoadedError(_not_loaded_message())
    return node


def _hyperspace_exception(error: Py4JJavaError) -> exceptions.HyperspaceException | None:
    """The Python exception for the first Hyperspace exception in the JVM cause chain."""
    throwable = error.java_exception
    seen = 0
    while throwable is not None and seen < 20:
        class_name = throwable.getClass().getName()
        if class_name.startswith("io.hyperspace."):
            simple = class_name.rsplit(".", 1)[-1]
            py_class = getattr(exceptions, simple, None)
            if not (isinstance(py_class, type) and issubclass(py_class, exceptions.HyperspaceException)):
                py_class = exceptions.HyperspaceException
            return py_class(str(throwable.getMessage()), java_class=class_name)
        throwable = throwable.getCause()
        seen += 1
    return None


def _spark_exception(error: Py4JJavaError) -> Exception:
    """pyspark's own exception for a Spark (not Hyperspace) error: the first throwable in the cause
    chain pyspark knows (``AnalysisException``, ``IllegalArgumentException``, ...), else pyspark's
    ``UnknownException`` carrying the JVM message and stack trace. pyspark's classic API re-raises
    such errors as raw ``Py4JJavaError``; Hyperspace users get a ``pyspark.errors`` exception
    (every one a ``PySparkException``) in every case."""
    from pyspark.errors.exceptions.captured import UnknownException, convert_exception

    throwable = error.java_exception
    seen = 0
    while throwable is not None and seen < 20:
        converted = convert_exception(throwable)
        if not isinstance(converted, UnknownException):
            return converted
        throwable = throwable.getCause()
        seen += 1
    return convert_exception(error.java_exception)


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turns JVM exceptions raised inside the block into Python ones: Hyperspace's into
    ``hyperspace.exceptions``, Spark's into ``pyspark.errors`` (never a raw ``Py4JJavaError``)."""
    try:
        yield
    except Py4JJavaError as error:
        translated = _hyperspace_exception(error)
        if translated is None:
            translated = _spark_exception(error)
        raise translated from None


def translate_errors(func: F) -> F:
    """Decorator form of :func:`translated_errors`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with translated_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
