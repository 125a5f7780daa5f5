"""A hard cap on a sandboxed command's processes as root, where the kernel ignores
RLIMIT_NPROC (only the 50 ms watchdog would stop a fork bomb): a cgroup-v1 `pids` group
per command, so forks past its `pids.max` fail at once.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

PIDS_HIERARCHY = Path("/sys/fs/cgroup/pids")
# The joining shell (it becomes bwrap), bwrap's PID 1 and the limits wrapper.
OVERHEAD = 3
# A group younger than this is never swept: its command may not have joined it yet.
SWEEP_AFTER_S = 60.0
ORPHAN_AFTER_S = 5.0

# Our groups whose command ended while a process lingered (set ops are atomic).
_finished: set[Path] = set()


def new_cap(max_processes: int) -> Path | None:
    """A fresh pids cgroup allowing `max_processes`, or None (not root, or none made)."""
    if os.geteuid() != 0 or not (PIDS_HIERARCHY / "cgroup.procs").is_file():
        return None
    # Sweep our groups `remove` left, and stale ones (never a fresh one: it runs uncapped).
    _finished.difference_update({g for g in list(_finished) if _rmdir(g)})
    with contextlib.suppress(OSError):
        for stale in PIDS_HIERARCHY.glob("gatehouse-*"):
            if _stale(stale):
                _rmdir(stale)
    # The creator's pid in the name: a sweep never takes a live process's fresh group.
    group = PIDS_HIERARCHY / f"gatehouse-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(max_processes + OVERHEAD))
    except OSError:
        _rmdir(group)
        return None
    return group


def joining(group: Path, command: list[str]) -> list[str]:
    """`command` behind a shell that first joins `group`, so all it runs is counted
    there; a shell that cannot join does not run it (no cap, no run)."""
    join = 'echo $$ > "$0" 2>/dev/null || { echo "gatehouse: cannot join the pids cgroup $0" >&2; exit 126; }; exec "$@"'
    return ["/bin/sh", "-c", join, str(group / "cgroup.procs"), *command]


def remove(group: Path | None) -> None:
    """Remove the cgroup, or leave it for a later `new_cap` to sweep."""
    if group is not None and not _rmdir(group):
        _finished.add(group)


def _stale(group: Path) -> bool:
    """Old enough that its command has long joined it; sooner when its creator is gone."""
    try:
        age = time.time() - group.stat().st_ctime
    except OSError:
        return False
    owner = group.name.split("-")[1] if group.name.count("-") >= 2 else ""
    # Its creator gone: no /proc entry (a zombie or another user's process has one).
    orphaned = owner.isdigit() and int(owner) != os.getpid() and not Path(f"/proc/{owner}").exists()
    return age > SWEEP_AFTER_S or (orphaned and age > ORPHAN_AFTER_S)


def _rmdir(group: Path) -> bool:
    """Whether `group` is gone now (one that holds processes cannot be removed)."""
    try:
        group.rmdir()
    except OSError as exc:
        return isinstance(exc, FileNotFoundError)
    return True
