"""Where PYTHONDONTWRITEBYTECODE is set (container images), every command compiled again,
3–12 s on a small machine: one background `compileall` (it writes whatever the flag says)
when bytecode is missing, one at a time (a lock file). GATEHOUSE_NO_COMPILE=1: none."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

# hashlib, sysconfig, subprocess and tempfile load only on the way to a compile: a
# read-only command answers in a tenth of a second and does not pay for them.
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graph", "tools", "ui")
# A module every command loads from the environment: compiled there, the rest was too.
SITE_PROBE = Path("langgraph") / "types.py"
STALE_LOCK_S = 15 * 60


def compiled(source: Path) -> bool:
    return Path(importlib.util.cache_from_source(str(source))).exists()


def missing(root: Path = ROOT, site: Path | None = None) -> list[Path]:
    """The folders whose bytecode is missing: the project's packages, and site-packages
    (judged by one module every command loads)."""
    out = [root / p for p in PACKAGES if not compiled(root / p / "__init__.py")]
    if site is None:
        import sysconfig

        site = Path(sysconfig.get_paths()["purelib"])
    if (site / SITE_PROBE).exists() and not compiled(site / SITE_PROBE):
        out.append(site)
    return out


def lock_path(root: Path = ROOT) -> Path:
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"gatehouse-compile-{tag}.lock"


def _take(lock: Path) -> bool:
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        import time

        with contextlib.suppress(FileNotFoundError):
            if time.time() - lock.stat().st_mtime < STALE_LOCK_S:
                return False  # a compile is under way
            lock.unlink()  # one that died long ago
        return _take(lock)


# The child: compile each folder, then let the next command know it may look again.
_COMPILE = """import compileall, os, sys
os.nice(10)  # behind whatever the person runs next
try:
    for folder in sys.argv[2:]:
        compileall.compile_dir(folder, quiet=1, workers=0)
finally:
    os.unlink(sys.argv[1])
"""


def warm(root: Path = ROOT, site: Path | None = None) -> subprocess.Popen[bytes] | None:
    """The child compiling what is missing, when the flag is set; else None (the usual
    case, a few `stat`s)."""
    if not sys.flags.dont_write_bytecode or os.environ.get("GATEHOUSE_NO_COMPILE"):
        return None
    if not (folders := missing(root, site)) or not _take(lock := lock_path(root)):
        return None
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-c", _COMPILE, str(lock), *map(str, folders)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the command; its Ctrl-C does not reach it
    )
