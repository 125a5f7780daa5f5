"""The journaled calls this process is executing right now: a "started, not finished"
journal row of one of them is no crash to ask about (asking would be wrong twice: the
stray resume value would answer it), so it is refused with `CallAlreadyStarted`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from langchain_core.messages import ToolCall

from graph.protocol.decisions import canonical_args

_lock = threading.Lock()
# How many runs of this process hold each call (a claim that lost still counts while it unwinds).
_running: Counter[tuple[str, str | None, str, str]] = Counter()


def _key(thread_id: str, call: ToolCall) -> tuple[str, str | None, str, str]:
    return (thread_id, call["id"], call["name"], canonical_args(call["args"]))


@contextmanager
def executing(thread_id: str, call: ToolCall) -> Iterator[None]:
    key = _key(thread_id, call)
    with _lock:
        _running[key] += 1
    try:
        yield
    finally:
        with _lock:
            _running[key] -= 1
            if _running[key] <= 0:
                del _running[key]


def is_executing(thread_id: str, call: ToolCall) -> bool:
    with _lock:
        return _key(thread_id, call) in _running
