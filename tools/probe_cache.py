"""What a bubblewrap probe found, kept in Gatehouse's cache folder (tools/disk_cache.py)
so a new process does not probe again: `detect_bubblewrap` runs bwrap three times
(~15 ms) in every process that opens a session. The key changes with anything the
trial depended on: the binary (path, inode, size, mtime), the kernel (release, boot
id), the user, and the sysctls that allow unprivileged user namespaces. Only a usable
result is stored, so a machine that gains a working bubblewrap is never told it has
none; a stale one can only make a command fail to start, never run it unsandboxed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tools import disk_cache

VERSION = 1  # of the probe and this file's format: a change re-probes everywhere
MAX_ENTRIES = 8
SYSCTLS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/random/boot_id",
)
FILE = "bwrap-probe.json"


def cache_file() -> Path | None:
    return disk_cache.cache_file(FILE)


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
    # The entry first: with the cache off or nothing stored, no key is worked out.
    entry = disk_cache.read_entries(FILE).get(binary)
    if not isinstance(entry, dict) or not isinstance(entry.get("support"), dict):
        return None
    key = probe_key(binary)
    return entry["support"] if key is not None and entry.get("key") == key else None


def store(binary: str, support: dict[str, Any]) -> None:
    """Remember a usable probe of `binary`. Best effort: a cache that cannot be
    written only means the next process probes again."""
    key = probe_key(binary) if cache_file() is not None else None
    if key is not None:
        disk_cache.write_entries(FILE, {binary: {"key": key, "support": support}}, keep=MAX_ENTRIES)
