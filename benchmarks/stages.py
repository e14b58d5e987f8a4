"""The stages Spark ran for recent jobs, from its status store (for the per-stage profiles)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchmarks.suites.seek import _items


def finished_stages(spark: Any, since_job: int) -> Iterator[tuple[Any, Any]]:
    """(job, stage data) of the jobs with ids >= ``since_job`` in job then stage order; stages that
    never ran (skipped: their shuffle output was reused) are left out."""
    store = spark.sparkContext._jsc.sc().statusStore()
    for job in sorted(_items(store.jobsList(None)), key=lambda j: j.jobId()):
        if job.jobId() < since_job:
            continue
        for stage_id in sorted(_items(job.stageIds())):
            for s in _items(store.stageData(stage_id, False, None, False, None)):
                if s.submissionTime().isDefined() and s.completionTime().isDefined():
                    yield job, s
