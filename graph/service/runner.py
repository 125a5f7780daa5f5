"""Runs that live outside a UI script run.

Streamlit re-executes its script on every click, so a run iterated inside the script
would die with it. The `Runner` belongs to the server process: each run is started
in the background (`Run.start`), its events buffered, and any page (after a click, a
refresh, a new tab) attaches to the live run and reads the buffer from any position.
One active run per thread in this process (the run lease keeps it one across processes).
Its one way in is `submit`, as `Session.submit` (graph/protocol/operations.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from graph.protocol.errors import RunInProgress
from graph.protocol.operations import (
    Fork,
    Operation,
    RunOptions,
    SendMessage,
)
from graph.service.session import Run, Session

__all__ = ["Runner"]


class Runner:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}

    def submit(self, operation: Operation, options: RunOptions | None = None) -> Run:
        """`Session.submit`, started in the background (one active run per thread)."""
        if isinstance(operation, SendMessage) and operation.thread_id is None:
            operation = SendMessage(
                self.session.new_thread_id(), operation.message, operation.owner
            )
        thread_id = operation.thread_id
        assert thread_id is not None
        # A fork rewinds before its run starts: the run begins at the edited message.
        base = operation.message_index if isinstance(operation, Fork) else None
        return self._start(thread_id, lambda: self.session.submit(operation, options), base=base)

    def active(self, thread_id: str) -> Run | None:
        run = self._runs.get(thread_id)
        return run if run is not None and not run.done else None

    def latest(self, thread_id: str) -> Run | None:
        """The live run, or the last one that ran in this process."""
        return self._runs.get(thread_id)

    def cancel(self, thread_id: str) -> bool:
        run = self.active(thread_id)
        if run is None:
            return False
        run.cancel()
        return True

    def _start(self, thread_id: str, make: Callable[[], Run], base: int | None = None) -> Run:
        with self._lock:
            if self.active(thread_id) is not None:
                raise RunInProgress(
                    f"a run is already active on thread {thread_id}; wait for it or stop it"
                )
            count = len(self.session.messages(thread_id)) if base is None else base
            # Validation errors (a bad decision, a pending approval) raise here, in
            # the caller, before any background work starts.
            run = make()
            run.base_messages = count
            self._runs[thread_id] = run
        return run.start()
