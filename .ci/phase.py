#!/usr/bin/env python3
"""Runs one phase of the build or the tests and records where its time went.

    phase.py NAME [--sbt-steps STEP,STEP,...] -- COMMAND...

The command's output is passed through line by line. When it ends, one JSON line goes to
``target/ci-phases.jsonl`` (``HYPERSPACE_CI_PHASES`` overrides the path): the phase's wall seconds,
the CPU seconds of the command and every process it waited for, and its exit code. With
``--sbt-steps``, the "Total time: N s" line sbt prints after each command is recorded under the
step names given, in order, so one sbt start can report its compile, tests and packaging apart.
``.ci/report.py`` prints the table. Only the standard library: it runs before any venv exists.

The record also holds the machine's busy CPU seconds over the phase (``/proc/stat``, every
process on it). A phase's own CPU (``cpu_s``) leaves out the processes whose parent never waits
for them (the JVM a Python interpreter starts for its session is left to init), so on a dedicated
CI machine ``machine_cpu_s`` beside ``wall_s`` times the cores is the figure for how busy a phase
kept it. Where the machine lets this process make a cgroup of the cpuacct controller (cgroup v1,
as root), the command runs in one of its own and ``tree_cpu_s`` is every process's CPU in it,
orphans included, whatever else the machine runs: the figure for a phase's cost. (Making this
process the subreaper of such orphans would count them too, but leaves each one a zombie until
reaped here, which a test checking whether a killed writer's process still runs reads as
running: tests/test_chaos.py did.) A phase started inside another counts in its own group only.
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


def machine_busy_cpu() -> float | None:
    """CPU seconds every core of the machine has spent busy since boot (not idle, not iowait)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def own_cgroup(name: str) -> Path | None:
    """A new cpuacct cgroup for the command, or None where the machine does not let us make one."""
    group = CPUACCT / f"hyperspace-phase-{os.getpid()}-{re.sub(r'[^A-Za-z0-9.]+', '-', name)}"
    try:
        group.mkdir()
        return group
    except OSError:
        return None


def group_cpu(group: Path | None) -> float | None:
    if group is None:
        return None
    try:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        return None


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

    group = own_cgroup(name)

    def join_group() -> None:  # in the child, before the command starts: it and all it starts
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    started, cpu_before, machine_before = time.monotonic(), children_cpu(), machine_busy_cpu()
    step_seconds: list[int] = []
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1, text=True, preexec_fn=join_group
    )
    assert process.stdout is not None
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if steps and (match := SBT_TOTAL.match(line)):
            step_seconds.append(int(match.group(1)))
    code = process.wait()
    machine_after = machine_busy_cpu()
    tree_cpu = group_cpu(group)
    if group is not None:
        try:
            group.rmdir()  # fails while an orphan of the phase still runs; the empty group goes with it
        except OSError:
            pass
    record = {
        "phase": name,
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(children_cpu() - cpu_before, 1),
        "machine_cpu_s": None
        if machine_before is None or machine_after is None
        else round(machine_after - machine_before, 1),
        "tree_cpu_s": None if tree_cpu is None else round(tree_cpu, 1),
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
