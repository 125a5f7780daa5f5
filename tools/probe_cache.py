"""What a bubblewrap probe found, kept on disk so a new process does not probe again.

`detect_bubblewrap` runs bwrap three times (version, help, a trial sandbox): ~15 ms, in
every process that opens a session (`gatehouse approve ID`, each web app worker). A
usable result is stored here under a key that changes when anything the trial depended
on may have: the binary (path, inode, size, mtime), the kernel (release, boot id), the
user, and the sysctls that allow or forbid unprivileged user namespaces. Only a usable
result is stored: an unusable one is probed again each time, so a machine that gains a
working bubblewrap is never told it has none. A stale usable result can only make a
command fail to start (the sandbox refuses to run), never run it unsandboxed.

The file is `$GATEHOUSE_CACHE_DIR/bwrap-probe.json` (default `$XDG_CACHE_HOME/gatehouse`,
else `~/.cache/gatehouse`); `GATEHOUSE_CACHE_DIR=off` turns the cache off.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

VERSION = 1  # of the probe and this file's format: a change re-probes everywhere
MAX_ENTRIES = 8
SYSCTLS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/random/boot_id",
)


def cache_file() -> Path | None:
    configured = os.environ.get("GATEHOUSE_CACHE_DIR")
    if configured == "off":
        return None
    if configured:
        return Path(configured) / "bwrap-probe.json"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    return Path(base) / "gatehouse" / "bwrap-probe.json"


def probe_key(binary: str) -> str | None:
    """What the probe's answer for `binary` depends on; None when it cannot be told."""
    try:
        st = os.stat(binary)
    except OSError:
        return None
    parts: list[Any] = [
        VERSION,
        os.path.realpath(binary),
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        os.uname().release,
        os.getuid() if hasattr(os, "getuid") else None,
    ]
    for name in SYSCTLS:
        try:
            parts.append(Path(name).read_text().strip())
        except OSError:
            parts.append(None)
    return json.dumps(parts)


def load(binary: str) -> dict[str, Any] | None:
    """The stored fields of a usable probe of `binary`, if still valid here."""
    path, key = cache_file(), probe_key(binary)
    if path is None or key is None:
        return None
    try:
        entry = json.loads(path.read_text()).get(binary)
    except (OSError, ValueError, AttributeError):
        return None
    if (
        not isinstance(entry, dict)
        or entry.get("key") != key
        or not isinstance(entry.get("support"), dict)
    ):
        return None
    return entry["support"]


def store(binary: str, support: dict[str, Any]) -> None:
    """Remember a usable probe of `binary`. Best effort: a cache that cannot be
    written only means the next process probes again."""
    path, key = cache_file(), probe_key(binary)
    if path is None or key is None:
        return
    with contextlib.suppress(OSError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            entries = json.loads(path.read_text())
            if not isinstance(entries, dict):
                entries = {}
        except (OSError, ValueError):
            entries = {}
        entries.pop(binary, None)
        entries[binary] = {"key": key, "support": support}
        entries = dict(list(entries.items())[-MAX_ENTRIES:])
        fd, tmp = tempfile.mkstemp(prefix=".bwrap-probe.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(entries, out)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
