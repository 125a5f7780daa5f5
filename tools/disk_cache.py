"""Gatehouse's cache folder: small JSON files that spare a new process work another
process has already done (the sandbox probe, the tool definitions a model is shown).

The folder is `$GATEHOUSE_CACHE_DIR` (default `$XDG_CACHE_HOME/gatehouse`, else
`~/.cache/gatehouse`); `GATEHOUSE_CACHE_DIR=off` turns every cache off. Each file is
one JSON object, read whole and replaced atomically, so a reader never sees half a
write and two writers only cost one of them its entry. Everything here is best effort:
a file that cannot be read or written only means the work is done again.
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
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    return Path(base) / "gatehouse"


def cache_file(name: str) -> Path | None:
    folder = cache_dir()
    return folder / name if folder is not None else None


def read_entries(name: str) -> dict[str, Any]:
    """The JSON object stored in the cache file `name`; empty when there is none."""
    path = cache_file(name)
    if path is None:
        return {}
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def write_entries(name: str, new: dict[str, Any], *, keep: int) -> None:
    """Add `new` to the cache file `name` (replacing entries of the same keys), keeping
    the `keep` most recently written entries."""
    path = cache_file(name)
    if path is None or not new:
        return
    with contextlib.suppress(OSError, ValueError, TypeError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        entries = {k: v for k, v in read_entries(name).items() if k not in new} | new
        entries = dict(list(entries.items())[-keep:])
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(entries, out)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
