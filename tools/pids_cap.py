"""A hard cap on a sandboxed command's processes when Gatehouse runs as root.

The kernel never applies RLIMIT_NPROC to uid 0, so as root the sandbox's `ulimit -u`
does nothing and only the watchdog (tools/sandbox.py, every 50 ms) stops a fork bomb,
by which time it can hold every PID of the machine. Where a writable cgroup-v1 `pids`
hierarchy exists (containers started as root usually have one), each command gets a
cgroup with `pids.max` set: forks past it fail at once with EAGAIN. As an ordinary
user RLIMIT_NPROC holds and nothing here is used.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

PIDS_HIERARCHY = Path("/sys/fs/cgroup/pids")
# Beyond the command's own share: the shell that joins the cgroup (it becomes bwrap),
# bwrap's PID 1 in the sandbox, and the limits wrapper.
OVERHEAD = 3
# A group younger than this is never swept: its command may not have joined it yet.
SWEEP_AFTER_S = 60.0
ORPHAN_AFTER_S = 5.0

# Our own groups whose command ended while a process still lingered in them (set
# operations are atomic: no lock).
_finished: set[Path] = set()


def new_cap(max_processes: int) -> Path | None:
    """A fresh pids cgroup allowing `max_processes` (plus the sandbox's own), or None
    where none is needed (not root) or none can be made."""
    if os.geteuid() != 0 or not (PIDS_HIERARCHY / "cgroup.procs").is_file():
        return None
    _remove_finished()
    # The creator's pid in the name: a sweep never takes a live process's fresh group.
    group = PIDS_HIERARCHY / f"gatehouse-{os.getpid()}-{uuid.uuid4().hex[:12]}"
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
    it then runs (bwrap, the sandbox, the command) is counted there from its start.
    A shell that cannot join does not run the command (fail closed: no cap, no run)."""
    join = 'echo $$ > "$0" 2>/dev/null || { echo "gatehouse: cannot join the pids cgroup $0" >&2; exit 126; }; exec "$@"'
    return ["/bin/sh", "-c", join, str(group / "cgroup.procs"), *command]


def remove(group: Path | None) -> None:
    """Remove the cgroup once its processes are gone (the kernel refuses before; then
    a later `new_cap` sweeps it)."""
    if group is not None and not _rmdir(group):
        _finished.add(group)


def _remove_finished() -> None:
    """Sweep the empty groups whose command is over: our own that `remove` could not
    take yet, and any left by a Gatehouse that died or long ago. Never a fresh group
    of a live process: removing one before its command joined it is how a concurrent
    command ran without its cap."""
    for group in list(_finished):
        if _rmdir(group):
            _finished.discard(group)
    with contextlib.suppress(OSError):
        for group in PIDS_HIERARCHY.glob("gatehouse-*"):
            if _stale(group):
                _rmdir(group)


def _stale(group: Path) -> bool:
    """Old enough that its command has long joined it (or never will). A group whose
    creator is gone goes sooner — still never in the moment between mkdir and join,
    whatever pid namespace the creator lived in."""
    try:
        age = time.time() - group.stat().st_ctime
    except OSError:
        return False
    owner = group.name.split("-")[1] if group.name.count("-") >= 2 else ""
    orphaned = owner.isdigit() and int(owner) != os.getpid() and _gone(int(owner))
    return age > SWEEP_AFTER_S or (orphaned and age > ORPHAN_AFTER_S)


def _gone(pid: int) -> bool:
    """The process has ended (one of another user answers EPERM: it is alive)."""
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return isinstance(exc, ProcessLookupError)
    return False


def _rmdir(group: Path) -> bool:
    """Whether `group` is gone now (removing a group that holds processes fails)."""
    try:
        group.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
