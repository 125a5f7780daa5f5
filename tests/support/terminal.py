"""Commands on a real pseudo-terminal (pexpect), closed after the test that spawned them.

`spawn` is `pexpect.spawn` with `use_poll=True`: pexpect's default waits with select(),
which raises "filedescriptor out of range" once the test process has an fd past 1024.
Each child is closed (its pty fd and process) by the autouse fixture in tests/conftest.py,
whether the test passed or not: an unclosed child keeps its fd until garbage collection.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pexpect

_children: list[pexpect.spawn] = []


def spawn(command: str, args: list[str], **kwargs: Any) -> pexpect.spawn:
    child = pexpect.spawn(command, args, use_poll=True, **kwargs)
    _children.append(child)
    return child


def close_ptys() -> None:
    while _children:
        child = _children.pop()
        with contextlib.suppress(Exception):
            child.close(force=True)
