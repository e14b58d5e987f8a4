"""The one place that touches py4j and pyspark's JVM-side internals.

Every other module reaches the JVM through the small functions here: the jar, class lookup,
the JVM twins of a session and a DataFrame, and the translation of JVM errors. Objects living in
the JVM are py4j proxies whose methods py4j resolves at run time; they have no static type, so
they are typed :data:`JavaObject` (an alias of ``Any``) — the only ``Any`` the package hands
around.

Errors are translated globally, in the way delta-spark does it: :func:`install_error_translation`
(run on ``import hyperspace``) puts Hyperspace's conversion in front of pyspark's own, which
pyspark applies to every JVM call it makes (``df.collect()`` included). A Hyperspace exception
anywhere in a JVM error's cause chain arrives as the :mod:`hyperspace.exceptions` class of the
same simple name; everything else is left to pyspark.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeAlias, TypeVar

import pyspark
from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions import captured
from pyspark.sql import DataFrame, SparkSession

from hyperspace import exceptions

EXTENSION_CLASS = "io.hyperspace.HyperspaceSparkSessionExtension"
SPARK_LINES: tuple[str, ...] = ("4.0", "4.1", "4.2", "4.3")
"""The Spark lines this package has a jar for (``spark.lines`` in versions.properties)."""
SPARK_PATCHES: dict[str, tuple[str, str]] = {
    "4.0": ("4.0.0", "4.0.5"),
    "4.1": ("4.1.0", "4.1.4"),
    "4.2": ("4.2.0", "4.2.1"),
    "4.3": ("4.3.0", "4.3.0"),
}
"""Per line, the oldest and the newest patch its jar is checked against and runs on
(``spark.patches.<line>``); the patches between them are accepted too, others refused."""
JARS_DIR = Path(__file__).resolve().parent / "jars"

JavaObject: TypeAlias = Any
"""A py4j proxy of a JVM object or class (untyped: py4j resolves its members at run time)."""

P = ParamSpec("P")
R = TypeVar("R")

# A JVM error's cause chain is followed this far: real chains are a handful long, and a cyclic
# one must not loop.
_MAX_CAUSES = 20


def spark_line(version: str) -> str:
    """The Spark line of a version: ``"4.1"`` of ``"4.1.3"``."""
    return ".".join(version.split(".")[:2])


def _patch(version: str) -> int:
    """The patch number of a version: 3 of ``"4.1.3"`` (and of ``"4.1.3.dev0"``), 0 when it has none."""
    found = re.match(r"\d+\.\d+\.(\d+)", version)
    return int(found.group(1)) if found else 0


def jar_path(spark_version: str | None = None) -> Path:
    """The Hyperspace jar shipped inside this package for a Spark line.

    The package carries one jar per supported Spark line (:data:`SPARK_LINES`), each built
    against that line and checked to run on the patches :data:`SPARK_PATCHES` names; this is the
    one of ``spark_version``'s line (default: the installed pyspark's).

    Raises:
        HyperspaceJarNotFoundError: the line or the patch is not supported, or the package has no
            jar for it (e.g. a source checkout where that line's jar was not built yet).
    """
    version = spark_version if spark_version is not None else pyspark.__version__
    line = spark_line(version)
    supported = ", ".join(SPARK_LINES)
    if line not in SPARK_LINES:
        raise exceptions.HyperspaceJarNotFoundError(
            f"Spark {version} (line {line}) is not supported by this hyperspace-spark: it has jars "
            f"for the Spark lines {supported}. Install a pyspark "
            f"of one of those lines (pip install 'pyspark=={SPARK_LINES[-1]}.*')."
        )
    oldest, newest = SPARK_PATCHES[line]
    if not _patch(oldest) <= _patch(version) <= _patch(newest):
        raise exceptions.HyperspaceJarNotFoundError(
            f"Spark {version} is not a patch this hyperspace-spark supports: its jar for Spark {line} runs "
            f"on Spark {oldest} to {newest} (checked against {oldest} and {newest}). Install one of "
            f"those (pip install 'pyspark>={oldest},<={newest}'), or a hyperspace-spark that supports {version}."
        )
    jars = sorted(JARS_DIR.glob(f"hyperspace-spark{line}_*.jar"))
    if not jars:
        raise exceptions.HyperspaceJarNotFoundError(
            f"The Hyperspace jar for Spark {line} is missing from the hyperspace package "
            f"({JARS_DIR}). In a source checkout run `make jar SPARK={line}` (or `make build` for "
            "every line) first; otherwise reinstall the wheel: pip install --force-reinstall "
            "hyperspace-spark."
        )
    if len(jars) > 1:
        names = ", ".join(j.name for j in jars)
        raise exceptions.HyperspaceJarNotFoundError(
            f"More than one Hyperspace jar for Spark {line} in {JARS_DIR} ({names}); remove all "
            f"but one (a source checkout: `make clean jar SPARK={line}`)."
        )
    return jars[0]


def _not_loaded_message() -> str:
    try:
        jar = str(jar_path())
    except exceptions.HyperspaceJarNotFoundError:
        jar = f"<path to hyperspace-spark{spark_line(pyspark.__version__)}_2.13-*.jar>"
    return (
        "The Hyperspace classes are not loaded in this SparkSession's JVM. Build the session "
        "with `configure_spark_with_hyperspace(SparkSession.builder).getOrCreate()` before any "
        "other SparkSession is created in this process (spark.jars is read only when the JVM "
        "starts; call spark.stop() first if one is running), or launch with "
        f"`spark-submit --jars {jar} --conf spark.sql.extensions={EXTENSION_CLASS} app.py`. "
        "In a session that is already running (a notebook's), `hyperspace.attach(spark)` adds "
        "the jar and installs Hyperspace."
    )


def has_jvm(spark: SparkSession) -> bool:
    """Whether ``spark`` is a classic session with a JVM in this process (not Spark Connect's)."""
    return getattr(spark, "_jsparkSession", None) is not None


def java_session(spark: SparkSession) -> JavaObject:
    """The JVM ``SparkSession`` behind ``spark``; fails clearly for Spark Connect sessions."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise exceptions.HyperspaceException(
            "This needs a classic SparkSession with a local JVM. With Spark Connect, use "
            "Hyperspace(spark), enable_hyperspace(spark) and Hyperspace's SQL statements (they run "
            "on the server, which needs the jar and the extension: docs/sql.md) and spark.conf.set "
            "for spark.hyperspace.* settings."
        )
    return jsession


def java_class(spark: SparkSession, name: str) -> JavaObject:
    """The JVM class ``io.hyperspace.<name>``, or a clear error if the jar was not loaded."""
    node = _lookup(spark, name)
    if not isinstance(node, JavaClass) and _use_session_class_loader(spark):
        node = _lookup(spark, name)
    if not isinstance(node, JavaClass):
        raise exceptions.HyperspaceNotLoadedError(_not_loaded_message())
    return node


def _lookup(spark: SparkSession, name: str) -> JavaObject:
    java_session(spark)
    node: JavaObject = spark.sparkContext._jvm
    for part in f"io.hyperspace.{name}".split("."):
        node = getattr(node, part)
    return node


def _use_session_class_loader(spark: SparkSession) -> bool:
    """Makes this thread's JVM calls find the jars added to ``spark`` at run time (``ADD JAR``,
    as :func:`hyperspace.attach` does): py4j loads classes through the JVM thread's context
    class loader, and Spark sets the session's loader only on the thread that added the jar.
    Returns whether that loader differs from the thread's (i.e. whether looking again can help)."""
    jvm: JavaObject = spark.sparkContext._jvm
    thread = jvm.java.lang.Thread.currentThread()
    session_loader = java_session(spark).sharedState().jarClassLoader()
    if thread.getContextClassLoader().equals(session_loader):
        return False
    thread.setContextClassLoader(session_loader)
    return True


def add_jar(spark: SparkSession, jar: Path) -> None:
    """Adds ``jar`` to ``spark``'s running JVM (driver and executors), as SQL ``ADD JAR`` does."""
    java_session(spark).sessionState().resourceLoader().addJar(str(jar))


def java_hyperspace(spark: SparkSession) -> JavaObject:
    """The JVM ``io.hyperspace.Hyperspace`` facade of ``spark``'s session."""
    return java_class(spark, "Hyperspace").apply(java_session(spark))


def java_dataframe(df: DataFrame) -> JavaObject:
    """The JVM ``Dataset`` behind a classic pyspark DataFrame."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise exceptions.HyperspaceException(f"Expected a classic pyspark DataFrame; got {type(df).__name__}.")
    return jdf


def plan_facts(df: DataFrame) -> dict[str, Any]:
    """Files and bytes read, Exchanges and indexes used by ``df``'s last execution (call it after
    an action such as ``collect``), as ``io.hyperspace.explain.PlanFacts`` reads them from the
    executed plan's scan metrics: the one definition the demo and the benchmarks report."""
    facts: dict[str, Any] = json.loads(str(java_class(df.sparkSession, "explain.PlanFacts").json(java_dataframe(df))))
    return facts


def python_dataframe(jdf: JavaObject, spark: SparkSession) -> DataFrame:
    """The pyspark DataFrame over a JVM ``Dataset`` of ``spark``'s session."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    return ClassicDataFrame(jdf, spark)


def java_storage_level(spark: SparkSession, name: str) -> JavaObject:
    """The JVM ``StorageLevel`` of that name (e.g. ``MEMORY_AND_DISK``)."""
    jvm: JavaObject = spark.sparkContext._jvm
    return jvm.org.apache.spark.storage.StorageLevel.fromString(name)


def pins_threads(spark: SparkSession) -> bool:
    """Whether each Python thread of ``spark`` talks to a JVM thread of its own (pyspark's
    pinned thread mode, the default): then JVM thread-local state such as a job tag set from a
    Python thread applies to exactly that thread's calls."""
    from py4j.clientserver import ClientServer

    return isinstance(spark.sparkContext._gateway, ClientServer)


def job_ids_with_tag(spark: SparkSession, tag: str) -> list[int]:
    """The ids of the Spark jobs carrying job tag ``tag`` that Spark still tracks."""
    return [int(i) for i in spark.sparkContext._jsc.sc().statusTracker().getJobIdsForTag(tag)]


@dataclass(frozen=True)
class StageStatus:
    """What Spark's status tracker knows of one stage of a job."""

    name: str
    #: Milliseconds since the epoch; 0 for a stage not submitted (yet, or ever: skipped).
    submission_time: int
    num_tasks: int
    num_active_tasks: int
    num_completed_tasks: int


def stages_of_jobs_with_tag(spark: SparkSession, tag: str) -> list[StageStatus]:
    """The stages of the jobs carrying job tag ``tag`` (pyspark's tracker omits submission times)."""
    tracker = spark.sparkContext._jsc.statusTracker()
    stages = []
    for job_id in job_ids_with_tag(spark, tag):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds() if job is not None else []:
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                stages.append(
                    StageStatus(
                        str(stage.name()),
                        int(stage.submissionTime()),
                        int(stage.numTasks()),
                        int(stage.numActiveTasks()),
                        int(stage.numCompletedTasks()),
                    )
                )
    return stages


# ---- JVM errors ------------------------------------------------------------------------------


def _causes(throwable: JavaObject) -> Iterator[JavaObject]:
    """``throwable`` and its causes, outermost first."""
    for _ in range(_MAX_CAUSES):
        if throwable is None:
            return
        yield throwable
        throwable = throwable.getCause()


def hyperspace_error(throwable: JavaObject) -> exceptions.HyperspaceException | None:
    """The Python exception for the first Hyperspace exception in ``throwable``'s cause chain.

    An error raised in a task reaches the driver wrapped (``SparkException: Job aborted ...``),
    so the whole chain is searched. A JVM class without a Python twin of the same simple name
    becomes the base :class:`~hyperspace.exceptions.HyperspaceException`.
    """
    for cause in _causes(throwable):
        class_name = str(cause.getClass().getName())
        if class_name.startswith("io.hyperspace."):
            simple = class_name.rsplit(".", 1)[-1]
            py_class = getattr(exceptions, simple, None)
            if not (isinstance(py_class, type) and issubclass(py_class, exceptions.HyperspaceException)):
                py_class = exceptions.HyperspaceException
            return py_class(python_names(str(cause.getMessage())), java_class=class_name)
    return None


# The Scala API's method names that the JVM's messages advise calling, and their Python names.
_PYTHON_NAMES = {
    "createIndex": "create_index",
    "refreshIndex": "refresh_index",
    "optimizeIndex": "optimize_index",
    "deleteIndex": "delete_index",
    "restoreIndex": "restore_index",
    "vacuumIndex": "vacuum_index",
    "whyNot": "why_not",
    "whatIf": "what_if",
    "enableHyperspace": "enable_hyperspace",
    "disableHyperspace": "disable_hyperspace",
    "isHyperspaceEnabled": "is_hyperspace_enabled",
}
_SCALA_CALL = re.compile(r"\b(" + "|".join(_PYTHON_NAMES) + r")\(")


def python_names(message: str) -> str:
    """``message`` (a JVM error's) with the Scala API calls it advises (``refreshIndex('x',
    'full')``) spelt as the Python API's (``refresh_index('x', 'full')``): a Python user is told
    what to type in Python. Only names followed by ``(`` are replaced, never a column or key."""
    return _SCALA_CALL.sub(lambda m: _PYTHON_NAMES[m.group(1)] + "(", message)


def _spark_error(throwable: JavaObject) -> Exception:
    """pyspark's own exception for a Spark (not Hyperspace) error: the first throwable in the
    cause chain pyspark knows (``AnalysisException``, ``IllegalArgumentException``, ...), else
    pyspark's ``UnknownException`` carrying the JVM message and stack trace. pyspark itself
    re-raises an unknown one as a raw ``Py4JJavaError``; Hyperspace's own API calls give a
    ``pyspark.errors`` exception (every one a ``PySparkException``) in every case."""
    for cause in _causes(throwable):
        converted = captured.convert_exception(cause)
        if not isinstance(converted, captured.UnknownException):
            return converted
    return captured.convert_exception(throwable)


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turns JVM exceptions raised inside the block into Python ones: Hyperspace's into
    ``hyperspace.exceptions``, Spark's into ``pyspark.errors`` (never a raw ``Py4JJavaError``)."""
    try:
        yield
    except Py4JJavaError as error:
        translated = hyperspace_error(error.java_exception)
        raise (translated if translated is not None else _spark_error(error.java_exception)) from None


def translate_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of :func:`translated_errors`."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with translated_errors():
            return func(*args, **kwargs)

    return wrapper


_TRANSLATES_HYPERSPACE = "_translates_hyperspace_errors"


def install_error_translation() -> None:
    """Makes pyspark raise Hyperspace's exceptions as :mod:`hyperspace.exceptions` classes for
    every JVM call, not only Hyperspace's own (a rewritten plan's ``collect()``, SQL calling
    ``hyperspace_bucket_id``, ...). Idempotent; keeps any conversion installed before (Delta's).

    pyspark converts a JVM error by calling ``pyspark.errors.exceptions.captured
    .convert_exception`` (looked up at each call) and raises the result unless it is an
    ``UnknownException``; the conversion installed here answers first when the error's cause
    chain holds a Hyperspace exception and otherwise defers to the one it replaced.
    """
    current = captured.convert_exception
    if getattr(current, _TRANSLATES_HYPERSPACE, False):
        return

    def convert_exception(e: JavaObject) -> Exception:
        found = hyperspace_error(e)
        return found if found is not None else current(e)

    setattr(convert_exception, _TRANSLATES_HYPERSPACE, True)
    # pyspark declares the function to return its CapturedException; the Hyperspace exceptions
    # are plain Python ones, which pyspark's callers only raise or keep as a cause.
    captured.convert_exception = convert_exception  # type: ignore[assignment]
