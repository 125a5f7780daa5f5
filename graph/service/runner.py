"""Runs that live outside a UI script run.

Streamlit re-executes its script on every click, so a run iterated inside the script
would die with it. The `Runner` belongs to the server process: each run is started
in the background (`Run.start`), its events buffered, and any page (after a click, a
refresh, a new tab) attaches to the live run and reads the buffer from any position.
One active run per thread in this process (the run lease keeps it one across processes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Unpack

from graph.protocol.answers import OutcomeAnswer, ReviewAnswer
from graph.protocol.errors import RunInProgress
from graph.protocol.operations import (
    Fork,
    Operation,
    Retry,
    RunOptions,
    RunOptionsKwargs,
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

    # Shorthands of `submit`, as `Session.send` / `resume` / `fork` / `retry`.
    def send(
        self,
        thread_id: str | None,
        text: str | list[Any],
        *,
        owner: str | None = None,
        **options: Unpack[RunOptionsKwargs],
    ) -> Run:
        return self.submit(SendMessage(thread_id, text, owner), RunOptions(**options))

    def resume(
        self,
        thread_id: str,
        answer: ReviewAnswer | OutcomeAnswer | Mapping[str, Any],
        *,
        interrupt_id: str | None = None,
        reject_missing: bool | str = False,
        **options: Unpack[RunOptionsKwargs],
    ) -> Run:
        # `Session.resume`: a typed answer goes on to `Session.submit`, the wire form
        # (a raw client's dict) to the same handler.
        return self._start(
            thread_id,
            lambda: self.session.resume(
                thread_id,
                answer,
                interrupt_id=interrupt_id,
                reject_missing=reject_missing,
                **options,
            ),
        )

    def fork(
        self,
        thread_id: str,
        message_index: int,
        text: str,
        *,
        force: bool = False,
        **options: Unpack[RunOptionsKwargs],
    ) -> Run:
        return self.submit(Fork(thread_id, message_index, text, force), RunOptions(**options))

    def retry(self, thread_id: str, **options: Unpack[RunOptionsKwargs]) -> Run:
        return self.submit(Retry(thread_id), RunOptions(**options))

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
