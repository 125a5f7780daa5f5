"""Gatehouse's cache folder (`$GATEHOUSE_CACHE_DIR`, `off`: none; else under
`$XDG_CACHE_HOME` or `~/.cache`): small JSON objects sparing a new process another's
work, each file replaced atomically. Best effort: a failure means the work is redone.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_dir() -> Path | None:
    configured = os.environ.get("GATEHOUSE_CACHE_DIR")
    if configured:
        return None if configured == "off" else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gatehouse" if os.path.isabs(base) else None


def read_entries(name: str) -> dict[str, Any]:
    folder = cache_dir()
    try:
        entries = json.loads((folder / name).read_text()) if folder is not None else {}
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def write_entries(name: str, new: dict[str, Any], *, keep: int) -> None:
    """Add `new` to the cache file `name`, keeping the `keep` newest entries."""
    folder = cache_dir()
    if folder is None or not new:
        return
    with contextlib.suppress(OSError, ValueError, TypeError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        entries = {k: v for k, v in read_entries(name).items() if k not in new} | new
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(dict(list(entries.items())[-keep:]), out)
            os.replace(tmp, folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
