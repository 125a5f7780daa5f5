"""Sessions a test opened and did not close are closed when its body ends.

A `Session` dropped without `close()` is garbage like any object, but only when the
cycle collector next runs: until then its SQLite connection (the database, its -wal and
-shm files) stays open. A test process runs a few hundred test files, so the fds of
forgotten sessions piled up between collections; closing them after each test keeps a
worker's open files flat and each test's files its own.

Only sessions made during a test's body are tracked (a module fixture's session is used
by later tests and closed by its fixture). Closing twice is avoided: a session the test
closed is marked as closed.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any

_CLOSED = "_test_closed"
_opened: list[Any] = []
_tracking = False


def _install() -> bool:
    """Wrap Session's __init__ and close once its module is imported (no session can
    exist before); False while it is not."""
    module = sys.modules.get("gatehouse.graph.service.session")
    if module is None:
        return False
    cls = module.Session
    if getattr(cls, "_test_tracked", False):
        return True
    init, close = cls.__init__, cls.close

    @functools.wraps(init)
    def tracked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if _tracking:
            _opened.append(self)

    @functools.wraps(close)
    def tracked_close(self: Any) -> None:
        setattr(self, _CLOSED, True)
        close(self)

    cls.__init__ = tracked_init
    cls.close = tracked_close
    cls._test_tracked = True
    return True


def start() -> None:
    global _tracking
    _install()
    _tracking = True


def close_opened() -> None:
    """Close what the test body opened and left open."""
    global _tracking
    _tracking = False
    _install()  # a body that imported graph for the first time opened untracked sessions
    while _opened:
        session = _opened.pop()
        if not getattr(session, _CLOSED, False):
            with contextlib.suppress(Exception):
                session.close()
