#!/usr/bin/env python3
"""Runs one phase of the build or the tests and records where its time went.

    phase.py NAME [--sbt-steps STEP,STEP,...] -- COMMAND...

The command's output is passed through line by line. When it ends, one JSON line goes to
``target/ci-phases.jsonl`` (``HYPERSPACE_CI_PHASES`` overrides the path): the phase's wall seconds,
the CPU seconds of the command and every process it waited for, and its exit code. With
``--sbt-steps``, the "Total time: N s" line sbt prints after each command is recorded under the
step names given, in order, so one sbt start can report its compile, tests and packaging apart.
``.ci/report.py`` prints the table. Only the standard library: it runs before any venv exists.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

SBT_TOTAL = re.compile(r"^\[(?:success|error)\] Total time: (\d+) s")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == 0:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    name, steps = options[0], []
    if len(options) == 3 and options[1] == "--sbt-steps":
        steps = [s for s in options[2].split(",") if s]
    elif len(options) != 1:
        print(__doc__, file=sys.stderr)
        return 2

    started, cpu_before = time.monotonic(), children_cpu()
    step_seconds: list[int] = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if steps and (match := SBT_TOTAL.match(line)):
            step_seconds.append(int(match.group(1)))
    code = process.wait()
    record = {
        "phase": name,
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(children_cpu() - cpu_before, 1),
        "exit": code,
        "steps": dict(zip(steps, step_seconds, strict=False)),  # a failed command prints fewer
        "at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
    }
    out = Path(os.environ.get("HYPERSPACE_CI_PHASES", "target/ci-phases.jsonl"))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(record) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
