"""Progress of index builds, refreshes and optimizes, as Spark reports it.

An index operation is one blocking JVM call that may run Spark jobs for minutes. While it runs,
the Spark jobs it submits carry a job tag of its own, and Spark names their stages after the
operation and its step ("Hyperspace: create index 'x' — writing index data", set on the JVM side);
the caller's thread polls Spark's status tracker for those jobs and hands a :class:`Progress` to
the reporter.

Reporters: a callable taking a :class:`Progress` (your own), ``"bar"`` (a tqdm bar when tqdm is
installed, else one self-updating line on stderr), ``None`` (off) or ``"auto"`` (the default: the
bar in a terminal or a notebook, off when stderr is neither or the ``CI`` variable is set).
"""

from __future__ import annotations

import os
import sys
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar

from pyspark import InheritableThread
from pyspark.sql import SparkSession

from hyperspace import exceptions
from hyperspace._jvm import StageStatus, has_jvm, pins_threads, stages_of_jobs_with_tag

__all__ = ["Progress", "ProgressReporter", "ProgressSetting"]

T = TypeVar("T")

# How often the status tracker is read: often enough for a bar to move, rarely enough to cost nothing.
_POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Progress:
    """Where one index operation is: its Spark tasks so far, and the step under way."""

    #: ``"create"``, ``"refresh"`` or ``"optimize"``.
    operation: str
    index_name: str
    #: The step the newest running stage belongs to (e.g. ``"writing index data"``), or ``None``
    #: between steps.
    step: str | None
    completed_tasks: int
    #: Tasks of the stages submitted so far (grows as the operation submits more jobs).
    total_tasks: int
    #: True once, in the last report, after the operation returned or failed.
    finished: bool = False

    @property
    def fraction(self) -> float:
        """Completed tasks over the tasks known so far (0 before the first stage starts)."""
        return self.completed_tasks / self.total_tasks if self.total_tasks else 0.0


ProgressReporter: TypeAlias = Callable[[Progress], None]
ProgressSetting: TypeAlias = "Literal['auto', 'bar'] | ProgressReporter | None"


def _interactive() -> bool:
    if os.environ.get("CI"):
        return False
    if "ipykernel" in sys.modules:  # a Jupyter/Databricks/Synapse notebook kernel
        return True
    return sys.stderr is not None and sys.stderr.isatty()


def reporter_for(setting: ProgressSetting) -> Callable[[str, str], ProgressReporter] | None:
    """A factory of reporters (one per operation, given its operation and index name) for
    ``setting``, or ``None`` when progress is off."""
    if setting is None:
        return None
    if callable(setting):
        user = setting
        return lambda _operation, _name: user
    if setting == "auto":
        return _bar if _interactive() else None
    if setting == "bar":
        return _bar
    raise exceptions.HyperspaceException(
        f"progress must be 'auto', 'bar', None or a callable taking a Progress; got {setting!r}."
    )


def _bar(operation: str, index_name: str) -> ProgressReporter:
    label = f"{operation} index '{index_name}'"
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return _TextBar(label)
    bar = tqdm(total=0, desc=label, unit="task", leave=True)

    def report(p: Progress) -> None:
        bar.total = max(p.total_tasks, 1) if p.finished else p.total_tasks
        bar.n = bar.total if p.finished and p.total_tasks == 0 else p.completed_tasks
        bar.set_postfix_str(p.step or "", refresh=False)
        bar.refresh()
        if p.finished:
            bar.close()

    return report


class _TextBar:
    """One line on stderr, rewritten in place: the bar when tqdm is not installed."""

    def __init__(self, label: str) -> None:
        self._label = label

    def __call__(self, p: Progress) -> None:
        width = 24
        filled = round(width * (1.0 if p.finished else p.fraction))
        step = f" {p.step}" if p.step and not p.finished else ""
        bar = "#" * filled + "." * (width - filled)
        line = f"\r{self._label} [{bar}] {p.completed_tasks}/{p.total_tasks} tasks{step}"
        sys.stderr.write(line.ljust(100) + ("\n" if p.finished else ""))
        sys.stderr.flush()


def _step_of(stage_name: str, operation: str, index_name: str) -> str | None:
    # Stage names are the JVM's job labels (io.hyperspace.actions.JobLabels): the operation's
    # label, then " — <step>" inside a step.
    prefix = f"Hyperspace: {operation} index '{index_name}' — "
    return stage_name[len(prefix) :] if stage_name.startswith(prefix) else None


def _snapshot(spark: SparkSession, tag: str, operation: str, index_name: str, finished: bool) -> Progress:
    completed = total = 0
    newest: StageStatus | None = None
    for stage in stages_of_jobs_with_tag(spark, tag):
        # A stage never submitted (skipped: its shuffle output was reused) runs no task.
        if stage.submission_time <= 0:
            continue
        total += stage.num_tasks
        completed += stage.num_completed_tasks
        if stage.num_active_tasks > 0 and (newest is None or stage.submission_time >= newest.submission_time):
            newest = stage
    step = _step_of(newest.name, operation, index_name) if newest else None
    return Progress(operation, index_name, step, completed, total, finished)


class _Reporting:
    """Hands snapshots to a reporter; a reporter that fails is dropped with a warning, never
    failing or abandoning the operation it reports on."""

    def __init__(self, report: ProgressReporter) -> None:
        self._report: ProgressReporter | None = report

    def __call__(self, progress: Callable[[], Progress]) -> None:
        if self._report is None:
            return
        try:
            self._report(progress())
        except Exception as error:
            warnings.warn(f"Hyperspace progress reporting stopped: {type(error).__name__}: {error}", stacklevel=3)
            self._report = None


def run_with_progress(
    spark: SparkSession, setting: ProgressSetting, operation: str, index_name: str, call: Callable[[], T]
) -> T:
    """``call()`` — a JVM index operation — with its progress reported as ``setting`` says.

    The call runs in a thread of its own (inheriting the caller's Spark job group, description
    and tags) that tags its Spark jobs; this thread reports until it returns. Ctrl-C cancels the
    operation's Spark jobs — the operation then rolls back as after any failure — and re-raises.
    """
    factory = reporter_for(setting)
    # A Spark Connect session has no status tracker here (its client shows its own progress).
    # Without pinned threads, a Python thread's calls may reach any JVM thread, so the jobs
    # could not be told apart: run without progress.
    if factory is None or not has_jvm(spark) or not pins_threads(spark):
        return call()
    report = _Reporting(factory(operation, index_name))
    sc = spark.sparkContext
    tag = f"hyperspace-{operation}-{uuid.uuid4().hex}"
    outcome: dict[str, object] = {}

    def work() -> None:
        sc.addJobTag(tag)
        try:
            outcome["result"] = call()
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error
        finally:
            sc.removeJobTag(tag)

    worker = InheritableThread(target=work, name=f"hyperspace {operation} {index_name}", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_POLL_SECONDS)
            report(lambda: _snapshot(spark, tag, operation, index_name, finished=False))
    except KeyboardInterrupt:
        sc.cancelJobsWithTag(tag)
        worker.join()
        raise
    finally:
        if not worker.is_alive():
            report(lambda: _snapshot(spark, tag, operation, index_name, finished=True))
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
