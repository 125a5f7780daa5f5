"""Crash points, where tests kill the process like a power cut (graph/store/journal.py
names each gap): `GATEHOUSE_CRASH_AT=after_tool`; in-process tests swap `crash_point`.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "GATEHOUSE_CRASH_AT"


def crash_point(name: str) -> None:
    """Die here when `GATEHOUSE_CRASH_AT` names this point."""
    wanted = os.environ.get(CRASH_ENV, "")
    if wanted and name in wanted.split(","):
        os.kill(os.getpid(), signal.SIGKILL)
