"""A hard cap on a sandboxed command's processes when Gatehouse runs as root.

The kernel never applies RLIMIT_NPROC to uid 0, so as root the sandbox's `ulimit -u`
does nothing and only the watchdog (tools/sandbox.py, every 50 ms) stops a fork
bomb — by then it can have taken every PID of the machine (pid_max is 32,768 here).
Where a writable cgroup-v1 `pids` hierarchy exists (containers started as root
usually have one), each command gets a cgroup of its own with `pids.max` set: forks
past it fail at once with EAGAIN, and the watchdog then stops the command. As an
ordinary user, RLIMIT_NPROC already holds and nothing here is used.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

PIDS_HIERARCHY = Path("/sys/fs/cgroup/pids")
# Beyond the command's own share: the shell that joins the cgroup (it becomes bwrap),
# bwrap's PID 1 in the sandbox, and the limits wrapper.
OVERHEAD = 3


def new_cap(max_processes: int) -> Path | None:
    """A fresh pids cgroup allowing `max_processes` (plus the sandbox's own), or None
    where none is needed (not root) or none can be made."""
    if os.geteuid() != 0 or not (PIDS_HIERARCHY / "cgroup.procs").is_file():
        return None
    _remove_finished()
    group = PIDS_HIERARCHY / f"gatehouse-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(max_processes + OVERHEAD))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return group


def joining(group: Path, command: list[str]) -> list[str]:
    """`command`, started by a shell that first moves itself into `group`: everything
    it then runs (bwrap, the sandbox, the command) is counted there from its start."""
    return ["/bin/sh", "-c", 'echo $$ > "$0" 2>/dev/null; exec "$@"', str(group / "cgroup.procs"), *command]


def _remove_finished() -> None:
    """Groups whose command ended after its `close` (killed, not yet reaped): removing a
    group that still has processes fails, so only empty ones go."""
    with contextlib.suppress(OSError):
        for group in PIDS_HIERARCHY.glob("gatehouse-*"):
            remove(group)


def remove(group: Path | None) -> None:
    """Remove the cgroup once its processes are gone (the kernel refuses before)."""
    if group is not None:
        with contextlib.suppress(OSError):
            group.rmdir()
